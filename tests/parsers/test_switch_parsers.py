"""Switch parsers (NVUE, EOS, SONiC) on outputs captured from the lab's mock switches, and on hostile
input: every parser returns typed records or raises ParseError, never anything else."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hostile import hostile_text, mutated
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabcheck.collect.switch_probes import PROBES, RELEASE_READS
from fabcheck.errors import ParseError
from fabcheck.parsers import switch_eos, switch_nvue, switch_sonic
from fabcheck.parsers.switch_records import (
    BufferBinding,
    BufferProfiles,
    DscpMap,
    EcnQueues,
    Mtu,
    PfcPriorities,
    PortSpeed,
    PriorityMap,
    QueueDrops,
    QueueEcn,
    QueueMaps,
    QueueScheduler,
    Schedulers,
    TrafficPools,
    Trust,
    WatchdogConfig,
    WatchdogSettings,
    WatchdogStatus,
    id_list,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "switch"
PARSERS: dict[str, Callable[[str, str | None, str], object]] = {
    probe.name: probe.parse for probes in PROBES.values() for probe in probes
}
# The release an NVUE session reads first (its captures are <platform>.release.txt)
for _read in RELEASE_READS.values():
    PARSERS[_read.name] = lambda text, _port, source, read=_read: read.parse(text, source)


def sample(state: str, switch: str, stem: str) -> str:
    return (DATA / state / switch / f"{stem}.txt").read_text()


def records(
    state: str, switch: str, stem: str, port: str | None = None
) -> dict[tuple[type, str | None], object]:
    probe = stem.partition("@")[0]
    return {(type(r), p): r for p, r in PARSERS[probe](sample(state, switch, stem), port, stem)}


def test_nvue_converged_outputs() -> None:
    config = records("converged", "leaf01", "nvue.applied_config")
    assert config[(Trust, None)] == Trust("dscp") and config[(Trust, "swp1")] == Trust("dscp")
    assert dict(config[(DscpMap, None)].pairs)[26] == 3  # type: ignore[attr-defined]
    assert config[(PriorityMap, None)].mapping == {  # type: ignore[attr-defined]
        0: 0,
        1: 0,
        2: 0,
        3: 3,
        4: 0,
        5: 0,
        6: 6,
        7: 0,
    }
    assert config[(PfcPriorities, "swp1")] == PfcPriorities((3,), tx=True, rx=True, cable_length_m=100)
    ecn = config[(EcnQueues, "swp1")]
    assert ecn.queue(3) == QueueEcn(3, True, 150000, 1500000, 100)  # type: ignore[attr-defined]
    assert config[(WatchdogConfig, "swp1")] == WatchdogConfig(True)
    assert config[(Mtu, "swp2")] == Mtu(9216)
    assert config[(WatchdogSettings, None)] == WatchdogSettings(
        (("polling-interval", "100"), ("robustness", "2"))
    )
    assert config[(Schedulers, None)].queue(6) == QueueScheduler(6, "strict", None)  # type: ignore[attr-defined]
    assert records("converged", "leaf01", "nvue.watchdog@swp1", "swp1") == {
        (WatchdogStatus, "swp1"): WatchdogStatus(()),
    }
    assert records("converged", "leaf01", "nvue.link@swp2", "swp2") == {
        (PortSpeed, "swp2"): PortSpeed(400_000)
    }
    drops = records("switch-pfc-prio", "leaf01", "nvue.roce_counters@swp1", "swp1")[(QueueDrops, "swp1")]
    assert drops.roce_class and drops.roce_class > 0  # type: ignore[attr-defined]


def test_eos_converged_outputs() -> None:
    config = records("converged", "leaf03", "eos.running_config")
    mapping = dict(config[(DscpMap, None)].pairs)  # type: ignore[attr-defined]
    # the explicit lines over EOS's default map (DSCP/8, classes 0 and 1 swapped)
    assert (mapping[26], mapping[48], mapping[0], mapping[8], mapping[25]) == (3, 6, 1, 0, 3)
    assert config[(WatchdogSettings, None)] == WatchdogSettings(
        (("action", "drop"), ("recovery-time", "0.2"), ("timeout", "0.2"))
    )
    pfc = records("switch-pfc-prio", "leaf03", "eos.pfc")
    assert pfc[(PfcPriorities, "Ethernet1")] == PfcPriorities((4,))
    assert pfc[(PfcPriorities, "Ethernet2")] == PfcPriorities((3,))
    qos = records("converged", "leaf03", "eos.qos_interfaces")
    assert qos[(Trust, "Ethernet1")] == Trust("dscp")
    assert qos[(EcnQueues, "Ethernet1")].queue(3) == QueueEcn(3, True, 150000, 1500000, 100)  # type: ignore[attr-defined]
    assert records("converged", "leaf03", "eos.interfaces")[(Mtu, "Ethernet4")] == Mtu(9214)


def test_sonic_converged_outputs() -> None:
    db = records("converged", "leaf02", "sonic.config_db")
    assert db[(PfcPriorities, "Ethernet0")] == PfcPriorities((3,))
    assert dict(db[(DscpMap, "Ethernet0")].pairs)[48] == 6  # type: ignore[attr-defined]
    same = (150000, 1500000, 100)
    assert db[(EcnQueues, "Ethernet4")].queue(3) == QueueEcn(  # type: ignore[attr-defined]
        3, True, *same, colours=(("yellow", True, *same), ("red", True, *same))
    )
    assert db[(WatchdogSettings, "Ethernet0")] == WatchdogSettings(
        (("action", "drop"), ("detection_time", "200"), ("restoration_time", "200"))
    )
    assert db[(Mtu, "Ethernet12")] == Mtu(9216) and db[(WatchdogConfig, "Ethernet0")] == WatchdogConfig(True)
    factory = records("factory", "leaf02", "sonic.config_db")
    assert factory[(PfcPriorities, "Ethernet0")] == PfcPriorities((3, 4))
    queues = records("factory", "leaf02", "sonic.queue_counters")[(QueueDrops, "Ethernet0")]
    assert dict(queues.by_queue)[1] > 0  # type: ignore[attr-defined]  # stock map: DSCP 26 -> lossy TC1


def test_sonic_buffer_profiles_per_port_in_span_order() -> None:
    db = records("converged", "leaf02", "sonic.config_db")
    assert db[(BufferProfiles, "Ethernet0")] == BufferProfiles(
        (BufferBinding("0", (0,), "ingress_lossy_profile"), BufferBinding("3", (3,), "NULL")),
        (
            BufferBinding("0-2", (0, 1, 2), "q_lossy_profile"),  # the switch's own lossy binding, kept
            BufferBinding("3-4", (3, 4), "egress_lossless_profile"),
            BufferBinding("5-6", (5, 6), "q_lossy_profile"),
        ),
    )
    factory = records("factory", "leaf02", "sonic.config_db")
    assert BufferBinding("3-4", (3, 4), "NULL") in factory[(BufferProfiles, "Ethernet0")].priority_groups  # type: ignore[attr-defined]


REAL = Path(__file__).resolve().parents[1] / "data" / "real"
# sonic-utilities scripts/db_migrator.py (202111 on) rewrites these reference fields to plain names.
OLD_REFERENCE_FIELDS = [
    ("QUEUE", "scheduler"),
    ("QUEUE", "wred_profile"),
    ("PORT_QOS_MAP", "dscp_to_tc_map"),
    ("PORT_QOS_MAP", "tc_to_queue_map"),
    ("PORT_QOS_MAP", "tc_to_pg_map"),
    ("PORT_QOS_MAP", "pfc_to_queue_map"),
    ("BUFFER_PG", "profile"),
    ("BUFFER_QUEUE", "profile"),
]


def _old_reference_db(kept: tuple[str, str] | None) -> dict[str, Any]:
    """The real pre-202111 CONFIG_DB excerpt with every reference rewritten to its plain name as
    db_migrator does, except the one field `kept`."""
    db = json.loads((REAL / "sonic" / "config-db-old-reference-syntax-excerpt.json").read_text())
    for table, entries in db.items():
        for fields in entries.values():
            for name, value in fields.items():
                if (table, name) != kept and value.startswith("[") and value.endswith("]"):
                    fields[name] = value[1:-1].split("|", 1)[1]
    return db


@pytest.mark.parametrize(
    ("table", "field"), OLD_REFERENCE_FIELDS, ids=[f"{t}.{f}" for t, f in OLD_REFERENCE_FIELDS]
)
def test_an_old_syntax_reference_is_named_below_the_minimum_release_not_missing(
    table: str, field: str
) -> None:
    """A real CONFIG_DB of a release before 202111 (sonic-utilities' db_migrator input) names other
    tables' entries as `[TABLE|name]`: the parser says so and names the driver's minimum release."""
    from fabcheck.switch.platforms.sonic import MIN_RELEASE

    minimum = f"{MIN_RELEASE[0]}{MIN_RELEASE[1]:02d}"
    with pytest.raises(ParseError) as refused:
        switch_sonic.parse_config_db(json.dumps(_old_reference_db((table, field))), None, "old")
    message = refused.value.message
    assert f"{table}|Ethernet0" in message and field in message, message
    assert "old reference syntax" in message and f"minimum fabcheck supports, {minimum}" in message
    assert "missing" not in message and "does not exist" not in message
    # the same dump with plain names (as db_migrator leaves it) reads
    placed = switch_sonic.parse_config_db(json.dumps(_old_reference_db(None)), None, "migrated")
    assert (("Ethernet0", PfcPriorities((3, 4)))) in placed


def test_the_whole_old_syntax_dump_is_refused_as_below_the_minimum_release() -> None:
    text = (REAL / "sonic" / "config-db-old-reference-syntax-excerpt.json").read_text()
    with pytest.raises(ParseError, match=r"old reference syntax \[TABLE\|name\] \(SONiC before 202111\)"):
        switch_sonic.parse_config_db(text, None, "old")


def test_sonic_queue_maps_read_per_port_from_the_same_dump() -> None:
    db = records("converged", "leaf02", "sonic.config_db")
    maps = db[(QueueMaps, "Ethernet4")]
    assert isinstance(maps, QueueMaps)
    assert maps.tc_to_queue == tuple((tc, tc) for tc in range(8))
    assert dict(maps.pfc_priority_to_queue or ())[3] == 3 and maps.pcp_to_tc is None
    unbound = '{"PORT": {"Ethernet0": {}}, "PORT_QOS_MAP": {"Ethernet0": {"pfc_enable": "3"}}}'
    assert (("Ethernet0", QueueMaps(None, None, None, None, None))) in switch_sonic.parse_config_db(unbound)
    dangling = '{"PORT": {"Ethernet0": {}}, "PORT_QOS_MAP": {"Ethernet0": {"tc_to_queue_map": "X"}}}'
    with pytest.raises(ParseError, match="tc_to_queue_map names TC_TO_QUEUE_MAP 'X', which does not exist"):
        switch_sonic.parse_config_db(dangling)


def test_sonic_queue_counters_after_a_clear_read_grouped_thousands() -> None:
    """queuestat prints differences from the `sonic-clear queuecounters` snapshot as '{:,}' (ns_diff)
    beside each port's "time": read as numbers; a "cached_time" key is no queue either."""
    text = (REAL / "sonic" / "show-queue-counters-json-after-clear.txt").read_text()
    placed = dict(switch_sonic.parse_queue_counters(text, None, "cleared"))
    assert dict(placed["Ethernet4"].by_queue)[3] == 1234  # type: ignore[union-attr]
    cached = json.loads(text)
    cached["Ethernet4"]["cached_time"] = "2026-07-23T16:01:02.000001"
    assert dict(switch_sonic.parse_queue_counters(json.dumps(cached)))["Ethernet4"] == placed["Ethernet4"]
    for bad in ("1,23", "12,345,67", "1.234", ",123"):
        cached["Ethernet4"]["UC3"]["droppacket"] = bad
        with pytest.raises(ParseError, match="droppacket"):
            switch_sonic.parse_queue_counters(json.dumps(cached))


def test_sonic_queue_counters_without_a_unicast_queue_are_refused_never_read_as_no_drops() -> None:
    """A VOQ reply (sonic-utilities' show_queue_voq_counters_json) lists VOQ0..7 and no UC queue."""
    text = (REAL / "sonic" / "show-queue-counters-voq-json.txt").read_text()
    with pytest.raises(
        ParseError, match=r"testsw\|Ethernet0: no unicast \(UC\) queue \(only VOQ0, VOQ1, VOQ2"
    ):
        switch_sonic.parse_queue_counters(text, None, "voq")
    with pytest.raises(ParseError, match="Ethernet0: no unicast \\(UC\\) queue \\(no queue\\)"):
        switch_sonic.parse_queue_counters('{"Ethernet0": {"time": "2026-07-23T16:04:11"}}')
    with pytest.raises(ParseError, match="'QQ1' is not a queue"):
        switch_sonic.parse_queue_counters('{"Ethernet0": {"QQ1": {}, "UC3": {"droppacket": "0"}}}')


@pytest.mark.parametrize(
    ("table", "entry", "message"),
    [
        ("BUFFER_PG", '{"Ethernet0|x": {"profile": "NULL"}}', "is not PORT|N or PORT|N-M"),
        ("BUFFER_QUEUE", '{"Ethernet0|3": {"profile": 7}}', "is not a profile name"),
        ("BUFFER_QUEUE", '{"Ethernet0|3": {}}', "is not a profile name"),
    ],
)
def test_unreadable_buffer_bindings_are_parse_errors(table: str, entry: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        switch_sonic.parse_config_db(f'{{"PORT": {{"Ethernet0": {{}}}}, "{table}": {entry}}}')


def test_nvue_traffic_pools_read_the_buffer_split() -> None:
    converged = records("converged", "leaf01", "nvue.applied_config")[(TrafficPools, None)]
    assert converged == TrafficPools((("default-lossless", 50), ("default-lossy", 50)))
    factory = records("factory", "leaf01", "nvue.applied_config")[(TrafficPools, None)]
    assert factory.mapping == {"default-lossy": 100}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("pools", "message"),
    [
        ('{"default-lossless": {"memory-percent": 150}}', "memory-percent"),
        ('{"default-lossless": 50}', "default-lossless"),
    ],
)
def test_unreadable_traffic_pools_are_parse_errors(pools: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        switch_nvue.parse_applied_config(f'[{{"set": {{"qos": {{"traffic-pool": {pools}}}}}}}]')


# NVIDIA's `nv show interface P link` layout (tests/data/real/nvue/nv-show-interface-swp1-link.txt)
NVUE_LINK = (
    "       operational  applied  pending\n"
    "-----  -----------  -------  -------\n"
    "mtu    9216         9216     9216\n"
    "speed  {speed:<11}  auto     auto\n"
)


@pytest.mark.parametrize(
    ("parser", "text", "mbps"),
    [
        (switch_nvue.parse_port_link, NVUE_LINK.format(speed="100G"), 100_000),
        (switch_nvue.parse_port_link, NVUE_LINK.format(speed="10M"), 10),
        (switch_sonic.parse_config_db, '{"PORT": {"Ethernet0": {"speed": "200000"}}}', 200_000),
        (
            switch_eos.parse_interfaces,
            '{"interfaces": {"Ethernet1": {"mtu": 9214, "bandwidth": 100000000000,'
            ' "interfaceStatus": "connected", "lineProtocolStatus": "up"}}}',
            100_000,
        ),
    ],
)
def test_port_speeds_read_in_mbps(parser: Callable[..., list], text: str, mbps: int) -> None:
    assert [r for _p, r in parser(text, "swp1") if isinstance(r, PortSpeed)] == [PortSpeed(mbps)]


def test_an_up_eos_port_without_a_rate_has_no_speed_and_an_nvue_speed_it_cannot_spell_is_refused() -> None:
    rateless = switch_eos.parse_interfaces(
        '{"interfaces": {"Ethernet1": {"mtu": 9214, "bandwidth": 0,'
        ' "interfaceStatus": "connected", "lineProtocolStatus": "up"}}}'
    )
    assert not [r for _p, r in rateless if isinstance(r, PortSpeed)]
    with pytest.raises(ParseError, match="interfaceStatus"):
        switch_eos.parse_interfaces('{"interfaces": {"Ethernet1": {"mtu": 9214, "bandwidth": 0}}}')
    untrained = switch_nvue.parse_port_link(NVUE_LINK.format(speed="auto"), "swp1")
    assert not [r for _p, r in untrained if isinstance(r, PortSpeed)]
    with pytest.raises(ParseError, match="is not a link speed"):
        switch_nvue.parse_port_link(NVUE_LINK.format(speed="fast"), "swp1")


def test_pfcwd_stats_reads_a_storm() -> None:
    text = sample("converged", "leaf02", "sonic.pfcwd_stats").replace(
        "Ethernet4:3  operational", "Ethernet4:3      stormed"
    )
    found = {p: r for p, r in switch_sonic.parse_pfcwd_stats(text)}
    assert found["Ethernet4"] == WatchdogStatus((3,)) and found["Ethernet0"] == WatchdogStatus(())
    assert found[None] == WatchdogStatus(())


def test_queue_drop_counters_subtract_and_survive_a_clear() -> None:
    before, after = QueueDrops(((3, 100), (0, 5))), QueueDrops(((3, 130), (0, 2)))
    assert after.minus(before) == QueueDrops(((3, 30), (0, 2)))
    assert QueueDrops(roce_class=7).minus(QueueDrops(roce_class=3)) == QueueDrops(roce_class=4)


@pytest.mark.parametrize(
    ("text", "expected"), [("3", (3,)), ("0,3", (0, 3)), ("0-2,6", (0, 1, 2, 6)), ("-", ()), ("", ())]
)
def test_id_lists(text: str, expected: tuple[int, ...]) -> None:
    assert id_list(text, "<t>", "ids") == expected


@pytest.mark.parametrize("text", ["8", "3-1", "٣", "1,,2", "9" * 30, "0x3"])
def test_bad_id_lists_are_parse_errors(text: str) -> None:
    with pytest.raises(ParseError):
        id_list(text, "<t>", "ids")


@pytest.mark.parametrize(
    ("parser", "text"),
    [
        (
            switch_nvue.parse_applied_config,
            '[{"set": {"qos": {"mapping": {"default-global": {"dscp": {"26": {"switch-priority": NaN}}}}}}}]',
        ),
        (switch_nvue.parse_applied_config, '[{"set": {"interface": {"swp1": {"link": {"mtu": true}}}}}]'),
        (switch_nvue.parse_port_link, NVUE_LINK.format(speed="9" * 5000)),
        (switch_nvue.parse_port_link, NVUE_LINK.replace("speed", "sped")),
        (switch_nvue.parse_port_link, '{"speed": "400G"}'),
        (switch_nvue.parse_port_watchdog, '{"state": "enabled", "status": {"3": {"status": "WHAT"}}}'),
        (switch_eos.parse_qos_interfaces, "% Invalid input (at token 1: 'qos')"),
        (switch_eos.parse_running_config, "qos map dscp 26 to traffic-class 3\n"),
        (switch_sonic.parse_config_db, '{"QUEUE": {}}'),
        (switch_sonic.parse_pfcwd_stats, "Error: pfcwd is not running\n"),
    ],
)
def test_damaged_outputs_are_parse_errors(parser: Callable[..., object], text: str) -> None:
    with pytest.raises(ParseError):
        parser(text, "swp1", "<t>")


SAMPLES = sorted(str(path.relative_to(DATA)) for path in DATA.glob("*/*/*.txt"))


def _parses_or_refuses(stem: str, text: str) -> None:
    probe = Path(stem).name.partition("@")[0].removesuffix(".txt").removesuffix(".before")
    port = Path(stem).stem.partition("@")[2].removesuffix(".before") or None
    with contextlib.suppress(ParseError):
        PARSERS[probe](text, port, "<hostile>")


@pytest.mark.parametrize("platform", ["nvue", "eos", "sonic"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_samples_parse_or_refuse(platform: str, data: st.DataObject) -> None:
    stems = [s for s in SAMPLES if f"/{platform}." in f"/{Path(s).name}"]
    stem = data.draw(st.sampled_from(stems))
    _parses_or_refuses(stem, data.draw(mutated([(DATA / stem).read_text()])))


@settings(max_examples=60, deadline=None)
@given(stem=st.sampled_from(SAMPLES), text=hostile_text)
def test_hostile_text_parses_or_refuses(stem: str, text: str) -> None:
    _parses_or_refuses(stem, text)
