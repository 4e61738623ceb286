"""The SONiC mock's factory CONFIG_DB against the cited real one, and what a push leaves of it.

The factory state is seeded from a real dynamic-buffer Mellanox CONFIG_DB (sonic-utilities
tests/db_migrator_input/config_db/acs-msn4700-t1-version_3_0_3.json, trimmed copy in
tests/data/real/sonic/ with its INDEX row): the conformance test fails on any difference not listed
below with its reason. The push on that switch binds only what fabcheck makes lossless: every lossy
queue keeps its profile (q_lossy_profile), every port not made lossless keeps every field, and the gate
passes after it.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from test_sonic_render import sonic_desired

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "checks")]

from fabcheck.checks.model import Status  # noqa: E402
from fabcheck.checks.switch import check_switch  # noqa: E402
from fabcheck.collect.probes import collect  # noqa: E402
from fabcheck.collect.switch_probes import PROBES  # noqa: E402
from fabcheck.desired.switch import DesiredSwitch  # noqa: E402
from fabcheck.gate.switch_stage import evidence_of  # noqa: E402
from fabcheck.switch.driver import PushError, push  # noqa: E402
from fabcheck.switch.platforms.sonic import SonicDriver  # noqa: E402
from fabcheck.switch.render import render_switch  # noqa: E402
from fabcheck_lab.mockswitch.sonic import SonicDevice  # noqa: E402
from fabcheck_lab.mockswitch.sonic_db import factory_config_db  # noqa: E402
from fabcheck_lab.mockswitch.spec import SwitchSpec  # noqa: E402
from tests.invariant.fakeconn import SessionConnection  # noqa: E402

CITED = (
    Path(__file__).parents[1] / "data" / "real" / "sonic" / "config-db-acs-msn4700-t1-dynamic-trimmed.json"
)
CITED_PORT = "Ethernet0"  # the trimmed copy keeps this port's entries; the mock gives them to each port
MANAGED = ("Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12")
UNMANAGED = ("Ethernet16", "Ethernet20")  # on the switch, not in the inventory
PORT_TABLES = (
    "PORT",
    "PORT_QOS_MAP",
    "QUEUE",
    "PFC_WD",
    "BUFFER_PG",
    "BUFFER_QUEUE",
    "BUFFER_PORT_EGRESS_PROFILE_LIST",
    "BUFFER_PORT_INGRESS_PROFILE_LIST",
)

# (table, key with <port> for any port, field) -> why the mock differs from the cited dump.
DIFFERENCES = {
    ("DEVICE_METADATA", "localhost", "hostname"): "the switch's own name, as the lab's inventory names it",
    ("DEVICE_METADATA", "localhost", "default_pfcwd_status"): (
        "enable: the lab's switches start the PFC watchdog at boot (`pfcwd start_default` writes PFC_WD), "
        "so GCU has a PFC_WD table to change; the dump has it disabled (test_sonic_real shows GCU "
        "refusing to create the table)"
    ),
    ("PORT", "<port>", "speed"): "400000: the lab's hosts link at 400G; the dump's port runs 10G",
    ("PORT", "<port>", "description"): "absent: the lab's cabling is what LLDP hears, not a description",
}
PER_PORT_IDENTITY = ("index", "lanes", "alias")  # each port's own; compared on Ethernet0 only
# Tables the dump does not hold (it is a buffer-migration input): the stock qos_config.j2 QoS tables
# and the watchdog's entries, as the mock had them before it was seeded from the dump.
NOT_IN_CITED = {
    "PORT_QOS_MAP": "qos_config.j2 (not in the buffer-migration dump)",
    "DSCP_TO_TC_MAP": "qos_config.j2",
    "TC_TO_QUEUE_MAP": "qos_config.j2",
    "TC_TO_PRIORITY_GROUP_MAP": "qos_config.j2",
    "MAP_PFC_PRIORITY_TO_QUEUE": "qos_config.j2",
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP": "qos_config.j2",
    "SCHEDULER": "qos_config.j2",
    "WRED_PROFILE": "qos_config.j2",
    "QUEUE": "qos_config.j2",
    "PFC_WD": "pfcwd start_default (default_pfcwd_status enable, above)",
}


def cited() -> dict[str, dict[str, dict[str, str]]]:
    """The trimmed dump as TABLE -> key -> fields (its keys are 'TABLE|key')."""
    tables: dict[str, dict[str, dict[str, str]]] = {}
    for flat, fields in json.loads(CITED.read_text()).items():
        table, _, key = flat.partition("|")
        tables.setdefault(table, {})[key] = fields
    return tables


def differences(mock: dict[str, Any], ports: tuple[str, ...]) -> set[tuple[str, str, str]]:
    found: set[tuple[str, str, str]] = set()
    source = cited()
    for table in source.keys() | mock.keys():
        if table not in source:
            found.add((table, "*", "*"))
            continue
        for key, fields in source[table].items():
            port, sep, rest = key.partition("|")
            per_port = port == CITED_PORT
            for name in ports if per_port else (key,):
                mine_key = name + sep + rest if per_port else key
                mine = mock.get(table, {}).get(mine_key)
                if table == "CABLE_LENGTH":  # keyed by the profile, one field per port
                    mine = {CITED_PORT: mock[table][key].get(CITED_PORT)} if mine is not None else None
                if mine is None:
                    found.add((table, mine_key, "*"))
                    continue
                label = f"<port>{sep}{rest}" if per_port else key
                for field in fields.keys() | mine.keys():
                    if per_port and field in PER_PORT_IDENTITY and name != CITED_PORT:
                        continue
                    if fields.get(field) != mine.get(field):
                        found.add((table, label, field))
    return found


def test_the_mock_factory_is_the_cited_real_config_db_but_for_the_listed_differences() -> None:
    mock = factory_config_db("leaf02", MANAGED)
    found = differences(mock, MANAGED)
    listed = set(DIFFERENCES) | {(table, "*", "*") for table in NOT_IN_CITED}
    assert found == listed, f"unlisted: {sorted(found - listed)}; listed but gone: {sorted(listed - found)}"


def test_the_conformance_diff_fails_on_an_unlisted_change() -> None:
    mock = factory_config_db("leaf02", MANAGED)
    mock["BUFFER_QUEUE"]["Ethernet4|0-2"] = {"profile": "egress_lossy_profile"}  # the old assumption
    mock["BUFFER_PROFILE"]["q_lossy_profile"]["dynamic_th"] = "7"
    assert differences(mock, MANAGED) - set(DIFFERENCES) - {(t, "*", "*") for t in NOT_IN_CITED} == {
        ("BUFFER_QUEUE", "<port>|0-2", "profile"),
        ("BUFFER_PROFILE", "q_lossy_profile", "dynamic_th"),
    }


# -- the push on the cited factory ---------------------------------------------------------------------


def switch() -> SonicDevice:
    return SonicDevice(SwitchSpec("leaf02", "sonic", "127.0.3.1", 2201, "admin", "pw", MANAGED + UNMANAGED))


def pushed(device: SonicDevice, desired: DesiredSwitch) -> None:
    connection = SessionConnection(device.new_session("admin"), desired.name)
    push(SonicDriver(connection), render_switch(desired), check=False)


def queue_profile(db: dict[str, Any], port: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for key, fields in db["BUFFER_QUEUE"].items():
        name, _, span = key.partition("|")
        first, _, last = span.partition("-")
        if name == port:
            out |= dict.fromkeys(range(int(first), int(last or first) + 1), fields["profile"])
    return out


def port_entries(db: dict[str, Any], port: str) -> dict[str, dict[str, Any]]:
    return {
        table: {k: v for k, v in db.get(table, {}).items() if k == port or k.startswith(port + "|")}
        for table in PORT_TABLES
    }


@pytest.mark.parametrize("lossless_priority", [3, 5])
def test_the_push_leaves_every_lossy_queue_and_every_port_not_made_lossless_untouched(
    lossless_priority: int,
) -> None:
    desired = sonic_desired({"lossless": {"priority": lossless_priority}}, "leaf02", MANAGED[:3], MANAGED[3:])
    device = switch()
    before = copy.deepcopy(device.running)
    pushed(device, desired)
    after = device.running
    assert after != before  # the push did its work (maps, PFC, queues of the lossless class)
    lossless = {q.traffic_class for q in desired.queues if q.lossless}
    for port in MANAGED:
        was, now = queue_profile(before, port), queue_profile(after, port)
        for queue in was.keys() | now.keys():
            if queue in lossless:
                assert now[queue] == "egress_lossless_profile"
            else:  # field by field: the lossy queue keeps the profile it had
                assert now.get(queue) == was.get(queue), (port, queue)
        for table in ("BUFFER_PORT_EGRESS_PROFILE_LIST", "BUFFER_PORT_INGRESS_PROFILE_LIST"):
            assert after[table][port] == before[table][port]
        assert after["BUFFER_PG"][f"{port}|0"] == before["BUFFER_PG"][f"{port}|0"]  # the lossy PG
    for port in UNMANAGED:
        assert port_entries(after, port) == port_entries(before, port)
    for table in ("BUFFER_POOL", "BUFFER_PROFILE", "DEVICE_METADATA", "CABLE_LENGTH"):
        assert after[table] == before[table]


def test_without_pfc_no_port_is_made_lossless_and_no_buffer_changes() -> None:
    desired = sonic_desired({"lossless": {"pfc": False}}, "leaf02", MANAGED[:3], MANAGED[3:])
    device = switch()
    before = copy.deepcopy(device.running)
    pushed(device, desired)
    for table in ("BUFFER_PG", "BUFFER_QUEUE", "BUFFER_PORT_EGRESS_PROFILE_LIST"):
        assert device.running[table] == before[table]


def test_the_gate_passes_after_the_push_on_the_cited_factory() -> None:
    desired = sonic_desired(None, "leaf02", MANAGED[:3], MANAGED[3:])
    device = switch()
    pushed(device, desired)
    session = device.new_session("admin")
    collected = collect(session.handle, PROBES["sonic"], list(MANAGED), "mock leaf02")
    findings = check_switch(evidence_of("leaf02", "sonic", collected), desired)
    buffers = [f for f in findings if f.check == "switch.buffers"]
    assert len(buffers) == len(MANAGED) and all(f.status is Status.PASS for f in buffers)
    failing = [(f.check, f.subject, f.actual) for f in findings if f.status in (Status.FAIL, Status.ERROR)]
    assert failing == []


def test_a_switch_off_gcus_allow_list_fails_the_dry_run_with_gcus_message_and_the_hwsku() -> None:
    device = SonicDevice(
        SwitchSpec("leaf02", "sonic", "127.0.3.1", 2201, "admin", "pw", MANAGED, model="Mellanox-SN9999-X")
    )
    desired = sonic_desired({"lossless": {"priority": 3}}, "leaf02", MANAGED[:3], MANAGED[3:])
    desired_wd = copy.deepcopy(device.running)
    desired_wd["PFC_WD"]["Ethernet0"]["detection_time"] = "400"  # a PFC_WD change the push must revert
    device.running = desired_wd
    before = copy.deepcopy(device.running)
    with pytest.raises(PushError) as err:
        pushed(device, desired)
    message = str(err.value)
    assert "Modification of PFC_WD table is illegal" in message and "rdma_config_update_validator" in message
    assert "hwsku Mellanox-SN9999-X" in message and "--skip-tags watchdog" in message
    assert device.running == before and device.checkpoints == {}


def test_a_switch_without_a_pfc_wd_table_is_told_to_create_it_outside_gcu() -> None:
    device = switch()
    device.running.pop("PFC_WD")
    desired = sonic_desired(None, "leaf02", MANAGED[:3], MANAGED[3:])
    with pytest.raises(PushError) as err:
        pushed(device, desired)
    assert "no PFC_WD table" in str(err.value) and "config pfcwd start" in str(err.value)


def test_a_202205_switch_prints_each_change_twice_and_the_progress_counts_the_applied_ones() -> None:
    device = SonicDevice(
        SwitchSpec(
            "leaf02", "sonic", "127.0.3.1", 2201, "admin", "pw", MANAGED, release="202205.263207-f2a687b33"
        )
    )
    desired = sonic_desired(None, "leaf02", MANAGED[:3], MANAGED[3:])
    steps: list[str] = []
    connection = SessionConnection(device.new_session("admin"), "leaf02")
    push(SonicDriver(connection), render_switch(desired), check=False, on_step=steps.append)
    progress = [step for step in steps if step.endswith("changes applied")]
    total = int(progress[-1].split("/")[1].split()[0])
    assert progress[-1] == f"apply-patch: {total}/{total} changes applied"
    assert all(int(step.split()[1].split("/")[0]) <= total for step in progress)
    assert set(device.port_flaps) == set(MANAGED)
    planned = [step for step in steps if step.startswith("apply-patch:") and "GCU change" in step]
    assert planned and int(planned[0].split("up to ")[1].split()[0]) >= total  # the estimate covers it


def test_a_switch_without_the_lossless_queue_profile_is_refused_before_any_checkpoint() -> None:
    device = switch()
    device.running["BUFFER_PROFILE"].pop("egress_lossless_profile")
    for key in [k for k in device.running["BUFFER_QUEUE"] if k.endswith("|3-4")]:
        device.running["BUFFER_QUEUE"][key] = {"profile": "q_lossy_profile"}
    desired = sonic_desired(None, "leaf02", MANAGED[:3], MANAGED[3:])
    before = copy.deepcopy(device.running)
    with pytest.raises(PushError) as err:
        pushed(device, desired)
    assert "BUFFER_PROFILE has no egress_lossless_profile" in str(err.value)
    assert device.running == before and device.checkpoints == {}
