"""The SONiC driver against real strings (tests/data/real/sonic) and the mock put in the same state.

The release gate reads `show version` as real switches print it; the apply is read line by line in
the updater's own format (progress per change); the plan names the ports the updater takes
admin-down; PFC_WD goes entry by entry (the updater refuses a whole-table add); a timed-out or cut
apply is UNKNOWN, its checkpoint kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from mockswitches import MockSwitches, mock_switches
from test_sonic_render import sonic_desired

from fabcheck.lab.mockswitch.sonic_commands import field_validator_refusal, sorted_changes
from fabcheck.switch.connect import connect
from fabcheck.switch.driver import PushError, push
from fabcheck.switch.platforms.sonic import (
    CHANGE_COUNT,
    CHANGE_LINE,
    MIN_RELEASE,
    SonicDriver,
    apply_time_limit,
    compute_patch,
    disrupted_ports,
    release_of,
)
from fabcheck.switch.render import RenderedConfig, render_switch

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


def test_pfc_wd_goes_entry_by_entry_never_as_a_whole_table() -> None:
    fragment = json.loads(render_switch(sonic_desired(None)).text)
    running = {"PORT": {port: {"mtu": "9100"} for port in fragment["PORT"]}}
    patch = compute_patch(running, fragment)
    pfc_wd = [op for op in patch if op["path"].startswith("/PFC_WD")]
    assert pfc_wd and all(op["path"].count("/") >= 2 for op in pfc_wd)  # /PFC_WD/<entry>[/field]
    assert field_validator_refusal(pfc_wd) == ""
    whole = [{"op": "add", "path": "/PFC_WD", "value": fragment["PFC_WD"]}]
    assert "Modification of PFC_WD table is illegal" in field_validator_refusal(whole)


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
