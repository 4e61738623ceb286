"""fabcheck.gate.host_stage: which hosts are judged, one collection per host with its target, priority and
limits, the verdict and exit code of a run, and one bad host (unreachable, hostile output, a bad
connection variable, a judge that raises, the deadline) never breaking or fooling the others."""

from __future__ import annotations

from collections.abc import Mapping

import hostgate
import pytest

from fabcheck.checks import host as checks
from fabcheck.checks.model import Finding, Status
from fabcheck.cli import validate as validate_cli
from fabcheck.collect.host import (
    HostCollection,
    section_command,
)
from fabcheck.collect.script import Section
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.desired.nic import DesiredHost
from fabcheck.gate import host_stage as validate
from fabcheck.gate.fabric import GateResult, gate_report
from fabcheck.gate.plan import plan_gate
from fabcheck.gate.stages import StageOutcome
from fabcheck.intent.loader import HostEntry, Inventory
from fabcheck.intent.model import FabricIntent
from fabcheck.report.model import exit_code
from tests.checks.host.hostdata import (
    INTENT,
    LSMOD,
    TOPO,
    healthy_sections,
    inventory_entry,
    ok,
    only,
    qos,
    run_checks,
)
from tests.parsers.renderers import render_mlnx_qos


def test_unreachable_host_is_one_error() -> None:
    collection = HostCollection(
        "gpu09", {}, complete=False, error="ssh to 10.0.0.9 failed: Connection refused"
    )
    result = hostgate.judge(collection, INTENT)
    assert result.verdict is Status.ERROR
    assert [(f.check, f.status) for f in result.findings] == [(validate.COLLECTION_CHECK, Status.ERROR)]
    assert "Connection refused" in result.findings[0].actual


def test_partial_collection_keeps_an_error_even_if_every_section_passed() -> None:
    collection = HostCollection("gpu01", healthy_sections(), complete=False, error="no answer within 5 s")
    result = hostgate.judge(collection, INTENT)
    assert result.verdict is Status.ERROR
    assert result.findings[0].check == validate.COLLECTION_CHECK


def _exit_code(results: list[validate.HostResult]) -> int:
    """The exit code `fabcheck validate` gives these host results."""
    return exit_code(gate_report(GateResult((StageOutcome("host", tuple(results)),))))


def test_exit_codes_follow_the_worst_host() -> None:
    good = hostgate.judge(HostCollection("a", healthy_sections(), True), INTENT)
    bad = hostgate.judge(
        HostCollection("b", {**healthy_sections(), "mtu:ens1np0": ok("1500\n")}, True), INTENT
    )
    down = hostgate.judge(HostCollection("c", {}, False, error="timeout"), INTENT)
    assert _exit_code([good]) == 0
    assert _exit_code([good, bad, down]) == 1
    assert _exit_code([good, down]) == 3
    assert _exit_code([down]) == 3


def test_plan_judges_gpu_hosts_and_lists_the_rest() -> None:
    inventory = Inventory(
        "inv",
        INTENT,
        (
            inventory_entry("gpu01", "gpu_hosts"),
            inventory_entry("sm01", "subnet_managers"),
            inventory_entry("leaf1", "switches"),
        ),
    )
    chosen = plan_gate(inventory, None, ("host",))
    assert [h.name for h in chosen.hosts] == ["gpu01"]
    assert [h.name for h in chosen.not_checked] == ["sm01", "leaf1"]


