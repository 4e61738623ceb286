"""fabcheck.gate.step_judge: `validate --via slurm` with each node judging itself. The node's findings and
the sections it forwards, read back on the controller, give exactly the results of judging its raw
output there (fleet checks included); the records travel as templates; a node that cannot judge sends
its raw output (the wrapper run here as one task of the step)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fabcheck.checks.host import FLEET_CHECKS
from fabcheck.checks.model import Finding, Measure, Status, Where
from fabcheck.collect.backends import slurm
from fabcheck.collect.host import HostCollection
from fabcheck.collect.script import Section, split_sections
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.desired import record as records
from fabcheck.desired.nic import DesiredHost, desired_host
from fabcheck.desired.record import HostRecord, RecordError, StepRecords, record_from_template
from fabcheck.gate import host_stage, node_check, step_judge
from fabcheck.gate.plan import plan_gate
from fabcheck.intent.loader import load_inventory
from tests.checks.host.hostdata import ETHTOOL_I, INTENT, flint_q, gids, healthy_sections, ok, planned
from tests.parsers.renderers import render_show_gids

TOKEN = "0123456789abcdef"
HOSTS = ("gpu01", "gpu02", "gpu03")
REPO = Path(__file__).resolve().parents[2]


def raw_collections() -> dict[str, HostCollection]:
    """Three hosts where every kind of finding occurs: gpu02 without a v2 GID at the index on mlx5_1
    (host.gid_index fails), gpu03 another driver and firmware (host.versions and host.nic_firmware name it)
    and no mlnx_qos on one NIC."""
    v1 = [dataclasses.replace(g, version="v1") if g.dev == "mlx5_1" and g.index == 3 else g for g in gids()]
    changes: dict[str, dict[str, Section]] = {
        # flint is optional: not installed, its record is None, which must travel as such.
        "gpu01": {f"flint:mlx5_{n}/1": Section(127, "", "sh: flint: not found") for n in (0, 1)},
        "gpu02": {"show_gids": ok(render_show_gids(v1))},
        "gpu03": {
            "driver:ens1np0": ok(ETHTOOL_I.replace("24.04-0.6.6", "23.10-1.1.9")),
            "flint:mlx5_1/1": ok(flint_q(version="28.40.1000")),
            "mlnx_qos:ens2np0": Section(127, "", "sh: mlnx_qos: not found"),
        },
    }
    return {
        host: HostCollection(host, healthy_sections() | changes.get(host, {}), True, priority=3)
        for host in HOSTS
    }


def desired_of(host: str, nvlink: bool) -> DesiredHost:
    return planned(INTENT, host) if nvlink else desired_host(INTENT, host)


def judged_on_the_node(collection: HostCollection, forward: str, desired: DesiredHost) -> HostCollection:
    """What the controller gets from a judging node: the node judges its collection, prints the judged
    section (with what the fleet checks read of it) in the collection's framing, and the step's reader
    splits it (as SlurmStep._bundle does)."""
    result = host_stage.judge(collection, INTENT, desired)
    sent = step_judge.narrowed(forward, HostRecord(desired, INTENT))
    text = step_judge.judged_output(TOKEN, step_judge.payload_json(collection, result.findings, sent))
    parsed = split_sections(text, TOKEN)
    assert parsed.complete and list(parsed.sections) == [step_judge.JUDGED_SECTION]
    return HostCollection(collection.host, parsed.sections, True, None, collection.priority)


def stage(collections: dict[str, HostCollection], nvlink: bool) -> list[host_stage.HostResult]:
    """The host stage's judging of these collections: each host, then the fleet checks."""
    desired = {host: desired_of(host, nvlink) for host in collections}
    results = [host_stage.judge(c, INTENT, desired[c.host]) for c in collections.values()]
    return host_stage.judge_fleet(results, dict.fromkeys(collections, INTENT), desired)


