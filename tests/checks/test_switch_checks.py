"""Switch checks over outputs captured from the lab's mock switches (tests/data/switch/), replayed
through the gate's own probes and parsers: converged switches pass, each lab fault fails exactly its
check on exactly its ports, and anything unread is an error, never a pass."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import switchfabric
from switchfabric import PORTS, SWITCHES, desired, replayed

from fabcheck.checks import switch as checks
from fabcheck.checks.model import Finding, Status
from fabcheck.checks.roles import SWITCH_QOS_ROLE
from fabcheck.checks.switch import SWITCH_CHECK_IDS, SwitchEvidence, check_switch
from fabcheck.parsers.switch_records import EcnQueues, QueueEcn

FIRST_PORT = {name: f"{name}:{PORTS[platform][0]}" for name, platform in SWITCHES.items()}


def judged(state: str, name: str, overrides: dict | None = None) -> list[Finding]:
    return check_switch(replayed(state, name, overrides), desired(name, overrides))


def not_passing(findings: list[Finding]) -> set[tuple[str, str, str]]:
    return {(f.check, f.status.value, f.subject) for f in findings if f.status is not Status.PASS}


@pytest.mark.parametrize("name", SWITCHES)
def test_a_converged_switch_passes_and_every_skip_says_why(name: str) -> None:
    findings = judged("converged", name)
    assert {f.check for f in findings} == set(SWITCH_CHECK_IDS)
    assert not [f for f in findings if f.status in (Status.FAIL, Status.ERROR)]
    skips = [f for f in findings if f.status is Status.SKIP]
    assert all(f.actual and f.actual != "n/a" for f in skips), skips
    assert sum(f.status is Status.PASS for f in findings) >= 20


EXPECTED_SKIPS = {
    # Buffers: SONiC's per-port profiles (switch.buffers), NVUE's pools (switch.lossless_pool), none on EOS.
    "leaf01": {checks.BUFFERS, checks.QUEUE_MAP},
    "leaf02": {checks.PRIORITY_MAP, checks.LOSSLESS_POOL},
    "leaf03": {checks.PRIORITY_MAP, checks.BUFFERS, checks.LOSSLESS_POOL, checks.QUEUE_MAP},
}


@pytest.mark.parametrize("name", SWITCHES)
def test_skips_are_only_what_the_platform_cannot_show(name: str) -> None:
    assert {f.check for f in judged("converged", name) if f.status is Status.SKIP} == EXPECTED_SKIPS[name]


@pytest.mark.parametrize("name", SWITCHES)
def test_switch_pfc_prio_fails_pfc_on_the_first_port_only(name: str) -> None:
    # A port without PFC on the RoCE priority drops that traffic: where the platform shows queue
    # drops, the drop check fails on the same port (the mock's traffic model), nothing else does.
    expected = {(checks.PFC, "fail", FIRST_PORT[name])}
    if checks.LOSSLESS_DROPS not in EXPECTED_SKIPS[name]:
        expected.add((checks.LOSSLESS_DROPS, "fail", FIRST_PORT[name]))
    skips = {(check, "skip", name) for check in EXPECTED_SKIPS[name]}
    findings = judged("switch-pfc-prio", name)
    assert not_passing(findings) == expected | skips
    pfc = next(f for f in findings if f.check == checks.PFC and f.status is Status.FAIL)
    assert pfc.expected.startswith("PFC on priorities 3, pause frames sent (tx) and honoured (rx)")
    assert pfc.actual == "PFC on priorities 4"
    assert SWITCH_QOS_ROLE in pfc.hint and f"ansible-playbook site.yml --limit {name} --tags pfc" in pfc.hint


@pytest.mark.parametrize("name", SWITCHES)
def test_switch_ecn_off_fails_ecn_on_every_port_only(name: str) -> None:
    ports = {f"{name}:{port}" for port in PORTS[SWITCHES[name]]}
    skips = {(check, "skip", name) for check in EXPECTED_SKIPS[name]}
    findings = judged("switch-ecn-off", name)
    assert not_passing(findings) == {(checks.ECN, "fail", port) for port in ports} | skips
    ecn = next(f for f in findings if f.check == checks.ECN and f.status is Status.FAIL)
    assert ecn.actual == "ECN off on traffic class 3" and "--tags ecn" in ecn.hint


@pytest.mark.parametrize("name", SWITCHES)
def test_factory_switches_fail_the_recipe(name: str) -> None:
    failing = {f.check for f in judged("factory", name) if f.status is Status.FAIL}
    assert {checks.PFC, checks.SCHEDULER} <= failing  # NVUE's factory DSCP map already sends 26 to 3


def test_pfc_only_intent_expects_ecn_off_and_fails_a_marking_queue() -> None:
    intent = {
        "congestion_control": "pfc_only",
        "ecn": {"enabled": False},
        "dcqcn": {"rp_enable": False, "np_enable": False},
    }
    findings = [f for f in judged("converged", "leaf02", intent) if f.check == checks.ECN]
    assert {f.status for f in findings} == {Status.FAIL}
    assert findings[0].expected == "ECN off on traffic class 3"


def test_an_unreachable_switch_is_an_error_for_each_check() -> None:
    evidence = SwitchEvidence("leaf02", "sonic", {}, frozenset(), unreachable="no SSH answer within 3 s")
    findings = check_switch(evidence, desired("leaf02"))
    assert {f.status for f in findings} == {Status.ERROR} and len(findings) == len(SWITCH_CHECK_IDS)
    assert all(f.subject == "leaf02" and "no SSH answer" in f.hint for f in findings)


def test_a_failed_probe_is_an_error_naming_its_command_never_a_pass() -> None:
    full = replayed("converged", "leaf01")
    records = {key: r for key, r in full.records.items() if key[0] is not EcnQueues}
    reason = "`nv show interface swp1 qos roce status -o json`: unparsable output"
    broken = SwitchEvidence("leaf01", "nvue", records, full.provided, [((EcnQueues,), "swp1", reason)])
    ecn = [f for f in check_switch(broken, desired("leaf01")) if f.check == checks.ECN]
    assert {f.status for f in ecn} == {Status.ERROR}
    assert any(reason in f.hint for f in ecn)


@pytest.mark.parametrize(
    ("minimum", "maximum", "status"),
    [
        (150_000, 1_500_000, Status.PASS),
        (150_528, 1_502_208, Status.PASS),  # Spectrum cells (the mock's port view)
        (159_744, 1_500_000, Status.PASS),  # 156 KB on Spectrum-4/5
        (149_999, 1_500_000, Status.FAIL),
        (170_000, 1_500_000, Status.FAIL),
        (150_000, 1_700_000, Status.FAIL),
    ],
)
def test_ecn_thresholds_allow_hardware_rounding_up_only(minimum: int, maximum: int, status: Status) -> None:
    full = replayed("converged", "leaf03")
    queues = tuple(QueueEcn(tc, tc == 3, minimum, maximum, 100) for tc in range(8))
    records = dict(full.records) | {(EcnQueues, "Ethernet1"): EcnQueues(queues)}
    evidence = SwitchEvidence("leaf03", "eos", records, full.provided)
    ecn = next(
        f
        for f in check_switch(evidence, desired("leaf03"))
        if f.subject == "leaf03:Ethernet1" and f.check == checks.ECN
    )
    assert ecn.status is status


def test_ecn_in_segments_cannot_be_judged_and_is_an_error() -> None:
    full = replayed("converged", "leaf03")
    queues = tuple(QueueEcn(tc, tc == 3, None, None, 100, "segments") for tc in range(8))
    records = dict(full.records) | {(EcnQueues, "Ethernet2"): EcnQueues(queues)}
    findings = check_switch(SwitchEvidence("leaf03", "eos", records, full.provided), desired("leaf03"))
    assert (
        next(f for f in findings if f.subject == "leaf03:Ethernet2" and f.check == checks.ECN).status
        is Status.ERROR
    )


def test_switch_wide_records_are_judged_once_for_the_switch() -> None:
    findings = [f for f in judged("converged", "leaf01") if f.check in (checks.DSCP_MAP, checks.SCHEDULER)]
    assert [f.subject for f in findings] == ["leaf01", "leaf01"]
    # NVUE's trust is judged per port: the port's roce status shows what its own mapping profile (or
    # default-global) makes it trust.
    trust = [f.subject for f in judged("converged", "leaf01") if f.check == checks.TRUST]
    assert trust == ["leaf01:swp1", "leaf01:swp2", "leaf01:swp3", "leaf01:swp4"]


@pytest.mark.parametrize("name", SWITCHES)
def test_per_port_findings_name_switch_port_and_cabled_nic_as_fields(name: str) -> None:
    findings = judged("switch-pfc-prio", name)
    pfc = next(f for f in findings if f.check == checks.PFC and f.status is Status.FAIL)
    port = next(p for p in desired(name).ports if f"{name}:{p.port}" == pfc.subject)
    assert pfc.where is not None and (pfc.where.node, pfc.where.part) == (name, port.port)
    assert pfc.where.peer == (port.peer or "")
    assert pfc.to_json()["where"]["node"] == name
    whole = [f for f in findings if f.subject == name]
    assert whole and all(f.where is None or f.where.part == "" for f in whole)


GUARANTEE = "      bandwidth guaranteed percent 50\n"
ETHERNET2 = "interface Ethernet2\n   mtu 9214\n   service-profile FABCHECK-ROCE\n"
CONVERGED_EOS = switchfabric.DATA / "converged" / "leaf03"
REAL_EOS = Path(__file__).resolve().parents[1] / "data" / "real" / "eos"


def eos_edited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: Callable[[str], str]) -> set:
    """leaf03 converged, its running and startup config edited alike (a saved hand edit), judged."""
    folder = tmp_path / "edited" / "leaf03"
    shutil.copytree(CONVERGED_EOS, folder)
    for name in ("eos.running_config.txt", "eos.startup_config.txt"):
        text = (folder / name).read_text()
        assert GUARANTEE in text and ETHERNET2 in text
        (folder / name).write_text(edit(text))
    monkeypatch.setattr(switchfabric, "DATA", tmp_path)
    return {f for f in not_passing(judged("edited", "leaf03")) if f[1] != "skip"}


def test_eos_watchdog_fails_every_port_whose_lossless_queue_has_no_guaranteed_bandwidth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Arista's watchdog watches only PFC queues with guaranteed bandwidth: without it, it watches none.
    failing = eos_edited(tmp_path, monkeypatch, lambda text: text.replace(GUARANTEE, ""))
    assert failing == {("switch.watchdog", "fail", f"leaf03:{port}") for port in PORTS["eos"]}
    findings = judged("edited", "leaf03")
    actual = next(f.actual for f in findings if f.check == "switch.watchdog")
    assert actual == "PFC watchdog enabled, but tx-queue 3 guaranteed nothing: EOS watches no such queue"


def test_eos_interface_tx_queue_lines_apply_over_the_profile_on_that_port_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = ETHERNET2 + "   uc-tx-queue 3\n      bandwidth guaranteed percent 20\n"
    failing = eos_edited(tmp_path, monkeypatch, lambda text: text.replace(ETHERNET2, own))
    assert failing == {("switch.watchdog", "fail", "leaf03:Ethernet2")}
    # The profile loses its guarantee and one port keeps its own: the other ports fail.
    own = ETHERNET2 + "   uc-tx-queue 3\n      bandwidth guaranteed percent 50\n"
    failing = eos_edited(
        tmp_path / "second", monkeypatch, lambda text: text.replace(GUARANTEE, "").replace(ETHERNET2, own)
    )
    ports = [port for port in PORTS["eos"] if port != "Ethernet2"]
    assert failing == {("switch.watchdog", "fail", f"leaf03:{port}") for port in ports}


def test_eos_a_notconnect_port_with_its_nominal_bandwidth_fails_port_speed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33: EOS keeps a `notconnect` port's nominal `bandwidth` (napalm's real `show interfaces |
    json`, tests/data/real/eos/show-interfaces-json-napalm-notconnect.json: Ethernet1 notconnect, line
    protocol down, bandwidth 10000000000), so the rate alone read a down link as trained at it."""
    real = json.loads((REAL_EOS / "show-interfaces-json-napalm-notconnect.json").read_text())
    down = real["interfaces"]["Ethernet1"]
    assert (down["interfaceStatus"], down["lineProtocolStatus"], down["bandwidth"]) == (
        "notconnect",
        "down",
        10_000_000_000,
    )
    folder = tmp_path / "down" / "leaf03"
    shutil.copytree(CONVERGED_EOS, folder)
    shown = json.loads((folder / "eos.interfaces.txt").read_text())
    port = shown["interfaces"]["Ethernet1"]
    assert port["bandwidth"] == 400_000_000_000  # the nominal rate the intent cables
    port |= {key: down[key] for key in ("interfaceStatus", "lineProtocolStatus")}
    (folder / "eos.interfaces.txt").write_text(json.dumps(shown))
    monkeypatch.setattr(switchfabric, "DATA", tmp_path)
    findings = judged("down", "leaf03")
    failing = {f for f in not_passing(findings) if f[1] != "skip"}
    assert failing == {("switch.port_speed", "fail", "leaf03:Ethernet1")}
    actual = next(f.actual for f in findings if f.check == "switch.port_speed" and f.status is Status.FAIL)
    assert actual == "link down: not trained at any rate"


