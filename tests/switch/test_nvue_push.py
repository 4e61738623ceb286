"""The NVUE driver against the lab's mock Cumulus switch over real SSH (netmiko `cumulus_linux`).

One server for the module; every test has its own switch, so no test depends on another's state.
What a switch holds is read back through `nv show ... -o json` and compared with the desired record
(never with the rendered text), and through the server's dump of the running config.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from mockswitches import MockSwitches, mock_switches
from test_nvue_render import NON_DEFAULT_INTENT, nvue_desired

from fabcheck.desired.switch import DesiredSwitch
from fabcheck.switch.connect import ConnectError, connect
from fabcheck.switch.driver import PushError, PushResult, push
from fabcheck.switch.platforms.nvue import (
    APPLY,
    NvueCommandError,
    NvueDriver,
    needs_save,
    stale_unsets,
)
from fabcheck.switch.render import RenderedConfig, render_switch
from fabcheck_lab.mockswitch import arm_drop, inject_switch_fault

DROP_SWITCHES = ("nv-drop-0", "nv-drop-1", "nv-drop-2", "nv-drop-3")
SWITCHES = (
    "nv-converge",
    "nv-readback",
    "nv-pfc-fault",
    "nv-ecn-fault",
    "nv-intent",
    *DROP_SWITCHES,
    "nv-drop-late",
    "nv-errors",
)
PORTS = ("swp1", "swp2", "swp3", "swp4")  # what tests/switch/mockswitches.py gives an NVUE switch
DROP_TRIALS = 20


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockSwitches]:
    with mock_switches(tmp_path_factory.mktemp("nvue"), dict.fromkeys(SWITCHES, "nvue"), 150) as switches:
        yield switches


def desired(name: str, intent: dict[str, Any] | None = None) -> DesiredSwitch:
    return nvue_desired(intent, name=name, host_ports=PORTS[:3], uplinks=PORTS[3:])


def config(name: str, intent: dict[str, Any] | None = None) -> RenderedConfig:
    return render_switch(desired(name, intent))


def driver(lab: MockSwitches, name: str) -> NvueDriver:
    return NvueDriver(connect(lab.login(name)))


def show(drv: NvueDriver, what: str) -> Any:
    return json.loads(drv.command(f"nv show {what} -o json"))


def read_back(drv: NvueDriver, ports: tuple[str, ...]) -> dict[str, Any]:
    """What the switch says it runs, through its show commands, in the desired record's terms."""
    mapping = show(drv, "qos mapping default-global")
    roce = show(drv, "qos roce")
    ecn = show(drv, "qos congestion-control default-global")["traffic-class"]
    scheduler = show(drv, "qos egress-scheduler default-global")["traffic-class"]
    watchdog = show(drv, "qos pfc-watchdog")
    per_port = {}
    for port in ports:
        status = show(drv, f"interface {port} qos roce status")
        per_port[port] = {
            "pfc": status["pfc"]["pfc-priority"],
            "pfc_rx_tx": (status["pfc"]["rx-enabled"], status["pfc"]["tx-enabled"]),
            "watchdog": show(drv, f"interface {port} qos pfc-watchdog")["state"],
            "mtu": show(drv, f"interface {port} link")["mtu"],
        }
    return {
        "trust": mapping["trust"],
        "dscp": {int(d): entry["switch-priority"] for d, entry in mapping["dscp"].items()},
        "sp_to_tc": tuple(roce["tc-map"][str(sp)]["traffic-class"] for sp in range(8)),
        "ecn": {int(tc): entry for tc, entry in ecn.items()},
        "scheduler": {int(tc): entry for tc, entry in scheduler.items()},
        "watchdog_detection_ms": watchdog["polling-interval"] * watchdog["robustness"],
        "ports": per_port,
    }


def assert_holds(drv: NvueDriver, want: DesiredSwitch) -> None:
    got = read_back(drv, tuple(port.port for port in want.ports))
    assert got["trust"] == {"dscp": "l3", "pcp": "l2"}[want.trust]
    assert {d: got["dscp"][d] for d in want.dscp_to_switch_priority} == want.dscp_to_switch_priority
    assert got["sp_to_tc"] == want.switch_priority_to_traffic_class
    roce = want.queue(want.lossless_traffic_class)
    assert roce is not None and roce.ecn
    marking = got["ecn"][roce.traffic_class]
    assert (marking["ecn"], marking["min-threshold"], marking["max-threshold"], marking["probability"]) == (
        "enable",
        roce.ecn_min_bytes,
        roce.ecn_max_bytes,
        roce.ecn_probability,
    )
    # every class as the record writes it, the unplanned ones at 1 %: at most 100 % of DWRR in all
    expected_schedule = {
        c.traffic_class: {"mode": "strict"} if c.mode == "strict" else {"mode": "dwrr", "bw-percent": c.share}
        for c in want.egress_schedule
    }
    assert got["scheduler"] == expected_schedule
    assert sum(entry.get("bw-percent", 0) for entry in got["scheduler"].values()) <= 100
    assert got["watchdog_detection_ms"] == want.watchdog.detection_ms
    pfc = ",".join(str(p) for p in want.pfc_priorities)
    for port in want.ports:
        assert got["ports"][port.port] == {
            "pfc": pfc,
            "pfc_rx_tx": ("yes", "yes"),
            "watchdog": "enabled",
            "mtu": port.mtu,
        }, port.port


