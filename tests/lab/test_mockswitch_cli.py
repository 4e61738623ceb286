"""Mock switch CLIs driven in-process (no SSH): grammar, validation, show layouts, faults, counters."""

from __future__ import annotations

import ast
import copy
import json
import re

import pytest
from conftest import CORPUS

from fabcheck.parsers.switch_eos import parse_queue_drops, parse_watchdog_counters
from fabcheck.parsers.switch_records import QueueDrops, WatchdogStatus
from fabcheck_lab.mockswitch.device import Counters, PortQos
from fabcheck_lab.mockswitch.eos import EosDevice
from fabcheck_lab.mockswitch.nvue import NvueDevice
from fabcheck_lab.mockswitch.sonic import SonicDevice
from fabcheck_lab.mockswitch.sonic_db import ConfigDbError, apply_patch
from fabcheck_lab.mockswitch.sonic_shell import ShellSyntaxError, parse
from fabcheck_lab.mockswitch.spec import MockSwitchError, SwitchSpec
from fabcheck_lab.mockswitch.terminal import LineReader

SWITCH_CORPUS = CORPUS / "switch"
ECN_150K_1500K = "random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes"
# An EOS qos profile with PFC no-drop on priority 3, typed from the exec prompt.
EOS_PFC_PROFILE = (
    "enable",
    "configure",
    "qos profile ROCE",
    "priority-flow-control on",
    "priority-flow-control priority 3 no-drop",
)


def nvue(ports: tuple[str, ...] = ("swp1", "swp2", "swp16")) -> NvueDevice:
    return NvueDevice(SwitchSpec("leaf01", "nvue", "127.0.3.1", 2201, "cumulus", "pw", ports))


def sonic(ports: tuple[str, ...] = ("Ethernet0", "Ethernet8")) -> SonicDevice:
    return SonicDevice(SwitchSpec("leaf02", "sonic", "127.0.3.2", 2201, "admin", "pw", ports))


def eos() -> EosDevice:
    return EosDevice(
        SwitchSpec("spine01", "eos", "127.0.3.3", 2201, "admin", "pw", ("Ethernet1", "Ethernet2"))
    )


def run(session, *lines: str) -> str:
    return "".join(session.handle(line) for line in lines)


def corpus_body(name: str) -> str:
    """A recorded capture without its first line (the prompt and command)."""
    return "\n".join((SWITCH_CORPUS / name).read_text().splitlines()[1:])


# -- spec ------------------------------------------------------------------------------------------


def test_spec_rejects_wrong_port_style_and_platform() -> None:
    with pytest.raises(MockSwitchError, match="do not match nvue style"):
        SwitchSpec("leaf01", "nvue", "127.0.3.1", 2201, "cumulus", "pw", ("Ethernet0",))
    with pytest.raises(MockSwitchError, match="platform 'junos'"):
        SwitchSpec("leaf01", "junos", "127.0.3.1", 2201, "u", "pw", ("xe-0/0/0",))


# -- NVUE ------------------------------------------------------------------------------------------


def test_nvue_set_ranges_stage_pending_until_apply() -> None:
    dev = nvue()
    s = dev.new_session("cumulus")
    assert (
        run(
            s,
            "nv set interface swp1-2 link mtu 9000",
            "nv set qos congestion-control default-global traffic-class 4,5,7 min-threshold 40000",
        )
        == "created [rev_id: 2]\n"  # the first nv set of a new revision says so; later ones print nothing
    )
    assert dev.running == {}
    assert dev.pending["interface"]["swp2"]["link"]["mtu"] == 9000
    assert set(dev.pending["qos"]["congestion-control"]["default-global"]["traffic-class"]) == {"4", "5", "7"}
    assert run(s, "nv config apply -y") == "applied_and_saved [rev_id: 2]\n"  # 5.11: auto-save
    assert dev.running["interface"]["swp1"]["link"]["mtu"] == 9000
    assert dev.pending is None
    assert dev.startup == dev.running


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("nv set qos foo", "Error: Invalid Command: nv set qos foo"),
        ("nv set qos", "Error: Incomplete Command: nv set qos"),
        (
            "nv set interface swp1 link mtu 9217",
            "Error: Invalid value '9217' for 'mtu': 9217 is greater than the maximum of 9216",
        ),
        (
            "nv set interface swp9 link mtu 9000",
            "Error: Invalid value 'swp9' for 'interface-id': swp9 does not exist",
        ),
        (
            "nv set qos pfc default-global switch-priority 8",
            "Error: Invalid value '8' for 'switch-priority': must be within 0-7",
        ),
        (
            "nv set qos roce mode lossier",
            "Error: Invalid value 'lossier' for 'mode': expected one of lossless, "
            "lossy, lossless-single-ipool, lossy-multi-tc",
        ),
        ("nv show qos nothing", "Error: The requested item does not exist."),
        ("nvx", "-bash: nvx: command not found"),
    ],
)
def test_nvue_rejects_like_nvue(line: str, message: str) -> None:
    dev = nvue()
    assert dev.new_session("cumulus").handle(line) == message + "\n"
    assert dev.pending is None or dev.pending == dev.running


