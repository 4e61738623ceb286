"""The SONiC driver against the mock switch over real SSH (netmiko `linux`): converge, read back, faults,
dropped connections, failed commits, wrong credentials. One server for this module, loopback only."""

from __future__ import annotations

import ast
import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mockswitches import PORTS, mock_switches
from test_sonic_render import NON_DEFAULT_INTENT, sonic_desired

from fabcheck.desired.switch import DesiredSwitch
from fabcheck.switch.connect import ConnectError, connect
from fabcheck.switch.driver import PushError, PushResult, push
from fabcheck.switch.platforms.sonic import SonicDriver
from fabcheck.switch.render import render_switch
from fabcheck.switch.sonic_patch import managed_state
from fabcheck_lab.mockswitch import SwitchSpec, arm_drop, heal_switch_fault, inject_switch_fault
from fabcheck_lab.mockswitch.sonic import SonicDevice

# One switch per concern, so no test depends on another's order.
SWITCHES = ("sonic-conv", "sonic-fault", "sonic-nondef", "sonic-roll", "sonic-drop", "sonic-cred")
DROP_TRIALS = 20


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with mock_switches(tmp_path_factory.mktemp("sonic"), dict.fromkeys(SWITCHES, "sonic"), 120) as switches:
        yield switches


def desired(name: str, intent: dict[str, Any] | None = None) -> DesiredSwitch:
    ports = PORTS["sonic"]
    return sonic_desired(intent, name=name, host_ports=ports[:3], uplinks=ports[3:])


@contextlib.contextmanager
def session(lab: Any, name: str) -> Iterator[Any]:
    conn = connect(lab.login(name))
    try:
        yield conn
    finally:
        with contextlib.suppress(Exception):
            conn.disconnect()


def push_to(lab: Any, name: str, intent: dict[str, Any] | None = None, *, check: bool = False) -> PushResult:
    with session(lab, name) as conn:
        return push(SonicDriver(conn), render_switch(desired(name, intent)), check=check)


# -- reading the switch back through its own show commands -------------------------------------------


def db_fields(conn: Any, *keys: str) -> list[dict[str, str]]:
    """`sonic-db-cli CONFIG_DB hgetall KEY` for each key, in one round trip (each prints a dict literal)."""
    output = conn.send_command("; ".join(f'sonic-db-cli CONFIG_DB hgetall "{key}"' for key in keys))
    found = [ast.literal_eval(line) for line in output.splitlines() if line.startswith("{")]
    assert len(found) == len(keys), output
    return found


def table_rows(text: str) -> list[list[str]]:
    """Rows of a tabulate 'simple' table (header, dashed rule, rows)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    rule = next(i for i, ln in enumerate(lines) if set(ln.replace(" ", "")) == {"-"})
    return [ln.split() for ln in lines[rule + 1 :]]


def ecn_profiles(text: str) -> dict[str, dict[str, str]]:
    """`show ecn`: 'Profile: NAME' then a ruled two-column table per profile."""
    profiles: dict[str, dict[str, str]] = {}
    for block in text.split("Profile: ")[1:]:
        name, *rows = block.splitlines()
        profiles[name.strip()] = dict(r.split() for r in rows if r.strip() and not r.startswith("-"))
    return profiles


def read_back(conn: Any, ports: tuple[str, ...]) -> dict[str, Any]:
    """What the switch holds, in the desired record's terms, from show commands only."""
    pfc = {
        row[0]: row[1] if len(row) > 1 else "" for row in table_rows(conn.send_command("show pfc priority"))
    }
    watchdog = {row[0]: row[1:4] for row in table_rows(conn.send_command("show pfcwd config"))}
    profiles = ecn_profiles(conn.send_command("show ecn"))
    port_qos = dict(zip(ports, db_fields(conn, *(f"PORT_QOS_MAP|{p}" for p in ports)), strict=True))
    port_fields = dict(zip(ports, db_fields(conn, *(f"PORT|{p}" for p in ports)), strict=True))
    out: dict[str, Any] = {"ports": {}}
    for port in ports:
        qos = port_qos[port]
        dscp_map, tc_queue = db_fields(
            conn, f"DSCP_TO_TC_MAP|{qos['dscp_to_tc_map']}", f"TC_TO_QUEUE_MAP|{qos['tc_to_queue_map']}"
        )
        tcs = sorted(set(dscp_map.values()) | {"0"}, key=int)
        queue_fields = db_fields(conn, *(f"QUEUE|{port}|{tc_queue[tc]}" for tc in tcs))
        schedulers = db_fields(conn, *(f"SCHEDULER|{q['scheduler']}" for q in queue_fields))
        queues = {}
        for tc, queue, scheduler in zip(tcs, queue_fields, schedulers, strict=True):
            wred = profiles.get(queue.get("wred_profile", ""), {})
            queues[int(tc)] = {
                "scheduler": scheduler["type"],
                "weight": scheduler.get("weight"),
                "ecn": (
                    wred["green_min_threshold"],
                    wred["green_max_threshold"],
                    wred["green_drop_probability"],
                )
                if wred.get("ecn") == "ecn_all"
                else None,
            }
        out["ports"][port] = {
            "trust": "dscp" if "dscp_to_tc_map" in qos else "other",
            "dscp_to_tc": {int(d): int(t) for d, t in dscp_map.items()},
            "pfc": pfc[port],
            "queues": queues,
            "watchdog": watchdog.get(port),
            "mtu": int(port_fields[port]["mtu"]),
        }
    return out