def sonic_buffers_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: Callable[[dict], None]
) -> list:
    """leaf02 converged, its CONFIG_DB (running and saved alike) edited, its switch.buffers findings."""
    folder = tmp_path / "edited" / "leaf02"
    shutil.copytree(Path(switchfabric.DATA) / "converged" / "leaf02", folder)
    for name in ("sonic.config_db.txt", "sonic.startup_config.txt"):
        db = json.loads((folder / name).read_text())
        edit(db)
        (folder / name).write_text(json.dumps(db, indent=4))
    monkeypatch.setattr(switchfabric, "DATA", tmp_path)
    return [f for f in judged("edited", "leaf02") if f.check == checks.BUFFERS]


def test_sonic_buffers_judge_the_lossless_queue_binding_and_never_the_switchs_lossy_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The push binds only the lossless queue (its range, stock 3-4); whatever profile the lossy queues
    hold is the switch's own and passes, while a lossy profile on the lossless range fails that port."""

    def edit(db: dict) -> None:
        db["BUFFER_QUEUE"]["Ethernet4|0-2"] = {"profile": "egress_lossy_profile"}  # not ours: passes
        db["BUFFER_QUEUE"]["Ethernet8|3-4"] = {"profile": "q_lossy_profile"}  # the lossless queue: fails

    findings = sonic_buffers_edited(tmp_path, monkeypatch, edit)
    failing = {f.subject: f.actual for f in findings if f.status is not Status.PASS}
    assert failing == {"leaf02:Ethernet8": "PG 3 NULL, queue 3-4 q_lossy_profile"}
    assert len(findings) == len(PORTS["sonic"])