def test_nvue_apply_asks_and_declines() -> None:
    dev = nvue()
    s = dev.new_session("cumulus")
    assert run(s, "nv set qos roce", "nv config apply") == "created [rev_id: 2]\nAre you sure? [y/N] "
    assert s.prompt() == ""
    assert s.handle("n") == "Declined apply after warnings\n"
    assert dev.running == {} and dev.pending == {"qos": {"roce": {"enable": "on"}}}
    assert run(s, "nv config apply", "y") == "Are you sure? [y/N] applied_and_saved [rev_id: 2]\n"


def test_nvue_apply_refuses_dangling_profile() -> None:
    dev = nvue()
    out = run(
        dev.new_session("cumulus"), "nv set interface swp1 qos pfc profile nosuch", "nv config apply -y"
    )
    assert (
        out == "created [rev_id: 2]\nError: Invalid config [rev_id: 2]\n"
        "  interface swp1: qos pfc profile 'nosuch' does not exist\n"
    )
    assert dev.running == {}


def test_nvue_diff_is_set_and_unset_yaml() -> None:
    dev = nvue()
    s = dev.new_session("cumulus")
    run(
        s,
        "nv set interface swp1 link mtu 9000",
        "nv config apply -y",
        "nv unset interface swp1 link mtu",
        "nv set qos roce mode lossy",
    )
    assert s.handle("nv config diff") == (
        "- set:\n    qos:\n      roce:\n        mode: lossy\n"
        "- unset:\n    interface:\n      swp1:\n        link:\n          mtu: 9000\n"
    )


def test_nvue_sudo_prompt_and_exit() -> None:
    s = nvue().new_session("cumulus")
    assert s.prompt() == "cumulus@leaf01:mgmt:~$ "
    s.handle("sudo -s")
    assert s.prompt() == "root@leaf01:mgmt:/home/cumulus# "
    s.handle("exit")
    assert s.prompt() == "cumulus@leaf01:mgmt:~$ " and not s.closed
    s.handle("exit")
    assert s.closed


def test_nvue_show_qos_roce_matches_recorded_layout() -> None:
    dev = nvue()
    s = dev.new_session("cumulus")
    run(s, "nv set qos roce mode lossless-single-ipool", "nv config apply -y")
    ours = s.handle("nv show qos roce").rstrip("\n").splitlines()
    recorded = corpus_body("cumulus-nvue-show-qos-roce-lossless-single-ipool.txt").splitlines()
    # The recording leaves the operational cell of `state` empty; everything else matches byte for byte.
    assert [ln for ln in ours if not ln.startswith("state")] == [
        ln for ln in recorded if not ln.startswith("state")
    ]


def test_nvue_port_roce_status_follows_recorded_layout() -> None:
    dev = nvue()
    s = dev.new_session("cumulus")
    run(s, "nv set qos roce", "nv config apply -y")
    ours = s.handle("nv show interface swp16 qos roce status").splitlines()
    recorded = corpus_body("cumulus-nvue-interface-swp16-qos-roce-status.txt").splitlines()

    def keys(lines: list[str]) -> list[str]:
        return [ln.split("  ")[0].rstrip() for ln in lines]

    assert keys(ours) == keys(recorded)
    assert ours[:3] == recorded[:3]
    assert "  pfc-priority      3                       switch-prio on which PFC is enabled" in ours
    assert "    roce  3    26    3" in ours
    assert "    cnp   6            6              strict priority" in ours