def test_validate_collects_each_host_with_its_target_and_lossless_priority() -> None:
    seen: list[tuple[str, str, int, TimeLimits]] = []

    def collector(target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        seen.append((target.name, target.address, priority, limits))
        if target.name == "gpu02":
            return HostCollection(target.name, {}, False, "ssh to 10.0.0.5 failed: Connection refused")
        return HostCollection(target.name, healthy_sections(), True, priority=priority)

    limits = TimeLimits(connect_s=3, command_s=7)
    results = hostgate.validate(
        [inventory_entry("gpu01", "gpu_hosts"), inventory_entry("gpu02", "gpu_hosts")], limits, collector
    )
    assert sorted(seen, key=lambda s: s[0]) == [
        ("gpu01", "10.0.0.5", 3, limits),
        ("gpu02", "10.0.0.5", 3, limits),
    ]
    assert [(r.host, r.verdict) for r in results] == [("gpu01", Status.PASS), ("gpu02", Status.ERROR)]
    report = validate_cli.render(results).splitlines()
    assert report[0] == "ERROR gpu02"  # what could not be checked comes before passes
    assert "PASS  gpu01" in report
    assert "  ERROR host.collection [gpu02]" in report
    assert report[-1] == "ERROR: 2 host(s): 1 pass, 0 fail, 1 could not be checked"
    assert results[1].to_json()["verdict"] == "error"


HUGE = "9" * 5000

HOSTILE_VALUES = {
    "double-minus": "--1\n",
    "superscript": "\u00b2\n",
    "5000-digits": HUGE + "\n",
    "nul": "1\x002\n",
}

HEALTHY_QOS = render_mlnx_qos(qos())

HOSTILE_SECTIONS: dict[str, tuple[str, str]] = {
    # id: (section, hostile text). Sysfs files get each hostile value; tools get them inside real output.
    **{
        f"{kind}-{value_id}": (f"{kind}:ens1np0", value)
        for kind in ("mtu", "ecn_np_enable", "ecn_rp_enable", "cnp_dscp", "cnp_802p_prio")
        for value_id, value in HOSTILE_VALUES.items()
    },
    **{f"traffic_class-{i}": ("traffic_class:mlx5_0/1", v) for i, v in HOSTILE_VALUES.items()},
    "mlnx_qos-huge-pfc": (
        "mlnx_qos:ens1np0",
        HEALTHY_QOS.replace("enabled     0   0   0   1", f"enabled     0   0   0   {HUGE}"),
    ),
    "mlnx_qos-huge-dscp": ("mlnx_qos:ens1np0", HEALTHY_QOS.replace("dscp:24,25,26,", f"dscp:24,25,{HUGE},")),
    "mlnx_qos-nul": ("mlnx_qos:ens1np0", "\x00" * 64),
    "topo-superscript": ("topo", TOPO.replace("GPU0\t X \tNV18\tPIX", "GPU0\t X \tNV\u00b2\tPIX")),
    "topo-nul": ("topo", "\x00" * 64),
    "lsmod-nul": ("lsmod", "\x00Module Size\n"),
    "rdma_link-nul": ("rdma_link", "link mlx5_0/\x00 state ACTIVE\n"),
    "ibv_devinfo-huge-mtu": ("ibv_devinfo", "hca_id:\tmlx5_0\n\tphys_port_cnt:\t\t" + HUGE + "\n"),
}


def _text_sections(overrides: Mapping[str, str]) -> dict[str, Section]:
    return {**healthy_sections(), **{name: ok(text) for name, text in overrides.items()}}


@pytest.mark.parametrize(("section", "text"), HOSTILE_SECTIONS.values(), ids=list(HOSTILE_SECTIONS))
def test_hostile_section_on_one_host_is_an_error_for_that_host_only(section: str, text: str) -> None:
    def collector(target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        sections = _text_sections({section: text}) if target.name == "gpu02" else healthy_sections()
        return HostCollection(target.name, sections, True, priority=priority)

    hosts = [
        inventory_entry("gpu01", "gpu_hosts"),
        inventory_entry("gpu02", "gpu_hosts"),
        inventory_entry("gpu03", "gpu_hosts"),
    ]
    results = {r.host: r for r in hostgate.validate(hosts, collector=collector)}
    assert results["gpu01"].verdict is Status.PASS and results["gpu03"].verdict is Status.PASS
    bad = results["gpu02"]
    assert bad.verdict is not Status.PASS
    command = section_command(section, 3)
    named = [f for f in bad.findings if f.status is Status.ERROR and f"`{command}`" in f.actual]
    assert named, [f.actual for f in bad.findings if f.status is not Status.PASS]
    assert all(len(f.actual) < 1000 for f in bad.findings)  # a 5000-digit value is never echoed whole


def test_an_unexpected_error_judging_one_host_spares_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    real_check_host = validate.check_host

    def check_host(
        evidence: checks.HostEvidence, desired: DesiredHost, intent: FabricIntent
    ) -> list[Finding]:
        if evidence.modules == frozenset({"boom"}):
            raise KeyError("boom")
        return real_check_host(evidence, desired, intent)

    monkeypatch.setattr(validate, "check_host", check_host)

    def collector(target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        lsmod = "Module  Size  Used by\nboom 1 0\n" if target.name == "gpu02" else LSMOD
        return HostCollection(target.name, _text_sections({"lsmod": lsmod}), True)

    results = hostgate.validate(
        [inventory_entry("gpu01", "gpu_hosts"), inventory_entry("gpu02", "gpu_hosts")], collector=collector
    )
    assert [(r.host, r.verdict) for r in results] == [("gpu01", Status.PASS), ("gpu02", Status.ERROR)]
    [finding] = results[1].findings
    assert finding.check == validate.COLLECTION_CHECK and "KeyError: 'boom'" in finding.actual


BAD_CONNECTION_VARS = [
    ({"ansible_port": "abc"}, "ansible_port = 'abc'"),
    ({"ansible_port": -1}, "ansible_port = -1"),
    ({"ansible_port": 70000}, "ansible_port = 70000"),
    ({"ansible_port": "0"}, "ansible_port = '0'"),
    ({"ansible_port": True}, "ansible_port = True"),
    ({"ansible_port": "2\u00b2"}, "ansible_port = '2\u00b2'"),
    ({"ansible_port": "{{ base_port }}"}, "ansible_port = '{{ base_port }}'"),
    ({"ansible_ssh_port": "22x"}, "ansible_ssh_port = '22x'"),
    ({"ansible_host": "10.0.0.1 -oProxyCommand=x"}, "ansible_host = '10.0.0.1 -oProxyCommand=x'"),
    ({"ansible_user": "-oProxyCommand=x"}, "ansible_user = '-oProxyCommand=x'"),
    ({"ansible_ssh_private_key_file": ["a", "b"]}, "ansible_ssh_private_key_file = ['a', 'b']"),
    ({"ansible_ssh_common_args": "-o 'unclosed"}, 'ansible_ssh_common_args = "-o \'unclosed"'),
]


@pytest.mark.parametrize(("variables", "named"), BAD_CONNECTION_VARS, ids=[b[1] for b in BAD_CONNECTION_VARS])
def test_bad_connection_variable_is_an_error_for_that_host_naming_it(variables: dict, named: str) -> None:
    called: list[str] = []

    def collector(target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        called.append(target.name)
        return HostCollection(target.name, healthy_sections(), True)

    bad = HostEntry("gpu02", ("gpu_hosts",), INTENT, {"ansible_host": "10.0.0.2", **variables})
    results = hostgate.validate([inventory_entry("gpu01", "gpu_hosts"), bad], collector=collector)
    assert called == ["gpu01"]  # the bad host is never contacted with a guessed value
    assert [(r.host, r.verdict) for r in results] == [("gpu01", Status.PASS), ("gpu02", Status.ERROR)]
    [finding] = results[1].findings
    assert (finding.check, finding.subject) == (validate.INVENTORY_CHECK, "gpu02")
    assert finding.actual.startswith(named), finding.actual


def test_bad_connection_variable_names_its_inventory_file_and_line(tmp_path) -> None:
    from fabcheck.intent.loader import load_inventory

    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    (tmp_path / "group_vars" / "all" / "fabric.yml").write_text("fabric_intent: {}\n")
    (tmp_path / "hosts.yml").write_text(
        "all:\n  children:\n    gpu_hosts:\n      hosts:\n        gpu01:\n          ansible_port: abc\n"
    )
    [entry] = load_inventory(tmp_path).hosts
    [result] = hostgate.validate([entry], collector=lambda *_: pytest.fail("must not connect"))
    assert result.findings[0].actual.startswith(f"{tmp_path / 'hosts.yml'}:6: ansible_port = 'abc': ")


def test_deadline_cuts_round_trips_and_hosts_not_started_are_errors() -> None:
    now = [0.0]
    seen: dict[str, TimeLimits] = {}

    def collector(target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        seen[target.name] = limits
        now[0] += 50  # each round trip uses 50 s of the run
        if target.name == "gpu01":
            return HostCollection(target.name, healthy_sections(), True)
        return HostCollection(
            target.name, {}, False, "command timeout: no complete answer", expired="command"
        )

    hosts = [inventory_entry(f"gpu0{i}", "gpu_hosts") for i in (1, 2, 3)]
    limits = TimeLimits(connect_s=10, command_s=30)
    results = hostgate.validate(hosts, limits, collector, deadline_s=60, clock=lambda: now[0], workers=1)
    assert [r.verdict for r in results] == [Status.PASS, Status.ERROR, Status.ERROR]
    assert seen["gpu01"] == limits
    assert seen["gpu02"].client_s == 10  # the 10 s the deadline still left, not the 45 s of the limits
    assert "gpu03" not in seen  # nothing left: never contacted
    for result in results[1:]:
        [finding] = result.findings
        assert finding.check == validate.COLLECTION_CHECK
        assert finding.actual.startswith("not collected before the deadline (--deadline 60 s)")
    assert results[1].findings[0].actual.endswith("command timeout: no complete answer")


def test_collection_errors_say_which_limit_expired_in_the_hint() -> None:
    connect = HostCollection(
        "gpu01", {}, False, "connect timeout (ssh ConnectTimeout 10 s)", expired="connect"
    )
    [finding] = hostgate.judge(connect, INTENT).findings
    assert "--connect-timeout" in finding.hint
    hung = HostCollection(
        "gpu01", healthy_sections(), False, "command timeout on the host", expired="command"
    )
    assert "--timeout" in hostgate.judge(hung, INTENT).findings[0].hint


def test_host_without_timeout_is_judged_but_never_passes() -> None:
    findings = run_checks({"time_limit": Section(127, "", "timeout: not found")})
    unbounded = only(findings, validate.COLLECTION_CHECK, "gpu01")
    assert unbounded.status is Status.ERROR and "timeout: not found" in unbounded.actual
    assert only(findings, checks.TRUST, "mlx5_0").status is Status.PASS
    assert validate.verdict(findings) is Status.ERROR
