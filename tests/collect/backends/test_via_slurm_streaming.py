"""At fleet scale the controller holds per host only what it judged: no raw output is kept unless a flag
uses it, a --via slurm bundle is handed over once, and a fleet check's findings stay bounded in size
however many values 16,384 hosts show (sizes asserted, never times)."""

from __future__ import annotations

import argparse
import subprocess
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace

import pytest

from fabcheck.checks.host import fleet
from fabcheck.checks.model import Status
from fabcheck.collect.backends import slurm
from fabcheck.collect.host import HostCollection
from fabcheck.collect.ssh import TimeLimits
from fabcheck.gate import host_stage, snapshot, sources
from fabcheck.gate.plan import plan_gate
from fabcheck.gate.reader import Reader
from fabcheck.intent.loader import load_inventory


def namespace(**given: object) -> argparse.Namespace:
    defaults = dict(
        from_snapshot=None, backend="native", hosts=None, via="ssh", save_snapshot=None, extra_checks=None,
        partition=None, account=None, reservation=None, deadline=None,
    )  # fmt: skip
    return argparse.Namespace(**{**defaults, **given})


# The plan of a run with no node.
NO_NODE = SimpleNamespace(hosts=(), switches=(), host_priorities=dict)


def test_raw_outputs_are_kept_only_when_a_flag_uses_them(tmp_path: object) -> None:
    inventory = SimpleNamespace(source="inv")
    plain = sources.choose_source(namespace(), inventory, NO_NODE, TimeLimits())  # type: ignore[arg-type]
    assert plain.tape is None and plain.collector is None  # native, nothing held after judging
    saving = sources.choose_source(namespace(save_snapshot=tmp_path), inventory, NO_NODE, TimeLimits())  # type: ignore[arg-type]
    assert isinstance(saving.tape, snapshot.Recording) and not saving.tape.replaying


def test_a_slurm_bundle_is_handed_over_once() -> None:
    host = SimpleNamespace(name="gpu01", variables={})
    step = slurm.SlurmStep([host], {"gpu01": 3}, TimeLimits(), environ={})  # type: ignore[list-item]
    step._started = True  # the step "ran": deliver as its reader thread does
    step._deliver(HostCollection("gpu01", {}, True))
    assert step(SimpleNamespace(name="gpu01"), 3, TimeLimits()).complete  # type: ignore[arg-type]
    assert step._bundles == {}


def test_a_fleet_spread_stays_bounded_at_16384_hosts() -> None:
    hosts = [f"gpu{i:05d}" for i in range(16384)]
    # 16,000 hosts agree; 384 show 384 different versions (the worst case for a spread).
    readings: dict[str, str] = {h: "28.39.1002" for h in hosts[:16000]}
    readings |= {h: f"28.40.{i}" for i, h in enumerate(hosts[16000:])}
    findings = fleet._compare(
        fleet.VERSIONS, "firmware", readings, "firmware version", lambda _h, _c: "hint", fleet.FleetInputs()
    )
    assert len(findings) == 16384
    assert {f.status for h, f in findings.items() if h in hosts[:16000]} == {Status.PASS}
    odd = findings[hosts[-1]]
    assert odd.status is Status.FAIL and odd.actual.startswith("28.40.383 (28.39.1002 on 16000 host(s); ")
    assert odd.actual.endswith("; 379 other value(s) on 379 host(s))"), odd.actual[-200:]
    assert max(len(f.actual) for f in findings.values()) < 400


def test_the_most_common_odd_values_are_named_first() -> None:
    readings = {"a1": "x", "a2": "x", "a3": "x", "b1": "y", "c1": "z", "c2": "z"}
    findings = fleet._compare(fleet.VERSIONS, "s", readings, "v", lambda _h, _c: "", fleet.FleetInputs())
    assert findings["b1"].actual == "y (x on 3 host(s); z on c1, c2; y on b1)"


def test_the_fast_key_exchange_is_offered_after_the_inventorys_own() -> None:
    from fabcheck.collect.ssh import FAST_KEX, SshTarget, fast_kex_known

    fast_kex_known.cache_clear()  # another test of this worker may have asked a fake `ssh` on its PATH
    assert fast_kex_known()  # Debian 12's OpenSSH 9.2 takes a `^` list
    mine = SshTarget.from_host_vars(
        "gpu01", {"ansible_ssh_common_args": "-o KexAlgorithms=ecdh-sha2-nistp256"}
    )
    kex = [w for w in mine.argv("true", 5) if w.startswith("KexAlgorithms=")]
    assert kex == ["KexAlgorithms=ecdh-sha2-nistp256", f"KexAlgorithms={FAST_KEX}"]  # ssh keeps the first
    done = subprocess.run(
        ["ssh", "-G", "-o", f"KexAlgorithms={FAST_KEX}", "x"], capture_output=True, text=True
    )
    offered = next(line for line in done.stdout.splitlines() if line.startswith("kexalgorithms "))
    assert offered.split()[1].split(",")[0] == "curve25519-sha256" and "sntrup761x25519-sha512" in offered