def test_nvue_json_output_and_counters_move() -> None:
    dev = nvue()
    s = dev.new_session("cumulus")
    run(s, "nv set qos roce", "nv config apply -y")
    data = json.loads(s.handle("nv show qos roce -o json"))
    assert data["pfc"]["pfc-priority"] == "3" and data["congestion-control"]["enabled-tc"] == "0,3"
    idle = [json.loads(s.handle("nv show interface swp1 qos roce counters -o json")) for _ in range(2)]
    paused = [shown["tx-stats"]["tx-pfc-stats"]["pause-packets"] for shown in idle]
    assert idle[0] == idle[1] and paused[1] == 0  # no traffic, no counts
    dev.traffic_feed = lambda: dev.counters.add("swp1", {"pfc_tx": {"3": 2}})  # a flow per show
    first = json.loads(s.handle("nv show interface swp1 qos roce counters -o json"))
    second = json.loads(s.handle("nv show interface swp1 qos roce counters -o json"))
    paused = [shown["tx-stats"]["tx-pfc-stats"]["pause-packets"] for shown in (first, second)]
    assert paused == [2, 4]
    assert second["tx-stats"]["tx-roce-stats"]["unicast-no-buffer-discard"] == 0
    assert s.handle("nv action clear interface swp1 qos roce counters").endswith("Action succeeded\n")
    assert dev.counters.ports["swp1"]["pfc_tx"] == [0] * 8


def test_nvue_faults_change_running_and_heal_restores_exactly() -> None:
    dev = nvue()
    s = dev.new_session("cumulus")
    run(s, "nv set qos roce", "nv config apply -y")
    before = copy.deepcopy(dev.running)
    dev.inject("switch-pfc-prio")
    dev.inject("switch-ecn-off")
    status = s.handle("nv show interface swp1 qos roce status")
    assert re.search(r"^  pfc-priority\s+4\s", status, re.M)
    assert re.search(r"^  enabled-tc\s+0\s", status, re.M)
    assert dev.port_qos()["swp2"].pfc_priorities == (3,)
    dev.heal()
    assert dev.running == before and dev.faults == {}


# -- SONiC -----------------------------------------------------------------------------------------


def test_sonic_factory_config_is_the_stock_azure_template() -> None:
    qos = sonic().port_qos()["Ethernet0"]
    # DSCP 26 lands in TC1 with the stock map: lossless queues are 3 and 4.
    assert qos == PortQos(
        roce_priority=1, roce_queue=1, pfc_priorities=(3, 4), ecn_queues=(3, 4), mtu=9100, trust="dscp"
    )


def test_sonic_pfc_counters_layout_matches_recording() -> None:
    dev = sonic(("Ethernet4", "Ethernet120"))
    out = dev.new_session("admin").handle("show pfc counters")
    recorded = (SWITCH_CORPUS / "sonic-lossless-triage-pg-queue-watermark-pfc-counters.txt").read_text()
    section = recorded.split("# show pfc counters\n", 1)[1]
    assert out == section


def test_sonic_config_needs_root_and_validates_like_click() -> None:
    dev = sonic()
    s = dev.new_session("admin")
    assert s.handle("config interface pfc priority Ethernet0 3 off") == (
        "Root privileges are required for this operation\n"
    )
    assert s.handle("sudo config interface pfc priority Ethernet0 9 on") == (
        "Usage: config interface pfc priority [OPTIONS] <interface_name> <priority> <status>\n"
        'Try "config interface pfc priority -h" for help.\n\n'
        'Error: Invalid value for "<priority>": invalid choice: 9. (choose from 0, 1, 2, 3, 4, 5, 6, 7)\n'
    )
    assert s.handle("sudo config interface pfc priority Ethernet0 4 off") == (
        "Interface    Lossless priorities\n-----------  ---------------------\nEthernet0    3\n"
    )