@pytest.mark.parametrize("nvlink", [True, False], ids=["nvlink-domain", "no-nvlink-plan"])
@pytest.mark.parametrize(
    "forward", [step_judge.forward_list(step_judge.FLEET_READS), slurm.EVERY_SECTION], ids=["fleet", "every"]
)
def test_judged_on_the_node_gives_the_controllers_findings_fleet_checks_included(
    forward: str, nvlink: bool
) -> None:
    raw = raw_collections()
    native = stage(raw, nvlink)
    judged = {host: judged_on_the_node(c, forward, desired_of(host, nvlink)) for host, c in raw.items()}
    merged = stage(judged, nvlink)
    assert [r.findings for r in merged] == [r.findings for r in native]
    statuses = {f.status for r in native for f in r.findings}
    assert {Status.PASS, Status.FAIL, Status.ERROR} <= statuses
    failing = {(r.host, f.check) for r in native for f in r.findings if f.status is Status.FAIL}
    wanted = {("gpu02", "host.gid_index"), ("gpu03", "host.versions"), ("gpu03", "host.nic_firmware")}
    assert wanted <= failing
    fabric = {f.status for r in native for f in r.findings if f.check == "host.nvlink_fabric"}
    assert fabric == ({Status.PASS} if nvlink else {Status.SKIP})
    payload = step_judge.read_payload(judged["gpu01"].sections[step_judge.JUDGED_SECTION].stdout, "gpu01")
    if forward == slurm.EVERY_SECTION:  # every later consumer (link stage, --metrics) reads the same evidence
        assert [r.evidence for r in merged] == [r.evidence for r in native]
        assert payload.sent_records is None and "lsmod" in payload.sections
    else:  # records, not text; nvidia-smi -q's only where host.nvlink_fabric judges it
        assert payload.sent_records is not None and not payload.sections
        sent = {probe for probe, _subject in payload.sent_records}
        assert ("nvidia_smi_q" in sent) is nvlink and "show_gids" in sent and "lsmod" not in sent
        native_records = native[0].evidence.records  # type: ignore[union-attr]
        assert all(native_records[key] == record for key, record in payload.sent_records.items())


def test_the_fleet_forward_list_sends_only_the_fleet_checks_sections() -> None:
    collection = raw_collections()["gpu01"]
    forward = step_judge.forward_list(step_judge.FLEET_READS)
    assert forward == "counter_window,driver,flint,ibv_devinfo,nvidia_smi_q,rdma_link,show_gids,time_limit"
    sent = step_judge.forwarded(collection.sections, forward)
    assert set(sent) < set(collection.sections)
    assert {name.partition(":")[0] for name in sent} == {
        "counter_window", "driver", "flint", "ibv_devinfo", "nvidia_smi_q", "rdma_link", "show_gids",
        "time_limit",
    }  # fmt: skip
    packed = step_judge.judged_output(TOKEN, step_judge.payload_json(collection, (), forward))
    assert max(len(line) for line in packed.splitlines()) <= step_judge.LINE_CHARS  # srun cuts at 1,024
    assert len(step_judge.payload_json(collection, (), forward)) < len(
        step_judge.payload_json(collection, (), slurm.EVERY_SECTION)
    )


def test_a_judgement_the_controller_cannot_read_is_an_error_for_that_host_alone() -> None:
    pack = step_judge.packed
    good = json.loads(step_judge.payload_json(raw_collections()["gpu01"], (), "rdma_link,show_gids"))
    for text, said in (
        ("{not base64", "not a packed judgement"),
        (pack("{not json"), "not JSON"),
        (pack("[" * 10 + " " * (step_judge.MAX_PAYLOAD_BYTES + 1)), "inflates beyond"),
        (pack(json.dumps({"version": 99})), "version 99"),
        (pack(json.dumps({"version": 1, "host": "gpu09"})), "host 'gpu09'"),
        (
            pack(json.dumps({"version": 1, "host": "gpu01", "forward": "*", "findings": [{"check": 1}]})),
            "TypeError",
        ),
        (pack(json.dumps(good | {"findings": [["host.pfc", "maybe", "", "", "", "", None, None]]})), "maybe"),
        (pack(json.dumps(good | {"records": [["show_gids", "", {"ok": [{"dev": 7}]}]]})), "show_gids"),
        (pack(json.dumps(good | {"records": [["rdma_link", "", {"maybe": 1}]]})), "neither ok nor"),
    ):
        collection = HostCollection("gpu01", {step_judge.JUDGED_SECTION: Section(0, text)}, True)
        result = host_stage.judge(collection, INTENT, planned(INTENT, "gpu01"))
        assert [(f.check, f.status) for f in result.findings] == [(host_stage.COLLECTION_CHECK, Status.ERROR)]
        assert "its judgement" in result.findings[0].actual and said in result.findings[0].actual


def test_a_finding_reads_back_from_its_json() -> None:
    full = Finding(
        "perf.busbw", Status.FAIL, "8 GiB", "≥ 300", "212.5", "fix", Where("gpu01", "GPU3", "leaf:1"),
        Measure(212.5, "GB/s", 300.0),
    )  # fmt: skip
    bare = Finding("host.pfc", Status.PASS, "mlx5_0", "on", "on")
    for finding in (full, bare, dataclasses.replace(full, measure=Measure(3, "ms"))):
        assert Finding.from_json(json.loads(json.dumps(finding.to_json()))) == finding
    with pytest.raises(ValueError):
        Finding.from_json({**bare.to_json(), "status": "maybe"})


