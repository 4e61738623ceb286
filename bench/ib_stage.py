"""Benchmark the ib stage's judging of a large InfiniBand fabric from a snapshot: a modelled 2,048-host
3-tier fat tree (8 HCAs per host: 16,384 host cables, 1,280 switches of 64 ports, 49,152 cables), against
a 128-host baseline of the same shape in the same run.

No lab and no root: per size, the lab's fabric model (fabcheck_lab.ib_fabric: fat_tree of
modelled_hcas, one uplink counting symbol errors) renders what the reader node's one round trip prints
(ibqueryerrors before and after a 5 s window, ibnetdiscover -p, saquery, vendstat -N per switch LID),
that read is written as a `--save-snapshot` directory (`ib/<reader>.json`), and a child process replays
it through the stage's own reads (ib_reads, the gate's Reader serving the snapshot) and judges it
(evidence_of: every parser; fabcheck.checks.ib.check_ib_fabric against the planned fabric derived from
the same model). Printed per size: the snapshot's bytes, the replay's wall and CPU seconds (read +
parse + check), the findings, the child's peak RSS (VmHWM); then the ratios against the baseline
(a ratio near the cable ratio, 16, means the cost grows linearly with the fabric).

    PYTHONPATH=.:lab/src .venv/bin/python bench/ib_stage.py [--hosts 128 2048] [--window 5]

The stage costs one round trip to one node whatever the size (tests/gate/test_ib_stage.py counts it);
what grows is this: the output carried back and the controller's parse and check.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(HERE), str(HERE / "lab" / "src")]

from fabcheck.collect.ib import (  # noqa: E402
    ERRORS_AFTER,
    ERRORS_BEFORE,
    IBNETDISCOVER,
    SAQUERY,
    TIME_LIMIT,
    section_commands,
    vendstat_section,
)
from fabcheck.collect.script import COUNTER_WINDOW, Section  # noqa: E402
from fabcheck.desired.ib import DesiredIbEnd, DesiredIbFabric, DesiredIbLink, DesiredIbSwitch  # noqa: E402
from fabcheck.gate.snapshot import FORMAT, MANIFEST, VERSION, node_file_name, section_record  # noqa: E402
from fabcheck_lab import ib_fabric as model  # noqa: E402

HCAS_PER_HOST = 8


def planned(fabric: model.Fabric, reader: str) -> DesiredIbFabric:
    """The planned fabric as the inventory would give it: every modelled cable, 4x NDR."""
    hcas = {hca.key: hca for hca in fabric.hcas}
    switches = {switch.name: switch for switch in fabric.switches}

    def end(node: str, port: int) -> DesiredIbEnd:
        if node in switches:
            return DesiredIbEnd(node, switches[node].description, port, "SW")
        hca = hcas[node]
        return DesiredIbEnd(hca.host, hca.description, port, "CA", hca.nic)

    links = tuple(
        DesiredIbLink(end(c.a.node, c.a.port), end(c.b.node, c.b.port), model.WIDTH, model.SPEED)
        for c in fabric.cables
    )
    return DesiredIbFabric(
        reader=reader,
        read_port=("mlx5_0", 1),
        width=model.WIDTH,
        speed=model.SPEED,
        switches=tuple(DesiredIbSwitch(s.name, s.tier, s.description, s.port_count) for s in fabric.switches),
        links=links,
        host_descriptions={h.description: (h.host, h.nic) for h in fabric.hcas},
        counter_window_s=0,
    )


def modelled(hosts: int) -> model.Fabric:
    fabric = model.fat_tree(model.modelled_hcas(hosts, HCAS_PER_HOST))
    leaf_uplink = next(
        c for c in fabric.cables if c.a.node.startswith("leaf") and c.b.node.startswith("spine")
    )
    noisy = model.ErrorSource(leaf_uplink.a, "SymbolErrorCounter", 2000.0, 0.0)
    return model.Fabric(fabric.switches, fabric.hcas, fabric.cables, (noisy,))


def reader_sections(fabric: model.Fabric, window_s: int) -> dict[str, Section]:
    """What the reader's one round trip prints, section by section (fabcheck.collect.ib's names)."""
    before, before_rc = model.render_ibqueryerrors(fabric, 1.0)
    after, after_rc = model.render_ibqueryerrors(fabric, 1.0 + window_s)
    sections = {
        TIME_LIMIT: Section(0, "/usr/bin/timeout\n"),
        ERRORS_BEFORE: Section(before_rc, before),
        IBNETDISCOVER: Section(0, model.render_ibnetdiscover_ports(fabric)),
        SAQUERY: Section(0, model.render_saquery_nodes(fabric)),
    }
    for switch in fabric.switches:
        sections[vendstat_section(switch.lid)] = Section(0, model.render_vendstat_general(switch))
    sections[COUNTER_WINDOW] = Section(0, f"{window_s}\n")
    sections[ERRORS_AFTER] = Section(after_rc, after)
    return sections


def save_snapshot(directory: Path, desired: DesiredIbFabric, sections: dict[str, Section]) -> int:
    """The snapshot `--save-snapshot` writes for the ib stage's one node; its size in bytes."""
    commands = section_commands(desired, sections)
    read = {
        "node": desired.reader,
        "complete": True,
        "error": None,
        "sections": {name: section_record(commands.get(name, name), s) for name, s in sections.items()},
    }
    (directory / "ib").mkdir(parents=True)
    path = directory / "ib" / node_file_name(desired.reader)
    path.write_text(json.dumps({"stage": "ib", "node": desired.reader, "read": read}))
    manifest = {"format": FORMAT, "version": VERSION, "stages": {"ib": [desired.reader]}}
    (directory / MANIFEST).write_text(json.dumps(manifest))
    return path.stat().st_size