def test_sonic_heredoc_patch_checkpoint_rollback() -> None:
    dev = sonic()
    s = dev.new_session("admin")
    factory = copy.deepcopy(dev.running)
    s.handle("sudo -s")
    assert "Checkpoint created successfully." in s.handle("config checkpoint pre-roce")
    assert s.handle("cat > roce.json <<'EOF'") == "" and s.prompt() == "> "
    run(
        s,
        '[{"op": "add", "path": "/DSCP_TO_TC_MAP/AZURE/26", "value": "3"},',
        ' {"op": "replace", "path": "/PORT_QOS_MAP/Ethernet0/pfc_enable", "value": "3"}]',
        "EOF",
    )
    assert s.prompt() == "root@leaf02:/home/admin# "
    assert s.handle("config apply-patch roce.json").endswith("Patch applied successfully.\n")
    assert dev.port_qos()["Ethernet0"].roce_queue == 3 and dev.port_qos()["Ethernet0"].pfc_priorities == (3,)
    assert s.handle("config rollback pre-roce").endswith("Config rolled back successfully.\n")
    assert dev.running == factory


def test_sonic_here_string_and_invalid_patch_is_atomic() -> None:
    dev = sonic()
    s = dev.new_session("root")
    before = copy.deepcopy(dev.running)
    patch = json.dumps(
        [
            {"op": "replace", "path": "/PORT/Ethernet0/mtu", "value": "9000"},
            {"op": "replace", "path": "/PORT_QOS_MAP/Ethernet0/pfc_enable", "value": "3,9"},
        ]
    )
    out = s.handle(f"config apply-patch /dev/stdin <<< '{patch}'")
    assert "Failed to apply patch due to: Given patch will produce invalid config." in out
    assert s.last_failed and dev.running == before


def test_apply_patch_refuses_missing_paths_and_dangling_references() -> None:
    db = sonic().running
    with pytest.raises(ConfigDbError, match="can't replace a non-existent object 'Ethernet99'"):
        apply_patch(db, [{"op": "replace", "path": "/PORT/Ethernet99", "value": {}}], ["Ethernet0"])
    with pytest.raises(ConfigDbError, match=r"missing WRED_PROFILE\|NOPE"):
        apply_patch(
            db, [{"op": "add", "path": "/QUEUE/Ethernet0|3/wred_profile", "value": "NOPE"}], ["Ethernet0"]
        )


def test_sonic_ecnconfig_and_faults() -> None:
    dev = sonic()
    s = dev.new_session("admin")
    assert s.handle("ecnconfig -q 3") == "ECN status:\nqueue 3: on\n"
    before = copy.deepcopy(dev.running)
    dev.inject("switch-ecn-off")
    assert s.handle("ecnconfig -q 3") == "ECN status:\nqueue 3: off\n"
    dev.inject("switch-pfc-prio")
    assert "Ethernet0    4\n" in s.handle("show pfc priority")
    dev.heal("switch-ecn-off")
    assert s.handle("ecnconfig -q 3") == "ECN status:\nqueue 3: on\n"
    dev.heal("switch-pfc-prio")
    assert dev.running == before


def test_sonic_db_cli_and_save() -> None:
    dev = sonic()
    s = dev.new_session("admin")
    assert s.handle('sonic-db-cli CONFIG_DB hget "PORT_QOS_MAP|Ethernet0" pfc_enable') == "3,4\n"
    # redis-py's dict repr, fields in the cited factory dump's order (admin_status is not first there)
    port = ast.literal_eval(s.handle('sonic-db-cli CONFIG_DB hgetall "PORT|Ethernet0"'))
    assert port["admin_status"] == "up" and port["mtu"] == "9100"
    s.handle("sudo config interface mtu Ethernet0 9000")
    assert dev.startup["PORT"]["Ethernet0"]["mtu"] == "9100"
    assert s.handle("sudo config save -y").startswith("Running command: /usr/local/bin/sonic-cfggen")
    assert json.loads(s.handle("cat /etc/sonic/config_db.json"))["PORT"]["Ethernet0"]["mtu"] == "9000"


@pytest.mark.parametrize("line", ["echo a |", "| grep x", "cat <", "a && && b"])
def test_shell_syntax_errors(line: str) -> None:
    with pytest.raises(ShellSyntaxError):
        parse(line)


def test_shell_parses_chains_pipes_and_heredoc() -> None:
    chain = parse("sudo config save -y && show pfc counters | grep Ethernet0; cat > p.json <<'EOF'")
    assert [(op, [s.argv for s in p]) for op, p in chain] == [
        (";", [["sudo", "config", "save", "-y"]]),
        ("&&", [["show", "pfc", "counters"], ["grep", "Ethernet0"]]),
        (";", [["cat"]]),
    ]
    assert chain[2][1][0].stdout_file == "p.json" and chain[2][1][0].heredoc == "EOF"