def expected_read_back(switch: DesiredSwitch) -> dict[str, Any]:
    out: dict[str, Any] = {"ports": {}}
    for port in switch.ports:
        queues = {}
        for tc in sorted(set(switch.dscp_to_traffic_class.values()) | {0}):
            q = switch.queue(tc)
            assert q is not None
            queues[tc] = {
                "scheduler": "STRICT" if q.scheduler == "strict" else "DWRR",
                "weight": None if q.weight_percent is None else str(q.weight_percent),
                "ecn": (str(q.ecn_min_bytes), str(q.ecn_max_bytes), str(q.ecn_probability))
                if q.ecn
                else None,
            }
        wd = switch.watchdog
        out["ports"][port.port] = {
            "trust": port.trust,
            "dscp_to_tc": switch.dscp_to_traffic_class,
            "pfc": ",".join(str(p) for p in port.pfc_priorities),
            "queues": queues,
            "watchdog": [wd.action, str(wd.detection_ms), str(wd.restoration_ms)]
            if port.pfc_watchdog
            else None,
            "mtu": port.mtu,
        }
    return out


# -- converge, idempotence, read back ----------------------------------------------------------------


def test_converge_from_factory_then_nothing_to_do(lab: Any) -> None:
    factory = lab.state("sonic-conv")["running"]
    first = push_to(lab, "sonic-conv")
    assert first.changed and "add /DSCP_TO_TC_MAP/FABCHECK" in first.diff
    assert json.loads(first.before) == managed_state(factory)
    state = lab.state("sonic-conv")
    assert json.loads(first.after) == managed_state(state["running"])
    assert state["startup"] == state["running"]  # saved
    assert state["checkpoints"] == {} and state["files"] == {}  # nothing left behind
    again = push_to(lab, "sonic-conv")
    assert (again.changed, again.diff, again.before, again.after) == (False, "", first.after, first.after)
    assert lab.state("sonic-conv")["running"] == state["running"]
    with session(lab, "sonic-conv") as conn:
        assert read_back(conn, PORTS["sonic"]) == expected_read_back(desired("sonic-conv"))
    operational = lab.state("sonic-conv")["operational"]["Ethernet0"]  # the mock's own model of DSCP 26
    assert (operational["roce_queue"], operational["pfc_priorities"], operational["ecn_queues"]) == (
        3,
        [3],
        [3],
    )


def test_running_is_the_managed_tables_in_config_db_terms(lab: Any) -> None:
    with session(lab, "sonic-conv") as conn:
        shown = json.loads(SonicDriver(conn).running())
    running = lab.state("sonic-conv")["running"]
    assert shown == managed_state(running)
    assert shown["PORT"]["Ethernet0"] == {"mtu": running["PORT"]["Ethernet0"]["mtu"]}
    assert "DEVICE_METADATA" not in shown and "AZURE" in shown["DSCP_TO_TC_MAP"]


# -- faults: check mode shows exactly the drift, a push repairs exactly it ---------------------------

# The plan names the ports the updater will take admin-down, then the operations.
FAULT_DIFFS = {
    "switch-pfc-prio": [
        "disruption: config apply-patch takes 1 port(s) admin-down and up again while it changes their "
        "QoS tables: Ethernet0 (PORT_QOS_MAP); roll out one switch at a time with the gate between",
        'replace /PORT_QOS_MAP/Ethernet0/pfc_enable: "4" -> "3"',
    ],
    "switch-ecn-off": [
        "disruption: config apply-patch takes 4 port(s) admin-down and up again while it changes their "
        "QoS tables: "
        + ", ".join(f"{p} (QUEUE)" for p in PORTS["sonic"])
        + "; roll out one switch at a time with the gate between",
        *(f'add /QUEUE/{p}|3/wred_profile: "FABCHECK_ECN_TC3"' for p in PORTS["sonic"]),
    ],
}