def diff_document(result: PushResult) -> Any:
    return yaml.safe_load(result.diff)


# -- converge, idempotency, read-back ---------------------------------------------------------------


def test_converge_from_factory_then_rerun_changes_nothing(lab: MockSwitches) -> None:
    name = "nv-converge"
    drv, cfg = driver(lab, name), config(name)
    assert lab.state(name)["running"] == {}
    first = push(drv, cfg, check=False)
    assert first.changed and first.diff.startswith("- set:")
    assert yaml.safe_load(first.before) == [{"set": {}}]
    state = lab.state(name)
    assert state["pending"] == {} and state["startup"] == state["running"] != {}
    second = push(drv, cfg, check=False)
    assert (second.changed, second.diff, second.before, second.after) == (False, "", first.after, first.after)
    assert lab.state(name)["running"] == state["running"]
    # CL 5.11 saves on apply: no `nv config save` typed.
    assert not any(entry["text"] == "nv config save" for entry in lab.state(name)["log"])


def test_read_back_equals_the_desired_state(lab: MockSwitches) -> None:
    name = "nv-readback"
    drv = driver(lab, name)
    push(drv, config(name), check=False)
    assert_holds(drv, desired(name))
    # running() is the managed part of the running config, in NVUE's own YAML terms
    (document,) = yaml.safe_load(drv.running())
    running = lab.state(name)["running"]
    assert document == {"set": {"qos": running["qos"], "interface": running["interface"]}}
    assert document["set"]["interface"]["swp1"]["link"]["mtu"] == 9216


# -- faults: check mode shows exactly the drift and changes nothing; a push repairs only it -------


@pytest.mark.parametrize(
    ("name", "fault", "drift"),
    [
        (
            "nv-pfc-fault",
            "switch-pfc-prio",
            [{"set": {"interface": {"swp1": {"qos": {"pfc": {"profile": "default-global"}}}}}}],
        ),
        (
            "nv-ecn-fault",
            "switch-ecn-off",
            [
                {
                    "set": {
                        "qos": {
                            "congestion-control": {
                                "default-global": {"traffic-class": {3: {"ecn": "enable"}}}
                            }
                        }
                    }
                }
            ],
        ),
    ],
)
def test_fault_is_shown_in_check_mode_then_repaired(
    lab: MockSwitches, name: str, fault: str, drift: list[dict[str, Any]]
) -> None:
    drv, cfg = driver(lab, name), config(name)
    push(drv, cfg, check=False)
    healthy = lab.state(name)["running"]
    inject_switch_fault(lab.run_dir, name, fault)
    faulted = lab.state(name)["running"]
    assert faulted != healthy

    check = push(drv, cfg, check=True)
    assert check.changed and diff_document(check) == drift
    assert check.before == check.after
    after_check = lab.state(name)
    assert after_check["running"] == faulted and after_check["pending"] == {}

    repair = push(drv, cfg, check=False)
    assert repair.changed and diff_document(repair) == drift
    repaired = lab.state(name)["running"]
    if fault == "switch-ecn-off":
        assert repaired == healthy
    else:  # the port is back on its profile; the fault's own, now unused, profile is not fabcheck's
        assert repaired["interface"] == healthy["interface"]
        assert {k: v for k, v in repaired["qos"]["pfc"].items() if k != "drift-pfc"} == healthy["qos"]["pfc"]
        assert {k: v for k, v in repaired["qos"].items() if k != "pfc"} == {
            k: v for k, v in healthy["qos"].items() if k != "pfc"
        }
    assert_holds(drv, desired(name))
    assert not push(drv, cfg, check=False).changed


# -- a changed intent: the switch converges, stale fabcheck-owned entries are unset ----------------