TIER_GROUPS = {"leaf": "ib_leaves", "spine": "ib_spines", "core": "ib_cores"}


def write_inventory(fabric: model.Fabric, root: Path) -> Path:
    """The fabric as a user's inventory: GPU hosts cable their HCAs, each switch its uplinks (group
    ib_switches by tier), the example-ib intent without SM nodes (so the reader is the first host)."""
    hcas = {h.key: h for h in fabric.hcas}
    tier_of = {s.name: TIER_GROUPS[s.tier] for s in fabric.switches}
    hosts: dict[str, dict[str, Any]] = {h.host: {"fabric_links": {}} for h in fabric.hcas}
    tiers: dict[str, dict[str, Any]] = {group: {} for group in TIER_GROUPS.values()}
    for switch in fabric.switches:
        tiers[tier_of[switch.name]][switch.name] = {"fabric_links": {}}
    for cable in fabric.cables:
        far = f"{cable.b.node}/{cable.b.port}"
        if cable.a.node in hcas:
            hosts[hcas[cable.a.node].host]["fabric_links"][hcas[cable.a.node].nic] = far
        else:
            tiers[tier_of[cable.a.node]][cable.a.node]["fabric_links"][cable.a.port] = far
    children = {group: {"hosts": members} for group, members in tiers.items() if members}
    tree = {"all": {"children": {"gpu_hosts": {"hosts": hosts}, "ib_switches": {"children": children}}}}
    (root / "group_vars" / "all").mkdir(parents=True)
    (root / "hosts.yml").write_text(json.dumps(tree))  # JSON is YAML, and far faster to write
    intent = (HERE / "inventory" / "example-ib" / "group_vars" / "all" / "fabric.yml").read_text()
    (root / "group_vars" / "all" / "fabric.yml").write_text(
        intent.replace("sm_priorities: {sm01: 15, sm02: 14}", "sm_priorities: {}")
    )
    return root


# `fabcheck validate --stages ib --from-snapshot DIR --json` in a child: the whole command (the
# inventory loaded by ansible-core, the IB plan read and derived, the replay, the report).
CLI = """
import contextlib, io, json, sys, time
from fabcheck.cli import main
started = time.perf_counter()
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
wall = time.perf_counter() - started
with open("/proc/self/status") as status:
    [kib] = [line.split()[1] for line in status if line.startswith("VmHWM:")]
lines = out.getvalue().splitlines()
print(json.dumps({"exit": code, "wall_s": wall, "rss_mib": int(kib) / 1024, "lines": len(lines)}))
"""

# The replay, in a child so that its peak RSS is its own: the stage's reads served by the snapshot, the
# stage's judge, the checks.
REPLAY = """
import json, pickle, resource, sys, time
from pathlib import Path
from fabcheck.checks.ib import check_ib_fabric
from fabcheck.collect.ib import collect_ib
from fabcheck.collect.ssh import SshTarget
from fabcheck.gate.ib_stage import IbItem, evidence_of, ib_reads
from fabcheck.gate.reader import Reader
from fabcheck.gate.snapshot import replay

directory, desired_file = Path(sys.argv[1]), sys.argv[2]
with open(desired_file, "rb") as handle:
    desired = pickle.load(handle)
started, cpu = time.perf_counter(), time.process_time()
item = IbItem(SshTarget(desired.reader, desired.reader), desired)
[evidence] = Reader(tape=replay(directory)).each(
    ib_reads(collect_ib), [(desired.reader, item)], lambda node, got: evidence_of(got, desired)
)
judged = check_ib_fabric(evidence, desired)
wall, cpu = time.perf_counter() - started, time.process_time() - cpu
with open("/proc/self/status") as status:
    [kib] = [line.split()[1] for line in status if line.startswith("VmHWM:")]
findings = [f for found in judged.values() for f in found]
print(json.dumps({
    "wall_s": wall, "cpu_s": cpu, "rss_mib": int(kib) / 1024, "findings": len(findings),
    "failed": sorted({f"{f.check} {f.subject}" for f in findings if f.status.value == "fail"}),
    "errors": sorted({f"{f.check}: {f.actual}"[:200] for f in findings if f.status.value == "error"})[:5],
}))
"""