@pytest.mark.parametrize("fault", sorted(FAULT_DIFFS))
def test_fault_is_shown_in_check_mode_and_repaired_alone(lab: Any, fault: str) -> None:
    push_to(lab, "sonic-fault")
    converged = lab.state("sonic-fault")["running"]
    inject_switch_fault(lab.run_dir, "sonic-fault", fault)
    try:
        drifted = lab.state("sonic-fault")["running"]
        assert drifted != converged
        checked = push_to(lab, "sonic-fault", check=True)
        assert checked.changed and checked.diff.splitlines() == FAULT_DIFFS[fault]
        after_check = lab.state("sonic-fault")
        assert after_check["running"] == drifted  # check mode changed nothing
        assert after_check["checkpoints"] == {} and after_check["files"] == {}
        repaired = push_to(lab, "sonic-fault")
        assert repaired.changed and repaired.diff.splitlines() == FAULT_DIFFS[fault]
        assert lab.state("sonic-fault")["running"] == converged
    finally:
        heal_switch_fault(lab.run_dir, "sonic-fault", fault)
    assert lab.state("sonic-fault")["running"] == converged


def test_non_default_intent_over_the_default_changes_what_the_switch_holds(lab: Any) -> None:
    push_to(lab, "sonic-nondef")
    with session(lab, "sonic-nondef") as conn:
        assert read_back(conn, PORTS["sonic"]) == expected_read_back(desired("sonic-nondef"))
    result = push_to(lab, "sonic-nondef", NON_DEFAULT_INTENT)
    assert result.changed
    wanted = desired("sonic-nondef", NON_DEFAULT_INTENT)
    with session(lab, "sonic-nondef") as conn:
        held = read_back(conn, PORTS["sonic"])
        assert held == expected_read_back(wanted)
        assert conn.send_command("ecnconfig -q 4") == "ECN status:\nqueue 4: on"
        assert conn.send_command("ecnconfig -q 3") == "ECN status:\nqueue 3: off"
    assert held["ports"]["Ethernet0"]["dscp_to_tc"] == {24: 4, 46: 5}
    assert held["ports"]["Ethernet0"]["pfc"] == "4" and held["ports"]["Ethernet0"]["mtu"] == 9100
    assert held["ports"]["Ethernet0"]["queues"][4]["ecn"] == ("200000", "2000000", "50")
    assert held["ports"]["Ethernet0"]["queues"][5]["scheduler"] == "STRICT"
    assert not push_to(lab, "sonic-nondef", NON_DEFAULT_INTENT).changed


# -- a commit the switch refuses is rolled back to the checkpoint ------------------------------------


class FaultBeforeCommit(SonicDriver):
    """Someone else changes the switch between our dry-run and our apply (the patch then fails)."""

    run_dir: Path

    def commit(self) -> None:
        inject_switch_fault(self.run_dir, "sonic-roll", "switch-ecn-off")
        super().commit()


def test_a_refused_commit_rolls_back_to_the_checkpoint(lab: Any) -> None:
    before = lab.state("sonic-roll")["running"]  # factory: queue 3 carries AZURE_LOSSLESS
    with session(lab, "sonic-roll") as conn:
        driver = FaultBeforeCommit(conn)
        driver.run_dir = lab.run_dir
        with pytest.raises(
            PushError, match=r"commit failed and was rolled back.*can't replace a non-existent"
        ) as err:
            push(driver, render_switch(desired("sonic-roll")), check=False)
    assert err.value.rolled_back and "replace /QUEUE/Ethernet0|3/wred_profile" in err.value.diff
    state = lab.state("sonic-roll")
    assert state["running"] == before  # the checkpoint predates the concurrent change too
    assert state["checkpoints"] == {} and state["files"] == {}
    assert any(e["text"].startswith("sudo config rollback fabcheck-") for e in state["log"])
    heal_switch_fault(lab.run_dir, "sonic-roll")
    assert push_to(lab, "sonic-roll").changed


# -- dropped connections -----------------------------------------------------------------------------


def config_line_indices(transcript: list[str]) -> tuple[int, int]:
    """(config lines a push sent, index of its apply line), counted as the mock server counts them."""
    scratch = SonicDevice(SwitchSpec("scratch", "sonic", "127.0.0.1", 22, "admin", "pw", PORTS["sonic"]))
    shell = scratch.new_session("admin")
    count, apply_at = 0, -1
    for line in transcript:
        if line.strip() and shell.is_config_line(line):
            if re.fullmatch(r"sudo config apply-patch fabcheck-patch-\S+\.json", line):
                apply_at = count
            count += 1
        shell.handle(line)
    assert apply_at >= 0, "the push sent no apply line"
    return count, apply_at