def test_non_default_intent_over_the_default_one(lab: MockSwitches) -> None:
    name = "nv-intent"
    drv = driver(lab, name)
    push(drv, config(name), check=False)
    before = lab.state(name)["running"]
    result = push(drv, config(name, NON_DEFAULT_INTENT), check=False)
    assert result.changed
    unset = next(doc["unset"] for doc in diff_document(result) if "unset" in doc)
    # PFC priority 3, DSCPs 26 and 48 (sent to the old lossless and CNP classes), ECN on the now
    # unused queue 3, and the 1 % share of class 5, now the strict CNP class; the old RoCE and CNP
    # classes 3 and 6 stay scheduled, at the 1 % of a class no switch priority reaches
    # (default-global's DWRR stays within 100 %: nothing goes back to the factory 12-13 %)
    assert unset == {
        "qos": {
            "pfc": {"default-global": {"switch-priority": {3: {}}}},
            "mapping": {"default-global": {"dscp": {26: {"switch-priority": 3}, 48: {"switch-priority": 6}}}},
            "egress-scheduler": {"default-global": {"traffic-class": {5: {"bw-percent": 1}}}},
            "congestion-control": {
                "default-global": {
                    "traffic-class": {
                        3: {
                            "min-threshold": 150000,
                            "max-threshold": 1500000,
                            "probability": 100,
                            "ecn": "enable",
                        }
                    }
                }
            },
        }
    }
    assert lab.state(name)["running"] != before
    assert_holds(drv, desired(name, NON_DEFAULT_INTENT))
    held = read_back(drv, PORTS)
    assert set(held["ecn"]) == {0, 4}  # queue 3 back to the switch's default (no entry), 0 is default
    assert (held["dscp"][26], held["dscp"][48]) == (3, 6)  # the switch's own map again (DSCP >> 3)
    assert all(port["pfc"] == "4" for port in held["ports"].values())
    assert not push(drv, config(name, NON_DEFAULT_INTENT), check=False).changed
    # and back: the default intent converges again, to exactly what it held before
    assert push(drv, config(name), check=False).changed
    assert lab.state(name)["running"] == before


# -- dropped connections ---------------------------------------------------------------------------


def typed_sequence(lab: MockSwitches, name: str, cfg: RenderedConfig) -> list[str]:
    """The config lines a push of cfg types from the current state, up to and with the apply."""
    unsets = stale_unsets(cfg.lines, lab.state(name)["running"])
    return ["nv config detach", *cfg.lines, *unsets, APPLY]


def drops(lab: MockSwitches, name: str) -> list[str]:
    return [entry["text"] for entry in lab.state(name)["log"] if entry["event"] == "drop"]


def test_dropped_connection_before_apply_leaves_the_previous_config(lab: MockSwitches) -> None:
    # Spread over a few switches: the mock rewrites a switch's whole log after every line it runs.
    intents = (None, NON_DEFAULT_INTENT)
    drivers, holds = {}, {}
    for name in DROP_SWITCHES:
        drivers[name] = driver(lab, name)
        push(drivers[name], config(name), check=False)
        holds[name] = 0  # index into intents
    dropped_at = []
    for trial in range(DROP_TRIALS):
        name = DROP_SWITCHES[trial % len(DROP_SWITCHES)]
        wanted = 1 - holds[name]
        target = config(name, intents[wanted])
        previous = lab.state(name)["running"]
        sequence = typed_sequence(lab, name, target)
        after_lines = round(trial * (len(sequence) - 1) / (DROP_TRIALS - 1))  # first line .. the apply
        dropped_at.append(after_lines)
        drops_before = len(drops(lab, name))
        arm_drop(lab.run_dir, name, after_lines)
        with pytest.raises(PushError) as err:
            push(drivers[name], target, check=False)
        assert err.value.rolled_back and "connection lost" in str(err.value), err.value
        assert drops(lab, name)[drops_before:] == [f"connection dropped before: {sequence[after_lines]}"]
        assert lab.state(name)["running"] == previous, (trial, after_lines)
        drivers[name] = driver(lab, name)  # a new connection; the stale pending revision must not block it
        result = push(drivers[name], target, check=False)
        assert result.changed and lab.state(name)["pending"] == {}
        holds[name] = wanted
    assert dropped_at[0] == 0 and dropped_at[-1] == len(sequence) - 1  # the first line .. the apply
    assert len(set(dropped_at)) == DROP_TRIALS
    for name in DROP_SWITCHES:
        assert_holds(drivers[name], desired(name, intents[holds[name]]))