@dataclass(frozen=True)
class Size:
    hosts: int
    switches: int
    cables: int
    snapshot_bytes: int
    render_s: float
    result: dict[str, Any]
    command: dict[str, Any]  # `fabcheck validate --stages ib --from-snapshot` (empty: not run)


def measure(hosts: int, window_s: int, cli: bool = True) -> Size:
    import pickle

    started = time.perf_counter()
    fabric = modelled(hosts)
    desired = planned(fabric, fabric.hcas[0].host)  # the reader: the first host
    sections = reader_sections(fabric, window_s)
    render_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory(prefix="fabcheck-ib-bench-") as scratch:
        directory = Path(scratch) / "snapshot"
        size = save_snapshot(directory, desired, sections)
        desired_file = Path(scratch) / "desired.pickle"
        # MappingProxyType does not pickle: the same mappings as plain dicts
        plain = dataclasses.replace(
            desired,
            host_descriptions=dict(desired.host_descriptions),
            max_errors=dict(desired.max_errors),
            firmware=dict(desired.firmware),
        )
        desired_file.write_bytes(pickle.dumps(plain))
        env = os.environ | {"PYTHONPATH": f"{HERE}:{HERE / 'lab' / 'src'}"}
        done = subprocess.run(
            [sys.executable, "-c", REPLAY, str(directory), str(desired_file)],
            capture_output=True,
            text=True,
            env=env,
            timeout=1800,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"replay of {hosts} hosts failed: {done.stderr[-2000:]}")
        command: dict[str, Any] = {}
        if cli:
            inventory = write_inventory(fabric, Path(scratch) / "inventory")
            argv = [
                "validate",
                "-i",
                str(inventory),
                "--stages",
                "ib",
                "--from-snapshot",
                str(directory),
                "--json",
            ]
            ran = subprocess.run(
                [sys.executable, "-c", CLI, *argv],
                capture_output=True,
                text=True,
                env=env,
                timeout=3600,
                check=False,
            )
            if ran.returncode != 0:
                raise RuntimeError(f"validate of {hosts} hosts failed: {ran.stderr[-2000:]}")
            command = json.loads(ran.stdout.splitlines()[-1])
    return Size(
        hosts, len(fabric.switches), len(fabric.cables), size, render_s, json.loads(done.stdout), command
    )


def report(sizes: list[Size], window_s: int) -> list[str]:
    shape = f"3-tier fat tree, 64-port switches, {HCAS_PER_HOST} HCAs/host, window {window_s} s"
    lines = [f"ib stage from a snapshot ({shape})"]
    for s in sizes:
        r = s.result
        lines.append(
            f"  {s.hosts:5d} hosts: {s.switches:5d} switches, {s.cables:6d} cables, snapshot "
            f"{s.snapshot_bytes / 2**20:6.1f} MiB; replay + parse + check {r['wall_s']:6.2f} s wall, "
            f"{r['cpu_s']:6.2f} s CPU, peak RSS {r['rss_mib']:6.0f} MiB, {r['findings']} findings, "
            f"failed: {', '.join(r['failed']) or 'none'}"
        )
        if r["errors"]:
            lines.append(f"      errors: {'; '.join(r['errors'])}")
        c = s.command
        if c:
            lines.append(
                f"         fabcheck validate --stages ib --from-snapshot: {c['wall_s']:6.2f} s wall "
                f"(inventory load and report included), peak RSS {c['rss_mib']:6.0f} MiB, exit {c['exit']}, "
                f"{c['lines']} JSON lines"
            )
    base = sizes[0]
    for s in sizes[1:]:
        lines.append(
            f"  {s.hosts} / {base.hosts} hosts: cables x{s.cables / base.cables:.1f}, "
            f"wall x{s.result['wall_s'] / base.result['wall_s']:.1f}, "
            f"CPU x{s.result['cpu_s'] / base.result['cpu_s']:.1f}, "
            f"peak RSS x{s.result['rss_mib'] / base.result['rss_mib']:.1f}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--hosts", type=int, nargs="+", default=[128, 2048], help="host counts, the first the baseline"
    )
    parser.add_argument("--window", type=int, default=5, help="the counter window of the modelled read")
    parser.add_argument(
        "--no-cli", action="store_true", help="leave out the whole `fabcheck validate` replay"
    )
    args = parser.parse_args()
    sizes = [measure(hosts, args.window, not args.no_cli) for hosts in args.hosts]
    print("\n".join(report(sizes, args.window)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
