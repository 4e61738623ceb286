"""The SONiC driver against real strings (tests/data/real/sonic) and the mock put in the same state.

The release gate reads `show version` as real switches print it; the apply is read line by line in
the updater's own format, master's and 202205's (progress per applied change, the limit grown to the
count it prints); the plan names the ports the updater takes admin-down; GCU's PFC_WD validator is
judged on the diff and the hwsku allow-list, as GCU does; a timed-out or cut apply is UNKNOWN, its
checkpoint kept.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mockswitches import MockSwitches, mock_switches
from test_sonic_render import sonic_desired

from fabcheck.switch.connect import connect
from fabcheck.switch.driver import PushError, push
from fabcheck.switch.platforms.sonic import (
    CHANGE_COUNT,
    CHANGE_LINE,
    MIN_RELEASE,
    ApplyTimeout,
    SonicDriver,
    apply_time_limit,
    explain_refusal,
    release_of,
)
from fabcheck.switch.render import RenderedConfig, render_switch
from fabcheck.switch.sonic_patch import compute_patch, disrupted_ports, gcu_change_estimate
from fabcheck_lab.mockswitch.sonic_commands import field_validator_refusal, sorted_changes
from fabcheck_lab.mockswitch.sonic_db import FACTORY_HWSKU, factory_config_db, simulate_patch

REAL = Path(__file__).parent.parent / "data" / "real" / "sonic"
PORTS = ("Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12")


def real(name: str) -> str:
    return (REAL / name).read_text()


def test_release_from_real_show_version() -> None:
    assert release_of(real("show-version-202205.txt")) == (2022, 5) >= MIN_RELEASE
    assert release_of(real("show-version-20241211.txt")) == (2024, 12)  # the dated form YYYYMMDD.NN
    assert release_of(real("show-version-no-branch.txt")) is None  # refused: no branch to check
    assert release_of("SONiC Software Version: SONiC.202111.5") < MIN_RELEASE


def test_the_apply_lines_count_changes_as_the_updater_prints_them() -> None:
    text = real("apply-patch-lines.txt")
    found = CHANGE_COUNT.search(text)
    assert found["count"] == "2" and len(CHANGE_LINE.findall(text, found.end())) == 2
    assert (
        text.splitlines()[0] == "** DRY RUN EXECUTION **"
        and text.splitlines()[-1] == "Patch applied successfully."
    )


def test_the_202205_apply_lines_list_each_change_twice_and_progress_counts_the_applying_ones() -> None:
    text = real("apply-patch-lines-202205.txt")
    found = CHANGE_COUNT.search(text)
    assert found["count"] == "3"
    assert len(CHANGE_LINE.findall(text)) == 6  # listed once sorted, once applied
    assert len(CHANGE_LINE.findall(text, found.end())) == 3


PFC_WD_ENTRY = {"action": "drop", "detection_time": "200", "restoration_time": "200"}


def test_gcu_judges_the_diff_so_entry_by_entry_ops_create_the_table_all_the_same() -> None:
    """gu_common.validate_field_operation: JsonPatch.from_diff(old, target). Adding PFC_WD entries one by
    one to a CONFIG_DB without the table is, as a diff, the whole-table add the validator refuses (its
    value's keys are port names, not fields); with the table there (GLOBAL), the same ops pass."""
    entry_by_entry = [{"op": "add", "path": "/PFC_WD", "value": {}}] + [
        {"op": "add", "path": f"/PFC_WD/{port}", "value": dict(PFC_WD_ENTRY)} for port in PORTS
    ]
    running = factory_config_db("leaf01", PORTS)
    running.pop("PFC_WD")
    target = simulate_patch(running, entry_by_entry)
    refused = field_validator_refusal(running, target, FACTORY_HWSKU, "202405.0-mock")
    assert refused == (
        "Modification of PFC_WD table is illegal- validating function "
        "generic_config_updater.field_operation_validators.rdma_config_update_validator returned False"
    )
    running["PFC_WD"] = {"GLOBAL": {"POLL_INTERVAL": "200"}}
    target = simulate_patch(running, entry_by_entry[1:])
    assert field_validator_refusal(running, target, FACTORY_HWSKU, "202405.0-mock") == ""


@pytest.mark.parametrize(
    ("hwsku", "release", "allowed"),
    [
        ("ACS-MSN4700", "202205.263207-f2a687b33", True),  # spc3, no 8-digit build: no minimum checked
        ("ACS-MSN4700", "20220531.18", True),  # spc3's minimum is 20220500
        ("ACS-SN5600", "20220531.18", False),  # spc4's minimum is 20221100
        ("ACS-SN5600", "20221130.02", True),
        ("Mellanox-SN9999-X", "202405.0-mock", False),  # on no ASIC's allow-list
    ],
)
def test_gcu_refuses_pfc_wd_changes_off_the_allow_list_or_below_the_asics_build(
    hwsku: str, release: str, allowed: bool
) -> None:
    running = factory_config_db("leaf01", PORTS, hwsku)
    target = json.loads(json.dumps(running))
    target["PFC_WD"]["Ethernet0"]["detection_time"] = "400"
    assert (field_validator_refusal(running, target, hwsku, release) == "") is allowed


def test_gcu_allows_pfc_stat_history_only_from_202511() -> None:
    running = factory_config_db("leaf01", PORTS)
    target = json.loads(json.dumps(running))
    target["PFC_WD"]["Ethernet0"]["pfc_stat_history"] = "enable"
    assert field_validator_refusal(running, target, FACTORY_HWSKU, "202405.0-mock") != ""
    assert field_validator_refusal(running, target, FACTORY_HWSKU, "202511.1") == ""


def test_gcu_refuses_removing_the_watchdog_poll_interval() -> None:
    running = factory_config_db("leaf01", PORTS)
    target = json.loads(json.dumps(running))
    del target["PFC_WD"]["GLOBAL"]
    assert field_validator_refusal(running, target, FACTORY_HWSKU, "202405.0-mock") == (
        "Given patch operation is invalid. Operation: remove is illegal on field: /PFC_WD/GLOBAL"
    )


def test_what_the_driver_sends_for_pfc_wd_is_judged_as_a_diff() -> None:
    """The driver no longer special-cases PFC_WD: whatever it sends, GCU sees the diff. On the factory
    (watchdog started by default) it replaces fields of existing entries, which the validator takes."""
    running = factory_config_db("leaf01", PORTS)
    fragment = json.loads(config("leaf01").text)
    patch = compute_patch(running, fragment)
    target = simulate_patch(running, patch)
    assert field_validator_refusal(running, target, FACTORY_HWSKU, "202405.0-mock") == ""


def test_a_refused_pfc_wd_dry_run_is_explained_with_the_hwsku_and_what_to_do() -> None:
    running = factory_config_db("leaf01", PORTS, "Mellanox-SN9999-X")
    gcu = (
        "Error: Modification of PFC_WD table is illegal- validating function ...rdma_config_update_validator"
    )
    why = explain_refusal(gcu, running, "202405.0-mock")
    assert "rdma_config_update_validator" in why and "hwsku Mellanox-SN9999-X" in why
    assert "allow-list" in why and "--skip-tags watchdog" in why
    running.pop("PFC_WD")
    assert "config pfcwd start" in explain_refusal(gcu, running, "202405.0-mock")
    assert explain_refusal("Error: something else", running, "202405.0-mock") == ""


def test_the_plan_names_the_ports_the_updater_takes_down() -> None:
    patch = [
        {"op": "replace", "path": "/PORT_QOS_MAP/Ethernet0/pfc_enable", "value": "3"},
        {"op": "add", "path": "/QUEUE/Ethernet4|3", "value": {"scheduler": "S"}},
        {"op": "add", "path": "/BUFFER_PG", "value": {"Ethernet8|3": {"profile": "NULL"}}},
        {"op": "replace", "path": "/PORT/Ethernet12/mtu", "value": "9100"},
    ]
    assert disrupted_ports(patch) == {
        "Ethernet0": ["PORT_QOS_MAP"],
        "Ethernet4": ["QUEUE"],
        "Ethernet8": ["BUFFER_PG"],
    }
    changes = sorted_changes(patch, {"PORT": {p: {"admin_status": "up"} for p in PORTS}})
    assert [c["value"] for c in changes if c["path"].endswith("admin_status")] == ["down"] * 3 + ["up"] * 3


def test_the_time_limit_follows_the_patch() -> None:
    assert apply_time_limit(333) > 333 > apply_time_limit(10)


def test_the_change_estimate_counts_leaves_and_an_admin_down_and_up_per_port() -> None:
    running = {
        "PORT": {p: {"admin_status": "up"} for p in PORTS},
        "QUEUE": {"Ethernet8|3": {"a": "1", "b": "2"}},
    }
    patch = [
        {"op": "replace", "path": "/PORT_QOS_MAP/Ethernet0/pfc_enable", "value": "3"},  # 1 leaf
        {"op": "add", "path": "/QUEUE/Ethernet4|3", "value": {"scheduler": "S", "wred_profile": "W"}},  # 2
        {"op": "remove", "path": "/QUEUE/Ethernet8|3"},  # 2 leaves removed
        {"op": "replace", "path": "/PORT/Ethernet12/mtu", "value": "9100"},  # 1, no flap
    ]
    assert gcu_change_estimate(patch, running) == 6 + 2 * 3


def test_the_estimate_is_never_below_what_the_mock_updater_sorts() -> None:
    running = factory_config_db("leaf01", PORTS)
    patch = compute_patch(running, json.loads(config("leaf01").text))
    assert gcu_change_estimate(patch, running) >= len(sorted_changes(patch, running)) > len(patch)


class Open:
    closed = eof_received = False


class Replay:
    """A netmiko stand-in that prints an apply slowly: GCU's count first, then one change per tick."""

    base_prompt = "admin@sw:~"

    def __init__(self, header: str, changes: int, tick_s: float) -> None:
        self.chunks = (
            [header + "\n"]
            + ["Patch Applier:   * [{}]\n"] * changes
            + ["Patch applied successfully.\n", "admin@sw:~$ "]
        )
        self.tick_s = tick_s
        self.remote_conn = Open()

    def write_channel(self, text: str) -> None:
        self.chunks.insert(0, text)  # the echo

    def read_channel(self) -> str:
        self.idle = not getattr(self, "idle", False)  # nothing to read between two lines, as on a tty
        if self.idle:
            time.sleep(self.tick_s)
            return ""
        return self.chunks.pop(0) if self.chunks else ""


@pytest.mark.parametrize(
    "header",
    [
        "Patch Applier: Applying 40 changes in order:",
        "Patch Applier: localhost: applying 40 changes in order:",
    ],
)
def test_the_limit_grows_to_the_count_gcu_prints(header: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Our own estimate said 0.05 s; GCU prints 40 changes at 0.01 s each: the wait follows GCU's count,
    so a long apply does not end as unknown."""
    monkeypatch.setattr("fabcheck.switch.platforms.sonic.PER_CHANGE_S", 0.05)
    monkeypatch.setattr("fabcheck.switch.platforms.sonic.APPLY_MARGIN_S", 0.0)
    driver = SonicDriver(Replay(header, 40, 0.01))
    steps: list[str] = []
    driver.on_progress = steps.append
    output = driver._run("sudo config apply-patch p.json", timeout=0.05)
    assert (
        output.endswith("Patch applied successfully.\n") and steps[-1] == "apply-patch: 40/40 changes applied"
    )
    driver = SonicDriver(Replay("(no count printed)", 40, 0.01))
    with pytest.raises(ApplyTimeout):
        driver._run("sudo config apply-patch p.json", timeout=0.05)


# -- the mock, put in the same state -----------------------------------------------------------------


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockSwitches]:
    names = dict.fromkeys(("sonic-real", "sonic-old", "sonic-slow"), "sonic")
    with mock_switches(
        tmp_path_factory.mktemp("sonic-real"), names, 230, releases={"sonic-old": "202111.5"}
    ) as switches:
        yield switches


def config(name: str) -> RenderedConfig:
    return render_switch(sonic_desired(None, name=name, host_ports=PORTS[:3], uplinks=PORTS[3:]))


def test_below_the_minimum_release_is_refused_clearly(lab: MockSwitches) -> None:
    conn = connect(lab.login("sonic-old"))
    try:
        with pytest.raises(PushError) as err:
            push(SonicDriver(conn), config("sonic-old"), check=True)
    finally:
        conn.disconnect()
    assert "SONiC 202111.5" in str(err.value) and "202205 or later" in str(err.value)
    assert lab.state("sonic-old")["checkpoints"] == {}


def test_mock_apply_prints_the_real_line_formats_and_flaps_the_ports(lab: MockSwitches) -> None:
    name = "sonic-real"
    steps: list[str] = []
    conn = connect(lab.login(name))
    try:
        checked = push(SonicDriver(conn), config(name), check=True)
        assert checked.diff.startswith("disruption: config apply-patch takes 4 port(s) admin-down")
        assert lab.state(name)["port_flaps"] == {}  # the dry run flaps nothing
        result = push(SonicDriver(conn), config(name), check=False, on_step=steps.append)
    finally:
        conn.disconnect()
    assert result.changed
    assert set(lab.state(name)["port_flaps"]) == set(PORTS)  # each port down once, and up again
    progress = [step for step in steps if step.startswith("apply-patch:")]
    assert progress[0].startswith("apply-patch: ") and progress[-1].endswith("changes applied")
    total = int(progress[-1].split("/")[1].split()[0])
    assert progress[-1] == f"apply-patch: {total}/{total} changes applied"
    real_lines = [line.split(":")[0] for line in real("apply-patch-lines.txt").splitlines()]
    assert set(real_lines) == {"** DRY RUN EXECUTION **", "Patch Applier", "Patch applied successfully."}


def test_a_timed_out_apply_is_unknown_and_keeps_its_checkpoint(
    lab: MockSwitches, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "sonic-slow"
    monkeypatch.setattr("fabcheck.switch.platforms.sonic.PER_CHANGE_S", 0.0)
    monkeypatch.setattr("fabcheck.switch.platforms.sonic.APPLY_MARGIN_S", 0.0)  # every apply times out
    conn = connect(lab.login(name))
    try:
        with pytest.raises(PushError) as err:
            push(SonicDriver(conn), config(name), check=False)
    finally:
        conn.disconnect()
    assert err.value.unknown and not err.value.rolled_back
    assert "OUTCOME IS UNKNOWN" in str(err.value) and "rolled back" not in str(err.value)
    (checkpoint,) = lab.state(name)["checkpoints"]
    assert checkpoint in str(err.value)
    monkeypatch.undo()
    conn = connect(lab.login(name))
    try:  # the next push reads the switch back, converges, and only then drops the old checkpoint
        push(SonicDriver(conn), config(name), check=False)
        assert not push(SonicDriver(conn), config(name), check=False).changed
    finally:
        conn.disconnect()
    assert lab.state(name)["checkpoints"] == {}