# -- EOS -------------------------------------------------------------------------------------------


def test_eos_session_preparation_answers() -> None:
    s = eos().new_session("admin")
    assert s.prompt() == "spine01>"
    assert s.handle("terminal width 511") == "Width set to 511 columns.\n"
    assert s.handle("terminal length 0") == "Pagination disabled.\n"
    assert s.handle("show running-config") == "% Invalid input (privileged mode required)\n"
    s.handle("enable")
    assert s.prompt() == "spine01#"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("qos mapp dscp 26 to traffic-class 3", "% Invalid input (at token 1: 'mapp')"),
        ("qos map dscp 26", "% Incomplete command"),
        ("qos map dscp 64 to traffic-class 3", "% Invalid input (at token 3: '64')"),
        ("interface Ethernet9", "% Invalid input (at token 1: 'Ethernet9')"),
    ],
)
def test_eos_rejects_like_eos(line: str, message: str) -> None:
    dev = eos()
    s = dev.new_session("admin")
    run(s, "enable", "configure terminal")
    assert s.handle(line) == message + "\n"
    assert dev.running["qos"]["dscp_map"] == {}


def test_eos_ambiguous_abbreviation() -> None:
    s = eos().new_session("admin")
    s.handle("enable")
    assert s.handle("c") == "% Ambiguous command\n"  # configure, copy, clear


def test_eos_abbreviations_and_mode_fallback() -> None:
    dev = eos()
    s = dev.new_session("admin")
    run(s, "en", "conf t", "int Et1", "mtu 9214", "qos map dscp 26 to traffic-class 3")
    assert s.prompt() == "spine01(config)#"  # a global command leaves interface mode
    assert dev.running["interfaces"]["Ethernet1"] == {"mtu": 9214}
    assert "interface Ethernet1\n   mtu 9214" in s.handle("sh run")


def test_eos_session_commit_abort_and_diff() -> None:
    dev = eos()
    s = dev.new_session("admin")
    run(
        s,
        "enable",
        "configure session roce",
        "qos profile ROCE",
        "qos trust dscp",
        "priority-flow-control on",
        "priority-flow-control priority 3 no-drop",
        "uc-tx-queue 3",
        ECN_150K_1500K + " max-mark-probability 100",
        "interface Ethernet1-2",
        "service-profile ROCE",
    )
    assert s.prompt() == "spine01(config-s-roce-if-Et1-2)#"
    diff = s.handle("show session-config diffs")
    assert "+++ session:/roce-session-config" in diff and "+   service-profile ROCE" in diff
    assert dev.port_qos()["Ethernet1"].pfc_priorities == ()
    s.handle("commit")
    assert s.prompt() == "spine01#"
    assert dev.port_qos()["Ethernet2"] == PortQos(3, 3, (3,), (3,), 1500, "dscp")
    committed = copy.deepcopy(dev.running)
    run(s, "configure session oops", "no qos profile ROCE", "abort")
    assert dev.running == committed and dev.sessions == {}


def test_eos_json_models_and_unconverted_text() -> None:
    dev = eos()
    s = dev.new_session("admin")
    run(
        s,
        "enable",
        "configure",
        "interface Ethernet1",
        "priority-flow-control on",
        "priority-flow-control priority 3 no-drop",
        "uc-tx-queue 3",
        ECN_150K_1500K,
        "end",
    )
    counters = json.loads(s.handle("show priority-flow-control counters | json"))
    assert set(counters["interfaceCounters"]) == {"Ethernet1", "Ethernet2"}
    assert counters["interfaceCounters"]["Ethernet2"] == {"rxFrames": 0, "txFrames": 0}
    ecn = json.loads(s.handle("show qos interfaces ecn counters queue | json"))["intfQueueCounters"]
    assert ecn["Ethernet1"]["queueCounters"]["0"] == "-" and ecn["Ethernet2"]["queueCounters"]["3"] == "-"
    assert s.handle("show running-config | json") == "% This is an unconverted command\n"
    status = json.loads(s.handle("show priority-flow-control interfaces Et1 | json"))
    assert status["interfaceStatuses"]["Ethernet1"]["priorities"] == [3]