def lab_records() -> dict[str, HostRecord]:
    return node_check.host_records(load_inventory(REPO / "inventory" / "example"), 5)


def test_records_differing_only_in_the_host_name_travel_as_one_template() -> None:
    recorded = lab_records()
    step = StepRecords.of(recorded)
    assert len(recorded) >= 2 and len(step.templates) == 1 and set(step.index.values()) == {0}
    for host, record in recorded.items():
        assert record_from_template(step.templates[0], host) == record
    desired = dataclasses.replace(recorded["gpu02"].desired, counter_window_s=7)
    other = dataclasses.replace(recorded["gpu02"], desired=desired)
    two = StepRecords.of({**recorded, "gpu02": other})
    assert len(two.templates) == 2 and two.index["gpu02"] == 1 and two.index["gpu01"] == 0
    assert record_from_template(two.templates[1], "gpu02") == other


def test_the_hosts_of_one_nvlink_domain_share_one_template() -> None:
    recorded = node_check.host_records(load_inventory(REPO / "inventory" / "example-nvl"), 5)
    step = StepRecords.of(recorded)
    # Two domains of two trays: a template each (the members' list is the same for both trays).
    assert step.index == {"tray01": 0, "tray02": 0, "tray03": 1, "tray04": 1}
    for host, record in recorded.items():
        assert record_from_template(step.templates[step.index[host]], host) == record


def test_four_hundred_nvlink_trays_all_get_their_record() -> None:
    # A template per host (its domain's members in it) fitted ~340 NVLink hosts in the 512 KiB.
    recorded = node_check.host_records(load_inventory(REPO / "inventory" / "example-nvl"), 5)
    documents = [json.dumps(records._document(recorded[tray])) for tray in ("tray01", "tray02")]
    example = ("tray01", "tray02", "198.51.100.31", "198.51.100.32")
    trays: dict[str, HostRecord] = {}
    for domain in range(200):  # the example's first domain of two trays, 200 times over
        names = (f"rack{domain:03d}-a", f"rack{domain:03d}-b")
        given = (*names, f"10.0.{domain}.1", f"10.0.{domain}.2")
        for name, document in zip(names, documents, strict=True):
            for old, new in zip(example, given, strict=True):
                document = document.replace(f'"{old}"', f'"{new}"')
            trays[name] = records.read_record(document, "test")
    assert trays["rack007-b"].desired.nvlink.members == ("rack007-a", "rack007-b")  # type: ignore[union-attr]
    step = StepRecords.of(trays)
    assert len(step.index) == 400 and len(step.templates) == 200
    for host in ("rack000-a", "rack057-b", "rack199-a"):
        assert record_from_template(step.templates[step.index[host]], host) == trays[host]


def test_templates_beyond_the_command_line_limit_leave_their_hosts_to_send_raw_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recorded = lab_records()
    varied = {
        host: dataclasses.replace(r, desired=dataclasses.replace(r.desired, counter_window_s=i))
        for i, (host, r) in enumerate(recorded.items())
    }
    one = len(StepRecords.of(dict(list(varied.items())[:1])).templates[0])
    monkeypatch.setattr(records, "TEMPLATES_TOTAL_BYTES", 2 * one + 10)
    step = StepRecords.of(varied)
    assert len(step.templates) == 2 and list(step.index) == list(varied)[:2]


def test_a_template_that_is_not_one_is_a_record_error() -> None:
    for bad in ("%%%", "aGVsbG8=", records.base64.b64encode(records.zlib.compress(b"[1]")).decode()):
        with pytest.raises(RecordError):
            record_from_template(bad, "gpu01")