def test_dropped_connections_leave_the_previous_config_and_the_next_push_converges(lab: Any) -> None:
    name = "sonic-drop"
    intents: list[dict[str, Any] | None] = [None, NON_DEFAULT_INTENT]
    configs = [render_switch(desired(name, intent)) for intent in intents]
    # Reference pushes in both directions: what a whole push sends, and what each config looks like.
    held, lines = [], []
    for target in (0, 1, 0):
        with session(lab, name) as conn:
            driver = SonicDriver(conn)
            push(driver, configs[target], check=False)
        held.append(lab.state(name)["running"])
        lines.append(config_line_indices(driver.transcript))
    running_of = {0: held[0], 1: held[1]}
    assert held[2] == held[0]
    line_counts = {1: lines[1], 0: lines[2]}  # target -> (lines, apply index) starting from the other one
    current = 0
    conn = connect(lab.login(name))
    outcomes = []
    try:
        for trial in range(DROP_TRIALS):
            target = 1 - current
            total, apply_at = line_counts[target]
            # Spread over the whole push (the last trial cuts at the save); four cut at the apply line.
            drop_at = apply_at if trial % 5 == 2 else trial * (total - 1) // (DROP_TRIALS - 1)
            arm_drop(lab.run_dir, name, drop_at)
            with pytest.raises(PushError) as err:
                push(SonicDriver(conn), configs[target], check=False)
            with contextlib.suppress(Exception):
                conn.disconnect()
            committed = drop_at > apply_at
            state = lab.state(name)
            outcomes.append((drop_at, committed))
            # A cut on the apply line itself is an honest "unknown" (the driver cannot tell whether the
            # switch ran it), so only cuts before it may claim a rollback.
            if drop_at == apply_at:
                assert err.value.rolled_back is False and err.value.unknown, (drop_at, str(err.value))
                assert "OUTCOME IS UNKNOWN" in str(err.value) and "checkpoint" in str(err.value)
                assert state["checkpoints"], "the checkpoint of an unknown outcome is kept"
            else:
                assert err.value.rolled_back is not committed, (drop_at, str(err.value))
            if committed:  # the apply ran; the cut came during verify or save
                assert state["running"] == running_of[target], drop_at
            else:
                assert state["running"] == running_of[current], (drop_at, str(err.value))
            conn = connect(lab.login(name))  # a NEW connection converges to the target
            result = push(SonicDriver(conn), configs[target], check=False)
            assert result.changed, drop_at
            if committed:  # only the save was missing
                assert result.diff.startswith("save: /etc/sonic/config_db.json lags"), result.diff
            state = lab.state(name)
            assert state["running"] == running_of[target] and state["startup"] == state["running"]
            assert state["checkpoints"] == {} and state["files"] == {}
            current = target
    finally:
        with contextlib.suppress(Exception):
            conn.disconnect()
    dropped_at = {at for at, _ in outcomes}
    assert len(dropped_at) >= 12 and 0 in dropped_at  # distinct cut points, from the first config line
    assert any(committed for _, committed in outcomes) and sum(not c for _, c in outcomes) >= 15
    assert {apply_at for _, apply_at in line_counts.values()} <= dropped_at


# -- credentials -------------------------------------------------------------------------------------


def test_wrong_password_names_switch_and_user_never_the_password(lab: Any) -> None:
    wrong = "Not-the-pw-" + "x" * 8
    with pytest.raises(ConnectError) as err:
        connect(lab.login("sonic-cred", password=wrong))
    message = str(err.value)
    assert "sonic-cred" in message and "'admin'" in message and "wrong credentials" in message
    assert wrong not in message and lab.specs["sonic-cred"].password not in message


def test_a_traditional_buffer_model_is_refused_before_anything_is_staged(lab: Any) -> None:
    patch = '[{"op": "replace", "path": "/DEVICE_METADATA/localhost/buffer_model", "value": "traditional"}]'
    with session(lab, "sonic-cred") as conn:
        assert "Patch applied successfully." in conn.send_command(
            f"sudo config apply-patch /dev/stdin <<< '{patch}'"
        )
    before = lab.state("sonic-cred")["running"]
    with pytest.raises(PushError, match=r"staging failed.*buffer_model is 'traditional'") as err:
        push_to(lab, "sonic-cred")
    assert err.value.rolled_back
    state = lab.state("sonic-cred")
    assert state["running"] == before and state["checkpoints"] == {} and state["files"] == {}