def test_dropped_connection_after_apply_leaves_the_whole_new_config(lab: MockSwitches) -> None:
    name = "nv-drop-late"
    configs = (config(name), config(name, NON_DEFAULT_INTENT))
    drv = driver(lab, name)
    push(drv, configs[0], check=False)
    converged = {}  # what each config's clean push leaves, to compare with
    for index in (1, 0):
        push(drv, configs[index], check=False)
        converged[index] = lab.state(name)["running"]
    for trial in range(4):
        index = (trial + 1) % 2
        verify_lines = 1 + len(configs[index].lines) + 1  # detach, the lines again, the final detach
        offset = (1, 2, verify_lines // 2, verify_lines)[trial]
        arm_drop(lab.run_dir, name, len(typed_sequence(lab, name, configs[index])) - 1 + offset)
        with pytest.raises(PushError) as err:
            push(drv, configs[index], check=False)
        assert not err.value.rolled_back and "applied" in str(err.value)
        assert drops(lab, name)[-1].startswith("connection dropped before: nv ")
        assert lab.state(name)["running"] == converged[index]
        drv = driver(lab, name)
        assert not push(drv, configs[index], check=False).changed
        assert lab.state(name)["pending"] == {}


# -- refused commands, confirmations, credentials, saving ------------------------------------------


def test_rejected_line_stops_the_push_before_anything_is_applied(lab: MockSwitches) -> None:
    name = "nv-errors"
    drv = driver(lab, name)
    push(drv, config(name), check=False)
    before = lab.state(name)["running"]
    bad = RenderedConfig(
        name, "nvue", config(name).text + "nv set qos pfc default-global switch-priority 9\n"
    )
    with pytest.raises(PushError, match=r"staging failed.*NVUE refused `nv set qos pfc .* 9`.*Error:"):
        push(drv, bad, check=False)
    inverted = RenderedConfig(
        name, "nvue", "nv set qos congestion-control default-global traffic-class 3 min-threshold 9000000\n"
    )
    with pytest.raises(
        PushError, match=r"commit failed.*NVUE refused `nv config apply -y`: Error: Invalid config"
    ):
        push(drv, inverted, check=False)
    foreign = RenderedConfig(name, "nvue", "nv set interface swp1 link mtu 9000\nnv config apply -y\n")
    with pytest.raises(PushError, match="not an `nv set`/`nv unset` line: 'nv config apply -y'"):
        push(drv, foreign, check=False)
    state = lab.state(name)
    assert state["running"] == before and state["pending"] == {}
    assert not push(drv, config(name), check=False).changed


def test_a_confirmation_question_is_declined_not_answered(lab: MockSwitches) -> None:
    name = "nv-errors"
    drv = driver(lab, name)
    before = lab.state(name)["running"]
    assert drv.stage(config(name, NON_DEFAULT_INTENT))
    with pytest.raises(NvueCommandError, match=r"`nv config apply` asked 'Are you sure\? \[y/N\]'; declined"):
        drv.command("nv config apply")
    assert lab.state(name)["running"] == before
    drv.discard()
    assert drv.command("nv config diff") == "" and lab.state(name)["pending"] == {}


def test_wrong_password_names_switch_and_user_never_the_password(lab: MockSwitches) -> None:
    wrong = "Not-the-Cumulus-pw-9"
    login = lab.login("nv-errors", password=wrong)
    with pytest.raises(ConnectError) as err:
        connect(login)
    message = str(err.value)
    assert "nv-errors" in message and "'cumulus'" in message and "wrong credentials" in message
    assert wrong not in message and lab.login("nv-errors").password not in message


def test_save_only_where_apply_does_not_save() -> None:
    assert needs_save("Cumulus Linux 5.8.0") and needs_save("Cumulus Linux 4.4.5") and needs_save(None)
    assert not needs_save("Cumulus Linux 5.9.1") and not needs_save("Cumulus Linux 5.11.0")
    assert APPLY == "nv config apply -y"


# -- stale fabcheck-owned entries (pure) -----------------------------------------------------------


def test_stale_unsets_touch_only_fabcheck_owned_entries() -> None:
    lines = config("leaf01").lines
    running = {
        "qos": {
            "pfc": {
                "default-global": {"switch-priority": {"3": {}, "4": {}}},
                "operator-pfc": {"switch-priority": {"1": {}}},
            },
            "mapping": {
                "default-global": {
                    "dscp": {
                        "26": {"switch-priority": 3},
                        "27": {"switch-priority": 3},  # into the lossless class, not in the intent
                        "34": {"switch-priority": 4},  # into a priority that runs PFC (stale lossless)
                        "10": {"switch-priority": 1},  # an operator's class: untouched
                    }
                }
            },
            "congestion-control": {
                "default-global": {"traffic-class": {"3": {"ecn": "enable"}, "0": {"ecn": "enable"}, "5": {}}}
            },
        }
    }
    assert stale_unsets(lines, running) == [
        "nv unset qos pfc default-global switch-priority 4",
        "nv unset qos mapping default-global dscp 27",
        "nv unset qos mapping default-global dscp 34",
        "nv unset qos congestion-control default-global traffic-class 5",
    ]
    assert stale_unsets(lines, copy.deepcopy({})) == []