def test_the_node_is_told_the_fleet_reads_alone_unless_a_later_consumer_reads_the_host_evidence() -> None:
    inventory = load_inventory(REPO / "inventory" / "example")
    host_only = node_check.node_judging(plan_gate(inventory, stages=("host",)))
    assert host_only.forward == step_judge.forward_list(step_judge.FLEET_READS)
    assert host_only.fingerprint == step_judge.code_fingerprint() and len(host_only.records.templates) == 1
    with_link = node_check.node_judging(plan_gate(inventory, stages=("host", "switch", "link")))
    assert with_link.forward == slurm.EVERY_SECTION
    metrics = node_check.node_judging(plan_gate(inventory, stages=("host",)), every_section=True)
    assert metrics.forward == slurm.EVERY_SECTION


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["XYZ", "gpu01", "f", "*", "t", "35", "10", "5"],
        [TOKEN, "gpu01", "f", "a b", "t", "35", "10", "5"],
        [TOKEN, "gpu01", "f", "*", "t", "5", "10", "5"],
        [TOKEN, "gpu01", "f", "*", "t", "35", "x", "5"],
    ],
)
def test_bad_step_arguments_send_the_raw_collection(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert step_judge.main(argv) == step_judge.RAW
    assert capsys.readouterr().err.startswith("fabcheck step-judge: ")


def test_the_node_keeps_the_controllers_host_tool_and_window_seconds() -> None:
    limits = TimeLimits(connect_s=5, command_s=30, counter_window_s=5)
    args = step_judge.StepArguments.parse(
        [TOKEN, "gpu01", "f", "*", "t", str(limits.host_s), str(limits.tool_s), str(limits.counter_window_s)]
    )
    assert (args.limits.host_s, args.limits.tool_s, args.limits.counter_window_s) == (35, 10, 5)


def this_fabcheck(tmp_path: Path) -> str:
    """A `fabcheck` command running this very code (the checkout under test, whatever venv it is in)."""
    launcher = tmp_path / "fabcheck"
    code = Path(step_judge.__file__).resolve().parents[2]
    launcher.write_text(f'#!/bin/sh\nPYTHONPATH={code} exec {sys.executable} -m fabcheck.cli "$@"\n')
    launcher.chmod(0o755)
    return str(launcher)


def run_task(judging: slurm.NodeJudging, node_fabcheck: str) -> subprocess.CompletedProcess[str]:
    """The step's program run here as the task of node gpu02 (inventory host gpu02)."""
    limits = TimeLimits(connect_s=5, command_s=60)
    argv = slurm.step_argv(
        ["gpu01", "gpu02"],
        {"gpu01": 3, "gpu02": 3},
        TOKEN,
        limits,
        slurm.SlurmOptions(node_fabcheck=node_fabcheck),
        False,
        judging,
        {"gpu01": "gpu01", "gpu02": "gpu02"},
    )
    program = argv[argv.index("/bin/sh") :]
    env = {"SLURMD_NODENAME": "gpu02"}
    return subprocess.run(program, capture_output=True, text=True, env=env, timeout=180, check=False)


def judging() -> slurm.NodeJudging:
    return node_check.node_judging(
        plan_gate(load_inventory(REPO / "inventory" / "example"), stages=("host",))
    )


def test_a_node_with_the_controllers_fabcheck_judges_itself(tmp_path: Path) -> None:
    done = run_task(judging(), this_fabcheck(tmp_path))
    header, _, rest = done.stdout.partition("\n")
    assert done.returncode == 0, done.stderr[-2000:]
    assert header == f"<<<fabcheck-slurm {TOKEN} node gpu02>>>"
    parsed = split_sections(rest, TOKEN)
    assert parsed.complete and list(parsed.sections) == [step_judge.JUDGED_SECTION]
    judged = step_judge.read_payload(parsed.sections[step_judge.JUDGED_SECTION].stdout, "gpu02")
    judged_checks = {f.check for f in judged.findings}
    assert "host.rdma_device" in judged_checks and not judged_checks & set(
        FLEET_CHECKS
    )  # fleet: the controller
    assert judged.sent_records is not None and not judged.sections
    assert {probe for probe, _subject in judged.sent_records} <= {
        *step_judge.FLEET_READS, *step_judge.ALWAYS_FORWARDED
    }  # fmt: skip


@pytest.mark.parametrize("why", ["missing", "no interpreter", "older fabcheck", "another build"])
def test_a_node_that_cannot_judge_sends_its_raw_collection(why: str, tmp_path: Path) -> None:
    wanted = judging()
    fabcheck = this_fabcheck(tmp_path)
    if why == "missing":
        done = run_task(wanted, "/nonexistent/fabcheck")
        assert "no /nonexistent/fabcheck on the node's PATH" in done.stderr
    elif why == "no interpreter":  # a venv's script whose interpreter the node does not have
        script = tmp_path / "venv-fabcheck"
        script.write_text("#!/nonexistent/python\n")
        script.chmod(0o755)
        done = run_task(wanted, str(script))
        assert "failed on the node (exit 127): sending the raw output" in done.stderr
    elif why == "older fabcheck":  # a release without step-judge: argparse refuses the command, exit 2
        script = tmp_path / "old-fabcheck"
        script.write_text('#!/bin/sh\necho "fabcheck: error: argument COMMAND: invalid choice" >&2\nexit 2\n')
        script.chmod(0o755)
        done = run_task(wanted, str(script))
        assert "failed on the node (exit 2): sending the raw output" in done.stderr
    else:
        done = run_task(dataclasses.replace(wanted, fingerprint="0" * 20), fabcheck)
        assert "is not the controller's" in done.stderr
    parsed = split_sections(done.stdout.partition("\n")[2], TOKEN)
    assert parsed.complete and step_judge.JUDGED_SECTION not in parsed.sections
    assert {"rdma_link", "time_limit", "lsmod"} <= set(parsed.sections)


FAKE_SRUN = """\
import os, subprocess, sys
argv = sys.argv[1:]
nodes = next(a for a in argv if a.startswith("--nodelist=")).split("=", 1)[1].split(",")
program = argv[argv.index("/bin/sh") :]
for task, node in enumerate(nodes):  # one task per node, labelled as srun --label does
    env = {"SLURMD_NODENAME": node}
    done = subprocess.run(program, env=env, capture_output=True, text=True)
    sys.stdout.writelines(f"{task}: {line}\\n" for line in done.stdout.splitlines())
    sys.stderr.writelines(f"{task}: {line}\\n" for line in done.stderr.splitlines())
"""


def fake_slurm(tmp_path: Path, nodes: list[str]) -> slurm.SlurmOptions:
    """srun running each task here in turn, labelled; sinfo showing every node idle."""
    srun, sinfo = tmp_path / "srun", tmp_path / "sinfo"
    srun.write_text(f"#!{sys.executable}\n{FAKE_SRUN}")
    sinfo.write_text("#!/bin/sh\n" + "".join(f"echo '{node}|idle|lab*|none'\n" for node in nodes))
    for path in (srun, sinfo):
        path.chmod(0o755)
    return slurm.SlurmOptions(srun=str(srun), sinfo=str(sinfo), node_fabcheck=this_fabcheck(tmp_path))


@pytest.mark.parametrize("same_build", [True, False], ids=["same-build", "another-build"])
def test_the_step_says_how_many_nodes_judged_themselves_and_why_the_others_did_not(
    tmp_path: Path, same_build: bool
) -> None:
    plan = plan_gate(load_inventory(REPO / "inventory" / "example"), stages=("host",))
    hosts = plan.hosts[:2]
    wanted = node_check.node_judging(plan)
    if not same_build:
        wanted = dataclasses.replace(wanted, fingerprint="0" * 20)
    options = fake_slurm(tmp_path, [entry.name for entry in hosts])
    limits = TimeLimits(connect_s=5, command_s=60)
    step = slurm.SlurmStep(hosts, plan.host_priorities(), limits, options, environ={}, judging=wanted)
    bundles = [step(SshTarget(entry.name, entry.name), 3, limits) for entry in hosts]
    assert all(b.complete for b in bundles)
    judged = [step_judge.JUDGED_SECTION in b.sections for b in bundles]
    names = ", ".join(entry.name for entry in hosts)
    if same_build:
        assert judged == [True, True]
        assert step.afterword() == ["--via slurm: 2 of 2 nodes judged themselves"]
    else:
        assert judged == [False, False]
        first, second = step.afterword()
        assert first == "--via slurm: 0 of 2 nodes judged themselves"
        assert second.startswith(f"--via slurm: raw output, judged here, from {names}: this node's fabcheck")
        assert second.endswith("is not the controller's (" + "0" * 20 + "): sending the raw collection")


def test_a_node_answer_cut_by_the_step_is_the_steps_error_not_a_bug() -> None:
    cut = HostCollection(
        "gpu01", {step_judge.JUDGED_SECTION: Section(None, "eJzt")}, False, "--via slurm: command timeout"
    )
    result = host_stage.judge(cut, INTENT, planned(INTENT, "gpu01"))
    ((check, status, actual),) = [(f.check, f.status, f.actual) for f in result.findings]
    assert (check, status) == (host_stage.COLLECTION_CHECK, Status.ERROR)
    assert "command timeout" in actual and "fabcheck failed" not in actual


def test_a_snapshot_of_nodes_that_sent_their_raw_reads_is_judged_again_from_them() -> None:
    raw = raw_collections()["gpu03"]
    every = judged_on_the_node(raw, slurm.EVERY_SECTION, planned(INTENT, "gpu03"))
    again = step_judge.raw_reads(every)
    assert again is not None and dict(again.sections) == dict(raw.sections) and again.complete
    fleet_only = judged_on_the_node(
        raw, step_judge.forward_list(step_judge.FLEET_READS), planned(INTENT, "gpu03")
    )
    assert step_judge.raw_reads(fleet_only) is None  # records only: its verdicts are what it holds