def test_the_html_of_1024_hosts_leads_with_the_aggregate() -> None:
    from fabcheck.checks.model import failed, passed
    from fabcheck.gate.fabric import GateResult, gate_report
    from fabcheck.gate.host_stage import HostResult
    from fabcheck.gate.stages import StageOutcome
    from fabcheck.report import html

    def host(i: int) -> HostResult:
        name = f"gpu{i:04d}"
        checks = [passed(f"host.check{k}", "mlx5_0", "x", "x") for k in range(40)]
        if i % 4 == 0:  # a quarter of the fleet fails one check, every host shows its MTU wrong
            checks.append(failed("host.pfc", "mlx5_0", "3", "none", "set PFC"))
        checks.append(failed("host.mtu", "ens1np0", "9000", "1500", "set the MTU"))
        return HostResult(name, tuple(checks))

    run = gate_report(GateResult((StageOutcome("host", tuple(host(i) for i in range(1024))),)))
    page = html.render(run)  # its speed is bench/scale.py's to measure
    order = [page.index(mark) for mark in ('id="aggregate"', "<h2>Fabric</h2>", 'id="failures"')]
    assert order == sorted(order)
    aggregate = page[order[0] : order[1]]
    assert aggregate.index(">host.mtu<") < aggregate.index(">host.pfc<")  # most nodes first
    assert '<td class="n v-fail">1024</td>' in aggregate and '<td class="n v-fail">256</td>' in aggregate
    assert "gpu0000, gpu0004, gpu0008, gpu0012, gpu0016 and 251 more" in aggregate
    assert "40 more check(s) pass on every node they judged" in aggregate
    failures = page[order[2] : page.index('id="errors"')]
    assert '<details class="failures-table">' in failures and failures.count("<tr>") == 1280 + 1


def test_the_connection_budget_follows_the_controllers_cores_within_bounds() -> None:
    from fabcheck.gate import fabric

    per_core = fabric.ROUND_TRIP_S / fabric.CONTROLLER_CPU_PER_HOST_S
    assert fabric.knee_concurrency(2) == round(2 * per_core)
    assert fabric.knee_concurrency(1) >= fabric.CONCURRENCY_RANGE[0]
    assert fabric.knee_concurrency(1000) == fabric.CONCURRENCY_RANGE[1]
    assert fabric.knee_concurrency() == fabric.DEFAULT_CONCURRENCY


def test_the_batch_backends_read_each_host_at_the_priority_the_plan_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--via ansible and --via slurm are started by the gate's reader with every host at the priority
    the gate's plan holds for it (its desired state), never the raw intent's; not before the gate runs."""
    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    (tmp_path / "group_vars" / "all" / "fabric.yml").write_text("fabric_intent: {lossless: {priority: 4}}\n")
    (tmp_path / "hosts.yml").write_text("all:\n  children:\n    gpu_hosts:\n      hosts:\n        gpu01:\n")
    inventory = load_inventory(tmp_path)
    plan = plan_gate(inventory, stages=["host"])
    planned = {"gpu01": plan.desired.hosts["gpu01"].template.ecn_priority}
    assert plan.host_priorities() == planned == {"gpu01": 4}
    played: list[dict[str, int]] = []

    def play(_source: str, priorities: Mapping[str, int], _limits: TimeLimits) -> dict[str, HostCollection]:
        played.append(dict(priorities))
        return {
            name: HostCollection(name, {}, False, "--via ansible: not run", p)
            for name, p in priorities.items()
        }

    monkeypatch.setattr(sources.via_ansible, "collect_via_ansible", play)
    play_source = sources.choose_source(namespace(via="ansible"), inventory, plan, TimeLimits())
    assert played == []  # the play is the host stage's read: it runs in the gate, not before
    [read] = host_stage.read_hosts(Reader(), plan.hosts, play_source.collector, plan.desired.hosts)
    assert played == [planned] and "--via ansible: not run" in read.findings[0].actual

    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    step = sources.choose_source(namespace(via="slurm"), inventory, plan, TimeLimits()).collector
    assert isinstance(step, slurm.SlurmStep)
    step._run = lambda: step._error_all(list(step.names), "--via slurm: not run")  # type: ignore[method-assign]
    [read] = host_stage.read_hosts(Reader(), plan.hosts, step, plan.desired.hosts)
    assert step.priorities == planned and "--via slurm: not run" in read.findings[0].actual
