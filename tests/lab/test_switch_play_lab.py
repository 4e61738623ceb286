"""site.yml's switch play over real netmiko against the lab's mock switches (one per platform).

One class fixture drives the sequence and records every run; each test asserts one step: check mode
on factory switches changes nothing, a run converges every platform, a rerun changes nothing, a
drifted switch shows exactly its drift under --check --diff and is repaired alone, a connection cut
mid-push leaves the previous config and fails the play, wrong credentials fail without the secret,
`--tags pfc` on switches drifted in PFC and ECN repairs only PFC (the untagged run after it the rest),
and a non-default intent changes what every platform holds, read back through its show commands.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from labsupport import REPO, PlaybookRun, requires_lab, run_playbook, running_lab

from fabcheck.switch.connect import SwitchLogin, connect
from fabcheck_lab import faults
from fabcheck_lab.mockswitch import SWITCH_PLATFORMS, arm_drop, state_path
from fabcheck_lab.state import LabPaths, LabState, NodeRecord

pytestmark = [pytest.mark.lab, requires_lab]

SWITCHES = ("leaf01", "leaf02", "leaf03")  # nvue, sonic, eos: the lab cycles platforms in this order
DRIFTED = "leaf02"
CUT = "leaf03"
WRONG_PASSWORD = "Not-The-Lab-Password-7"


PLATFORM_OF = {"leaf01": "nvue", "leaf02": "sonic", "leaf03": "eos"}
# The lab intent with every switch-facing value changed (docs/intent.md).
NON_DEFAULT = {
    "lossless": {"dscp": [24], "priority": 4, "pfc": True},
    "cnp": {"dscp": 46, "priority": 5},
    "congestion_control": "pfc_only",
    "ecn": {"min_bytes": 200000, "max_bytes": 2000000, "probability": 50},
    "roce_tos": 98,  # DSCP 24
    "mtu": {"netdev": 9000, "rdma": 4096, "switch": 9100},
}


@dataclass
class Story:
    runs: dict[str, PlaybookRun] = field(default_factory=dict)
    running: dict[str, dict[str, Any]] = field(default_factory=dict)  # step -> switch -> running config
    shown: dict[str, dict[str, Any]] = field(default_factory=dict)  # step -> switch -> show commands


def run_switch_play(paths: LabPaths, *options: str) -> PlaybookRun:
    return run_playbook(paths, "--limit", "switches", *options)


def running_configs(paths: LabPaths) -> dict[str, Any]:
    return {name: json.loads(state_path(paths.run_dir, name).read_text())["running"] for name in SWITCHES}


# -- the mock's running config, by concern ---------------------------------------------------------


def pfc_part(name: str, running: dict[str, Any]) -> Any:
    platform = PLATFORM_OF[name]
    if platform == "nvue":  # the fault's own profile (not fabcheck's) stays; the ports' binding is ours
        return {port: node.get("qos", {}).get("pfc") for port, node in running["interface"].items()}
    if platform == "sonic":
        return {port: entry.get("pfc_enable") for port, entry in running["PORT_QOS_MAP"].items()}
    return {
        port: (node.get("pfc"), node.get("pfc_priorities")) for port, node in running["interfaces"].items()
    }


def ecn_part(name: str, running: dict[str, Any]) -> Any:
    platform = PLATFORM_OF[name]
    if platform == "nvue":
        return running["qos"]["congestion-control"]
    if platform == "sonic":
        return {key: entry.get("wred_profile") for key, entry in running["QUEUE"].items()}, running.get(
            "WRED_PROFILE"
        )
    return {
        (kind, block, queue): settings.get("ecn")
        for kind in ("qos_profiles", "interfaces")
        for block, node in running[kind].items()
        for queue, settings in node.get("tx_queues", {}).items()
    }


# -- what the switches say, through their own show commands over netmiko ----------------------------


def login(paths: LabPaths, node: NodeRecord) -> SwitchLogin:
    return SwitchLogin(
        name=node.name,
        device_type=SWITCH_PLATFORMS[node.profile],
        address=node.address,
        port=node.port,
        username=node.username,
        password=paths.switch_password.read_text().strip(),
        known_hosts=paths.known_hosts,
    )


def shown_nvue(conn: Any, port: str) -> dict[str, Any]:
    def show(what: str) -> Any:
        return json.loads(conn.send_command(f"nv show {what} -o json"))

    to_tc = show("qos roce")["tc-map"]
    mapping = show("qos mapping default-global")["dscp"]
    marking = show("qos congestion-control default-global").get("traffic-class", {})
    pfc = show(f"interface {port} qos roce status")["pfc"]["pfc-priority"]
    return {
        "pfc": tuple(int(p) for p in str(pfc).split(",") if p),
        "dscp_tc": {
            dscp: to_tc[str(mapping[str(dscp)]["switch-priority"])]["traffic-class"]
            for dscp in (24, 26)
            if str(dscp) in mapping
        },
        "ecn": {
            int(tc): (entry["min-threshold"], entry["max-threshold"], entry["probability"])
            for tc, entry in marking.items()
            if entry.get("ecn") == "enable"
        },
        "mtu": show(f"interface {port} link")["mtu"],
    }


def shown_sonic(conn: Any, port: str) -> dict[str, Any]:
    def hgetall(key: str) -> dict[str, str]:
        return ast.literal_eval(conn.send_command(f'sonic-db-cli CONFIG_DB hgetall "{key}"').strip())

    rows = (line.split() for line in conn.send_command("show pfc priority").splitlines())
    pfc = {cells[0]: cells[1:] for cells in rows if cells}
    dscp_map = hgetall(f"DSCP_TO_TC_MAP|{hgetall(f'PORT_QOS_MAP|{port}')['dscp_to_tc_map']}")
    profiles: dict[str, dict[str, str]] = {}
    for block in conn.send_command("show ecn").split("Profile: ")[1:]:
        profile, *rows = block.splitlines()
        profiles[profile.strip()] = dict(r.split() for r in rows if r.strip() and not r.startswith("-"))
    ecn = {}
    for tc in (3, 4):
        if conn.send_command(f"ecnconfig -q {tc}").strip().endswith(f"queue {tc}: on"):
            wred = profiles[hgetall(f"QUEUE|{port}|{tc}")["wred_profile"]]
            ecn[tc] = tuple(
                int(wred[f"green_{f}"]) for f in ("min_threshold", "max_threshold", "drop_probability")
            )
    return {
        "pfc": tuple(int(p) for p in ",".join(pfc.get(port, [])).split(",") if p),
        "dscp_tc": {dscp: int(dscp_map[str(dscp)]) for dscp in (24, 26) if str(dscp) in dscp_map},
        "ecn": ecn,
        "mtu": int(hgetall(f"PORT|{port}")["mtu"]),
    }


def shown_eos(conn: Any, port: str) -> dict[str, Any]:
    conn.enable()
    queues = json.loads(conn.send_command("show qos interfaces | json"))["intfQosConfig"][port]["txQueues"]
    pfc = json.loads(conn.send_command("show priority-flow-control | json"))["interfaceStatuses"][port]
    maps = conn.send_command("show running-config section qos map dscp")
    mtu = re.search(rf"^{port}:\n(?:.*\n)*?   MTU: (\d+)$", conn.send_command("show qos interfaces"), re.M)
    dscp_tc = {
        int(dscp): int(tc)
        for dscps, tc in re.findall(r"^qos map dscp ([\d ]+) to traffic-class (\d+)$", maps, re.M)
        for dscp in dscps.split()
    }
    return {
        "pfc": tuple(pfc["priorities"]),
        "dscp_tc": {dscp: tc for dscp, tc in dscp_tc.items() if dscp in (24, 26)},
        "ecn": {
            int(tc): (q["ecn"]["minThreshold"], q["ecn"]["maxThreshold"], q["ecn"]["maxMarkProbability"])
            for tc, q in queues.items()
            if q.get("ecn")
        },
        "mtu": int(mtu.group(1)) if mtu else None,
    }


SHOWN = {"nvue": shown_nvue, "sonic": shown_sonic, "eos": shown_eos}


def show_switches(paths: LabPaths, state: LabState) -> dict[str, Any]:
    """Per switch, from its show commands: PFC priorities, DSCP 24/26 -> traffic class, the ECN
    thresholds per marking queue and the MTU of its first port (the one the lab's PFC fault moves)."""
    shown = {}
    for node in state.switch_nodes():
        conn = connect(login(paths, node))
        try:
            shown[node.name] = SHOWN[node.profile](conn, node.ports[0])
        finally:
            conn.disconnect()
    return shown


def non_default_vars(tmp: Path) -> Path:
    """An extra-vars file: the lab's RoCE intent with NON_DEFAULT over it."""
    lab_vars = yaml.safe_load((REPO / "inventory/lab/group_vars/all/fabric.yml").read_text())
    intent = lab_vars["lab_intents"]["roce"] | NON_DEFAULT
    intent["nccl"] = intent["nccl"] | {"traffic_class": NON_DEFAULT["roce_tos"]}
    path = tmp / "non_default_intent.yml"
    path.write_text(yaml.safe_dump({"fabric_intent": intent}))
    return path


@pytest.fixture(scope="class")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    story = Story()
    with running_lab(profile="roce", hosts=2, switches=3) as (paths, state):
        story.running["factory"] = running_configs(paths)
        story.runs["check"] = run_switch_play(paths, "--check", "--diff")
        story.running["after_check"] = running_configs(paths)
        story.runs["apply"] = run_switch_play(paths)
        story.running["applied"] = running_configs(paths)
        story.runs["again"] = run_switch_play(paths)
        faults.inject(paths, "switch-pfc-prio", DRIFTED)
        story.running["drifted"] = running_configs(paths)
        story.runs["drift_check"] = run_switch_play(paths, "--check", "--diff")
        story.running["after_drift_check"] = running_configs(paths)
        story.runs["repair"] = run_switch_play(paths, "--diff")
        story.running["repaired"] = running_configs(paths)
        story.runs["wrong_password"] = run_switch_play(paths, "-e", f"switch_password={WRONG_PASSWORD}")
        # A cut in the middle of the push: drift leaf03 first so that the push has lines to send.
        faults.inject(paths, "switch-ecn-off", CUT)
        story.running["before_cut"] = running_configs(paths)
        arm_drop(paths.run_dir, CUT, 1)
        story.runs["cut"] = run_switch_play(paths, "--limit", CUT)
        story.running["after_cut"] = running_configs(paths)
        story.runs["after_cut"] = run_switch_play(paths, "--limit", CUT)
        # The faults of the steps above were repaired by pushes, not healed: clear them (a no-op on
        # the switches) so they inject again.
        for name in SWITCHES:
            faults.heal(paths, name)
        story.running["converged"] = running_configs(paths)
        story.shown["converged"] = show_switches(paths, state)
        # PFC and ECN drift on every platform; a PFC-only run, then an untagged one.
        for name in SWITCHES:
            for fault in ("switch-pfc-prio", "switch-ecn-off"):
                assert faults.inject(paths, fault, name), (fault, name)
        story.running["double_drift"] = running_configs(paths)
        story.runs["pfc_only"] = run_switch_play(paths, "--tags", "pfc", "--diff")
        story.running["pfc_only"] = running_configs(paths)
        story.shown["pfc_only"] = show_switches(paths, state)
        story.runs["the_rest"] = run_switch_play(paths)
        story.running["the_rest"] = running_configs(paths)
        story.shown["the_rest"] = show_switches(paths, state)
        # A non-default intent over the converged lab, then the same again.
        extra = f"@{non_default_vars(tmp_path_factory.mktemp('intent'))}"
        story.runs["non_default"] = run_switch_play(paths, "-e", extra)
        story.shown["non_default"] = show_switches(paths, state)
        story.runs["non_default_again"] = run_switch_play(paths, "-e", extra)
        yield story


class TestSwitchPlay:
    def test_check_mode_on_factory_switches_changes_nothing(self, story: Story) -> None:
        run = story.runs["check"]
        assert run.rc == 0, run.output[-4000:]
        assert all(run.changed[name] >= 1 for name in SWITCHES), run.output[-4000:]
        assert story.running["after_check"] == story.running["factory"]

    def test_a_run_converges_every_platform_and_a_rerun_changes_nothing(self, story: Story) -> None:
        apply, again = story.runs["apply"], story.runs["again"]
        assert apply.rc == 0, apply.output[-4000:]
        assert all(apply.changed[name] >= 1 for name in SWITCHES)
        for name in SWITCHES:
            assert story.running["applied"][name] != story.running["factory"][name], name
        assert again.rc == 0, again.output[-4000:]
        assert again.changed == dict.fromkeys(SWITCHES, 0), again.output[-4000:]

    def test_drift_shows_in_check_mode_and_is_repaired_alone(self, story: Story) -> None:
        check, repair = story.runs["drift_check"], story.runs["repair"]
        assert check.rc == 0, check.output[-4000:]
        assert check.changed == {"leaf01": 0, DRIFTED: 1, "leaf03": 0}, check.output[-4000:]
        assert story.running["after_drift_check"] == story.running["drifted"]
        assert repair.rc == 0 and repair.changed == {"leaf01": 0, DRIFTED: 1, "leaf03": 0}, repair.output[
            -4000:
        ]
        assert story.running["repaired"] == story.running["applied"]

    def test_wrong_credentials_fail_without_the_secret(self, story: Story) -> None:
        run = story.runs["wrong_password"]
        assert run.rc != 0
        assert "login refused for user" in run.output and "leaf01" in run.output, run.output[-4000:]
        assert WRONG_PASSWORD not in run.output
        # serial 1 with max_fail_percentage 0: the first failure stops the rollout.
        assert run.failed.get("leaf01") == 1 and "leaf02" not in run.changed and "leaf03" not in run.changed

    def test_a_cut_connection_leaves_the_previous_config(self, story: Story) -> None:
        cut, after = story.runs["cut"], story.runs["after_cut"]
        assert cut.rc != 0 and cut.failed.get(CUT) == 1, cut.output[-4000:]
        assert story.running["after_cut"] == story.running["before_cut"]
        assert after.rc == 0 and after.changed == {CUT: 1}, after.output[-4000:]

    def test_a_pfc_run_repairs_only_pfc_and_an_untagged_run_the_rest(self, story: Story) -> None:
        pfc_only, rest = story.runs["pfc_only"], story.runs["the_rest"]
        assert pfc_only.rc == 0 and pfc_only.changed == dict.fromkeys(SWITCHES, 1), pfc_only.output[-4000:]
        drifted, after_pfc = story.running["double_drift"], story.running["pfc_only"]
        converged, repaired = story.running["converged"], story.running["the_rest"]
        for name in SWITCHES:
            assert pfc_part(name, drifted[name]) != pfc_part(name, converged[name]), name
            assert ecn_part(name, drifted[name]) != ecn_part(name, converged[name]), name
            assert pfc_part(name, after_pfc[name]) == pfc_part(name, converged[name]), name
            assert ecn_part(name, after_pfc[name]) == ecn_part(name, drifted[name]), name  # untouched
        assert rest.rc == 0 and rest.changed == dict.fromkeys(SWITCHES, 1), rest.output[-4000:]
        for name in SWITCHES:
            assert ecn_part(name, repaired[name]) == ecn_part(name, converged[name]), name
            assert pfc_part(name, repaired[name]) == pfc_part(name, converged[name]), name
        # What the switches themselves say: PFC back on 3 after the PFC run, ECN on queue 3 only after
        # the untagged one.
        converged_shown = story.shown["converged"]
        for name in SWITCHES:
            assert converged_shown[name]["pfc"] == (3,) and 3 in converged_shown[name]["ecn"], name
            assert story.shown["pfc_only"][name]["pfc"] == (3,), name
            assert 3 not in story.shown["pfc_only"][name]["ecn"], name
            assert story.shown["the_rest"][name] == converged_shown[name], name

    def test_a_non_default_intent_changes_what_every_platform_holds(self, story: Story) -> None:
        run, again = story.runs["non_default"], story.runs["non_default_again"]
        assert run.rc == 0 and run.changed == dict.fromkeys(SWITCHES, 1), run.output[-4000:]
        assert again.rc == 0 and again.changed == dict.fromkeys(SWITCHES, 0), again.output[-4000:]
        ecn = NON_DEFAULT["ecn"]
        for name in SWITCHES:
            shown = story.shown["non_default"][name]
            assert shown["pfc"] == (4,), (name, shown)
            assert shown["dscp_tc"].get(24) == 4, (name, shown)  # DSCP 24 on the lossless class
            assert shown["ecn"].get(4) == (ecn["min_bytes"], ecn["max_bytes"], ecn["probability"]), shown
            assert 3 not in shown["ecn"], (name, shown)  # the old lossless queue marks no more
            assert shown["mtu"] == 9100, (name, shown)
            assert shown != story.shown["converged"][name]