def test_eos_queue_drops_and_watchdog_counters_read_by_the_gate_parsers() -> None:
    dev = eos()
    s = dev.new_session("admin")
    dev.traffic_feed = lambda: dev.counters.add("Ethernet2", {"drops": {"3": 16}})  # one lossy flow
    drops = s.handle("show interfaces Et2 counters queue detail | json")
    (placed,) = parse_queue_drops(drops, None, "<mock>")
    assert placed == ("Ethernet2", QueueDrops(by_queue=tuple((tc, 16 if tc == 3 else 0) for tc in range(8))))
    assert "Et2   UC3         32" in s.handle("show interfaces counters queue detail")  # a second flow
    quiet = s.handle("show priority-flow-control counters watchdog | json")
    assert json.loads(quiet) == {"interfaces": {}}  # nothing in the lab holds a queue stuck
    assert parse_watchdog_counters(quiet, None, "<mock>") == [(None, WatchdogStatus(()))]


def test_eos_faults_and_heal() -> None:
    dev = eos()
    s = dev.new_session("admin")
    run(
        s,
        *EOS_PFC_PROFILE,
        "uc-tx-queue 3",
        ECN_150K_1500K,
        "interface Ethernet1-2",
        "service-profile ROCE",
        "end",
    )
    before = copy.deepcopy(dev.running)
    dev.inject("switch-pfc-prio")
    dev.inject("switch-ecn-off")
    assert dev.port_qos()["Ethernet1"].pfc_priorities == (4,)
    assert dev.port_qos()["Ethernet2"].pfc_priorities == (3,) and dev.port_qos()["Ethernet2"].ecn_queues == ()
    assert "   priority-flow-control priority 4 no-drop" in s.handle(
        "show running-config interfaces Ethernet1"
    )
    dev.heal()
    assert dev.running == before


# -- shared machinery ------------------------------------------------------------------------------


