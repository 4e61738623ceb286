"""The desired record node-check reads (fabcheck.desired.record): written from the gate's own plan, read
back equal for every GPU host of the example inventories (RoCE, IB, NVLink domains), and a file that is
not one refused with exit 2 naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabcheck.cli import main
from fabcheck.desired.record import RECORD_VERSION, HostRecord, RecordError, read_record, record_json
from fabcheck.gate.host_stage import with_nvlink
from fabcheck.gate.node_check import host_record
from fabcheck.gate.plan import plan_gate
from fabcheck.intent.loader import load_inventory

REPO = Path(__file__).resolve().parents[2]
INVENTORIES = ("example", "example-ib", "example-nvl")


@pytest.mark.parametrize("name", INVENTORIES)
def test_every_gpu_host_record_is_the_gates_and_round_trips_exactly(name: str) -> None:
    inventory = load_inventory(REPO / "inventory" / name)
    plan = plan_gate(inventory, counter_window_s=7)
    planned = with_nvlink(plan.desired.hosts, plan.desired.nvlink)
    assert plan.hosts
    for entry in plan.hosts:
        record = host_record(inventory, entry.name, 7)
        assert record == HostRecord(planned[entry.name], entry.intent)  # one derivation: the gate's
        text = record_json(record)
        assert read_record(text, "f") == record
        assert record_json(read_record(text, "f")) == text
        assert json.loads(text)["version"] == RECORD_VERSION


def test_an_nvlink_tray_carries_its_domain() -> None:
    inventory = load_inventory(REPO / "inventory" / "example-nvl")
    host = next(entry.name for entry in plan_gate(inventory).hosts)
    record = read_record(record_json(host_record(inventory, host, 0)), "f")
    assert record.desired.nvlink is not None and host in record.desired.nvlink.members


def document() -> dict[str, object]:
    inventory = load_inventory(REPO / "inventory" / "example")
    loaded: dict[str, object] = json.loads(record_json(host_record(inventory, "gpu01", 5)))
    return loaded


def broken(change: str) -> str:
    data = document()
    desired, intent = data["desired"], data["intent"]
    assert isinstance(desired, dict) and isinstance(intent, dict)
    if change == "missing desired":
        del data["desired"]
    elif change == "bad trust":
        desired["nics"][1]["trust"] = 3
    elif change == "tuple as text":
        desired["rail_pairs"] = "0:mlx5_0"
    elif change == "newer version":
        data["version"] = RECORD_VERSION + 1
    elif change == "unknown key":
        data["extra"] = 1
    elif change == "intent typo":
        intent["losless"] = {}
    elif change == "other host":
        data["host"] = "gpu02"
    elif change == "not a record":
        data["kind"] = "something"
    return json.dumps(data)


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ("missing desired", "desired"),
        ("bad trust", "desired.nics.1.trust"),
        ("tuple as text", "desired.rail_pairs"),
        ("newer version", "version"),
        ("unknown key", "extra"),
        ("intent typo", "intent.losless"),
        ("other host", "host"),
        ("not a record", "kind"),
    ],
)
def test_a_bad_record_names_its_key(change: str, key: str) -> None:
    with pytest.raises(RecordError) as raised:
        read_record(broken(change), "desired.json")
    assert raised.value.key == key, str(raised.value)
    assert f"key {key!r}" in str(raised.value)


def test_node_check_refuses_a_bad_or_missing_file_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "desired.json"
    bad.write_text(broken("bad trust"))
    assert main(["node-check", "--desired", str(bad)]) == 2
    assert "key 'desired.nics.1.trust'" in capsys.readouterr().err
    assert main(["node-check", "--desired", str(tmp_path / "absent.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    bad.write_text("{not json")
    assert main(["node-check", "--desired", str(bad)]) == 2
    assert "not JSON" in capsys.readouterr().err


def test_desired_record_writes_the_file_atomically_and_refuses_a_host_it_does_not_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "etc" / "fabcheck" / "desired.json"
    inventory = str(REPO / "inventory" / "example")
    assert main(["desired-record", "-i", inventory, "--host", "gpu02", "-o", str(out)]) == 0
    record = read_record(out.read_text(), str(out))
    assert record.host == "gpu02" and record.desired.counter_window_s == 5  # validate's default window
    assert [p.name for p in out.parent.iterdir()] == ["desired.json"]  # no temporary file left
    assert main(["desired-record", "-i", inventory, "--host", "leaf01"]) == 2
    assert "leaf01 is not a GPU host" in capsys.readouterr().err


def test_node_check_is_bounded_under_slurms_health_check_timeout() -> None:
    """slurmd kills a HealthCheckProgram after 60 s (SchedMD/slurm doc/man/man5/slurm.conf.5
    @284c3b95f08a2dc2478499837b03355e1b9c5c75): node-check's own limit, with the default --timeout and
    validate's default counter window, ends before that."""
    from fabcheck.gate.node_check import local_limits
    from fabcheck.gate.slurm_node import SCONTROL_TIMEOUT_S

    record = host_record(load_inventory(REPO / "inventory" / "example"), "gpu01", 5)
    limits = local_limits(record)
    assert limits.host_s == 35 and limits.tool_s == 10
    assert limits.client_s == 41 < 60
    assert limits.client_s + 2 * SCONTROL_TIMEOUT_S == 57  # --slurm: show and update; start-up < 1 s


def test_desired_record_all_writes_every_gpu_hosts_record_from_one_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = REPO / "inventory" / "example-nvl"
    out = tmp_path / "records"
    assert main(["desired-record", "-i", str(source), "--all", "-o", str(out), "--counter-window", "0"]) == 0
    inventory = load_inventory(source)
    hosts = [entry.name for entry in plan_gate(inventory).hosts]
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{host}.json" for host in hosts)
    for host in hosts:
        assert (out / f"{host}.json").read_text() == record_json(host_record(inventory, host, 0))
    assert main(["desired-record", "-i", str(source), "--all"]) == 2
    assert "give -o DIRECTORY" in capsys.readouterr().err