def test_heal_keeps_a_later_change_to_the_same_setting() -> None:
    dev = sonic()
    dev.inject("switch-pfc-prio")
    dev.running["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] = "3"  # an operator fixed it meanwhile
    dev.heal("switch-pfc-prio")
    assert dev.running["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] == "3"


def test_unknown_fault_is_refused() -> None:
    with pytest.raises(MockSwitchError, match="unknown switch fault"):
        eos().inject("switch-on-fire")


def test_counters_move_only_by_added_records_and_refuse_bad_ones() -> None:
    counters = Counters(["p1", "p2"])
    counters.add("p1", {"pfc_tx": {"3": 2}, "drops": {"3": 5}})
    counters.add("p1", {"pfc_tx": {"3": 1}})
    p1, p2 = counters.ports["p1"], counters.ports["p2"]
    assert (p1["pfc_tx"][3], p1["drops"][3], p1["tx_packets"]) == (3, 5, [0] * 8)
    assert all(v == [0] * 8 for v in p2.values())
    for port, additions, message in [
        ("p9", {"drops": {"3": 1}}, "no port 'p9'"),
        ("p1", {"melted": {"3": 1}}, "unknown counter kind 'melted'"),
        ("p1", {"drops": {"8": 1}}, "bad drops entry '8'"),
        ("p1", {"pfc_tx": {"3": 1}, "drops": {"3": -1}}, "bad drops entry '3': -1"),
    ]:
        with pytest.raises(MockSwitchError, match=message):
            counters.add(port, additions)
    assert p1["pfc_tx"][3] == 3  # a refused record changed nothing, not even its valid part


def test_line_reader_echo_and_line_ends() -> None:
    reader = LineReader()
    echo, lines = reader.feed("nv sh\x7fhow\r\nexit\n\x1b[Aab\x03")
    assert lines == ["nv show", "exit", None]
    assert echo == "nv sh\b \bhow\r\nexit\r\nab"


def test_sonic_config_ecn_updates_wred_profile_and_validates() -> None:
    dev = sonic()
    s = dev.new_session("root")
    assert s.handle("config ecn -profile AZURE_LOSSLESS -gmin 150000 -gmax 1500000 -gdrop 100") == ""
    profile = dev.running["WRED_PROFILE"]["AZURE_LOSSLESS"]
    assert (profile["green_min_threshold"], profile["green_max_threshold"]) == ("150000", "1500000")
    out = s.handle("config ecn -profile AZURE_LOSSLESS -ymin 3000000")
    assert "yellow_min_threshold 3000000 exceeds yellow_max_threshold 2097152" in out and s.last_failed
    assert s.handle("config ecn -profile NOPE -gmin 1") == "Invalid profile name NOPE\n"
    assert "green_min_threshold      150000" in s.handle("show ecn")


def test_sonic_json_views_parse() -> None:
    dev = sonic()
    s = dev.new_session("admin")
    running = json.loads(s.handle("show runningconfiguration all"))
    assert running["PORT_QOS_MAP"]["Ethernet8"]["pfc_enable"] == "3,4"
    assert running.pop("bgpraw") == ""  # FRR's config beside the tables (show/main.py); no FRR here
    assert json.loads(s.handle("sonic-cfggen -d --print-data")) == running
    dev.counters.add("Ethernet8", {"tx_packets": {"1": 1000}, "tx_bytes": {"1": 1078000}, "drops": {"1": 30}})
    queues = json.loads(s.handle("show queue counters Ethernet8 -j"))
    assert queues["Ethernet8"]["UC1"] == {
        "totalpacket": "1000",
        "totalbytes": "1078000",
        "droppacket": "30",
        "dropbytes": "32340",
    }


def test_nvue_qos_object_shows_follow_documented_layouts() -> None:
    dev = nvue()
    s = dev.new_session("cumulus")
    run(
        s,
        "nv set qos congestion-control default-global traffic-class 4,5,7 min-threshold 40000",
        "nv set qos congestion-control default-global traffic-class 4,5,7 max-threshold 200000",
        "nv set qos congestion-control default-global traffic-class 4,5,7 red enable",
        "nv config apply -y",
    )
    assert s.handle("nv show qos congestion-control default-global").splitlines() == [
        "    operational  applied  description",
        "--  -----------  -------  -----------",
        "",
        "ECN Configurations",
        "=====================",
        "    traffic-class  ECN     RED      Min Th    Max Th     Probability",
        "    -------------  ------  -------  --------  ---------  -----------",
        "    0              enable  disable  150000 B  1500000 B  100",
        "    4              enable  enable   40000 B   200000 B   100",
        "    5              enable  enable   40000 B   200000 B   100",
        "    7              enable  enable   40000 B   200000 B   100",
    ]
    run(
        s,
        # NVIDIA: before PFC, move buffer to the lossless pool (by default 100 % is lossy)
        "nv set qos traffic-pool default-lossless memory-percent 50",
        "nv set qos traffic-pool default-lossy memory-percent 50",
        "nv set qos pfc default-global switch-priority 0",
        "nv set qos pfc default-global rx disable",
        "nv set qos pfc default-global cable-length 50",
        "nv config apply -y",
    )
    pfc = s.handle("nv show qos pfc default-global").splitlines()
    assert pfc[2] == "cable-length       50           50       Cable Length (in meters)"
    assert pfc[4] == "rx                 disable      disable  PFC Rx State"
    assert pfc[-1] == "[switch-priority]  0            0        Collection of switch priorities."
    # rx off: the port sends pauses but ignores them, so no priority is lossless (both directions must be on)
    assert dev.port_qos()["swp1"].pfc_priorities == ()
    run(s, "nv set qos pfc default-global rx enable", "nv config apply -y")
    assert dev.port_qos()["swp1"].pfc_priorities == (0,)


def test_eos_watchdog_monitors_only_no_drop_queues_with_guaranteed_bandwidth() -> None:
    dev = eos()
    s = dev.new_session("admin")
    run(
        s,
        *EOS_PFC_PROFILE,
        "priority-flow-control pause watchdog",
        "uc-tx-queue 3",
        "no priority",
        "bandwidth percent 50",
        "interface Ethernet1-2",
        "service-profile ROCE",
        "interface Ethernet2",
        "uc-tx-queue 3",
        "bandwidth guaranteed percent 50",
        "end",
    )
    rows = {
        line.split()[0]: line.split()[1:]
        for line in s.handle("show priority-flow-control watchdog").splitlines()
        if line.strip()
    }
    assert rows["Et1"] == ["enabled", "-", "3"]  # no guarantee: Arista's watchdog leaves the queue alone
    assert rows["Et2"] == ["enabled", "3", "-"]
    assert s.handle("show priority-flow-control watchdog | json") == "% This is an unconverted command\n"
