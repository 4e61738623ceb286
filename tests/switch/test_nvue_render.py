"""The NVUE templates spell the desired switch record, line by line, and never a constant of their own.

Golden files: tests/switch/golden/nvue-*.txt; regenerate with FABCHECK_REGOLDEN=1 (then review the diff).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from pathlib import Path
from typing import Any

import pytest

from fabcheck.desired import desired_switch
from fabcheck.desired.switch import DesiredSwitch
from fabcheck.intent.fabric import InventoryNode, read_fabric
from fabcheck.intent.model import FabricIntent
from fabcheck.switch.render import RenderError, render_switch

GOLDEN = Path(__file__).parent / "golden"
REGOLDEN = os.environ.get("FABCHECK_REGOLDEN") == "1"
NON_DEFAULT_INTENT: dict[str, Any] = {
    "lossless": {"dscp": [24], "priority": 4},
    "cnp": {"dscp": 46, "priority": 5},
    "roce_tos": 98,
    "congestion_control": "pfc_only",
    "ecn": {"min_bytes": 200000, "max_bytes": 2000000, "probability": 50},
    "mtu": {"switch": 9100},
}
MAPPING = "nv set qos mapping default-global"
QUEUES = "nv set qos egress-queue-mapping default-global"
PFC = "nv set qos pfc default-global"
ECN = "nv set qos congestion-control default-global"
SCHED = "nv set qos egress-scheduler default-global"


def nvue_desired(
    intent: dict[str, Any] | None = None,
    name: str = "leaf01",
    host_ports: tuple[str, ...] = ("swp1", "swp2"),
    uplinks: tuple[str, ...] = ("swp3",),
) -> DesiredSwitch:
    """The desired state of one NVUE switch: host ports (the first cabled to gpu01) and uplinks."""
    switch = InventoryNode(
        name,
        ("switches_nvue",),
        {
            "switch_address": "192.0.2.1",
            "switch_username": "cumulus",
            "switch_password": "{{ lookup('ansible.builtin.env', 'P') }}",
            "switch_ports": list(host_ports),
            "switch_uplinks": list(uplinks),
        },
        {},
    )
    gpu = InventoryNode(
        "gpu01", ("gpu_hosts",), {"fabric_links": {"mlx5_0": f"{name}:{host_ports[0]}"}}, {0: "mlx5_0"}
    )
    fabric = read_fabric([switch, gpu], lambda _value: "")
    return desired_switch(FabricIntent.model_validate(intent or {}), fabric, name)


def rendered_lines(intent: dict[str, Any] | None = None) -> list[str]:
    return render_switch(nvue_desired(intent)).text.splitlines()


def changed_lines(before: list[str], after: list[str]) -> tuple[list[str], list[str]]:
    """(lines only in before, lines only in after), in output order."""
    diff = list(difflib.ndiff(before, after))
    return [d[2:] for d in diff if d.startswith("- ")], [d[2:] for d in diff if d.startswith("+ ")]


@pytest.mark.parametrize(
    ("golden", "intent"), [("nvue-default.txt", None), ("nvue-non-default.txt", NON_DEFAULT_INTENT)]
)
def test_golden(golden: str, intent: dict[str, Any] | None) -> None:
    text = render_switch(nvue_desired(intent)).text
    path = GOLDEN / golden
    if REGOLDEN:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"{path} missing: run with FABCHECK_REGOLDEN=1 once and review it"
    assert text == path.read_text()


def test_every_line_is_one_nv_set_command() -> None:
    lines = rendered_lines()
    assert lines and all(line.startswith("nv set ") and line == line.strip() for line in lines)
    assert len(lines) == len(set(lines))  # nothing typed twice


def test_non_default_intent_differs_everywhere_it_should() -> None:
    default, other = rendered_lines(), rendered_lines(NON_DEFAULT_INTENT)
    assert f"{MAPPING} dscp 24 switch-priority 4" in other and f"{MAPPING} dscp 46 switch-priority 5" in other
    assert f"{PFC} switch-priority 4" in other and f"{PFC} switch-priority 3" not in other
    assert f"{ECN} traffic-class 4 min-threshold 200000" in other
    assert f"{ECN} traffic-class 4 max-threshold 2000000" in other
    assert f"{ECN} traffic-class 4 probability 50" in other
    assert f"{SCHED} traffic-class 5 mode strict" in other
    assert "nv set interface swp1,swp2,swp3 link mtu 9100" in other
    assert not any(f"traffic-class 3 {word}" in line for line in other for word in ("min", "max", "ecn"))
    assert set(default) != set(other)


# (intent change, lines it must remove, lines it must add); nothing else may change.
ONE_VALUE_CHANGES: list[tuple[dict[str, Any], list[str], list[str]]] = [
    (
        {"ecn": {"min_bytes": 150001}},
        [f"{ECN} traffic-class 3 min-threshold 150000"],
        [f"{ECN} traffic-class 3 min-threshold 150001"],
    ),
    (
        {"ecn": {"max_bytes": 1500001}},
        [f"{ECN} traffic-class 3 max-threshold 1500000"],
        [f"{ECN} traffic-class 3 max-threshold 1500001"],
    ),
    (
        {"ecn": {"probability": 99}},
        [f"{ECN} traffic-class 3 probability 100"],
        [f"{ECN} traffic-class 3 probability 99"],
    ),
    (
        {"congestion_control": "pfc_only", "ecn": {"enabled": False}},
        [
            f"{ECN} traffic-class 3 min-threshold 150000",
            f"{ECN} traffic-class 3 max-threshold 1500000",
            f"{ECN} traffic-class 3 probability 100",
            f"{ECN} traffic-class 3 ecn enable",
        ],
        [f"{ECN} traffic-class 3 ecn disable"],
    ),
    (
        {"mtu": {"switch": 9000}},
        ["nv set interface swp1,swp2,swp3 link mtu 9216"],
        ["nv set interface swp1,swp2,swp3 link mtu 9000"],
    ),
    ({"trust": "pcp"}, [f"{MAPPING} trust l3"], [f"{MAPPING} trust l2"]),
    ({"lossless": {"dscp": [26, 30]}}, [], [f"{MAPPING} dscp 30 switch-priority 3"]),
    (
        {"cnp": {"dscp": 46}},
        [f"{MAPPING} dscp 48 switch-priority 6"],
        [f"{MAPPING} dscp 46 switch-priority 6"],
    ),
    (
        {"cnp": {"priority": 5}},
        [
            f"{MAPPING} dscp 48 switch-priority 6",
            f"{QUEUES} switch-priority 0,1,2,4,5,7 traffic-class 0",
            f"{QUEUES} switch-priority 6 traffic-class 6",
            f"{SCHED} traffic-class 0,1,2,3,4,5,7 mode dwrr",
            f"{SCHED} traffic-class 6 mode strict",
            f"{SCHED} traffic-class 1,2,4,5,7 bw-percent 1",
        ],
        [
            f"{MAPPING} dscp 48 switch-priority 5",
            f"{QUEUES} switch-priority 0,1,2,4,6,7 traffic-class 0",
            f"{QUEUES} switch-priority 5 traffic-class 5",
            f"{SCHED} traffic-class 0,1,2,3,4,6,7 mode dwrr",
            f"{SCHED} traffic-class 5 mode strict",
            f"{SCHED} traffic-class 1,2,4,6,7 bw-percent 1",
        ],
    ),
    (
        {"lossless": {"priority": 2}, "roce_tos": 106},
        [
            f"{MAPPING} dscp 26 switch-priority 3",
            f"{QUEUES} switch-priority 0,1,2,4,5,7 traffic-class 0",
            f"{QUEUES} switch-priority 3 traffic-class 3",
            f"{PFC} switch-priority 3",
            f"{ECN} traffic-class 3 min-threshold 150000",
            f"{ECN} traffic-class 3 max-threshold 1500000",
            f"{ECN} traffic-class 3 probability 100",
            f"{ECN} traffic-class 3 ecn enable",
            f"{SCHED} traffic-class 1,2,4,5,7 bw-percent 1",
            f"{SCHED} traffic-class 0,3 bw-percent 47",
        ],
        [
            f"{MAPPING} dscp 26 switch-priority 2",
            f"{QUEUES} switch-priority 0,1,3,4,5,7 traffic-class 0",
            f"{QUEUES} switch-priority 2 traffic-class 2",
            f"{PFC} switch-priority 2",
            f"{ECN} traffic-class 2 min-threshold 150000",
            f"{ECN} traffic-class 2 max-threshold 1500000",
            f"{ECN} traffic-class 2 probability 100",
            f"{ECN} traffic-class 2 ecn enable",
            f"{SCHED} traffic-class 1,3,4,5,7 bw-percent 1",
            f"{SCHED} traffic-class 0,2 bw-percent 47",
        ],
    ),
    (
        {"lossless": {"pfc": False}, "congestion_control": "ecn_only"},
        [
            f"{PFC} switch-priority 3",
            f"{PFC} tx enable",
            f"{PFC} rx enable",
            "nv set qos traffic-pool default-lossless memory-percent 50",
            "nv set qos traffic-pool default-lossy memory-percent 50",
            f"{PFC} cable-length 100",
            "nv set qos pfc-watchdog polling-interval 100",
            "nv set qos pfc-watchdog robustness 2",
            "nv set interface swp1,swp2,swp3 qos pfc-watchdog state enable",
        ],
        [
            f"{PFC} tx disable",
            f"{PFC} rx disable",
            "nv set interface swp1,swp2,swp3 qos pfc-watchdog state disable",
        ],
    ),
    (
        {"link": {"speed_gbps": 200}},  # NVUE keeps the port's own speed (auto): nothing to render
        [],
        [],
    ),
]


@pytest.mark.parametrize(("change", "removed", "added"), ONE_VALUE_CHANGES)
def test_one_intent_value_changes_exactly_its_lines(
    change: dict[str, Any], removed: list[str], added: list[str]
) -> None:
    assert changed_lines(rendered_lines(), rendered_lines(change)) == (removed, added)


def test_host_only_values_do_not_touch_the_switch() -> None:
    host_only = {"roce_tos": 107, "dcqcn": {"rp_enable": False}, "mtu": {"netdev": 4200, "rdma": 4096}}
    assert rendered_lines(host_only) == rendered_lines()


def test_ports_follow_the_inventory() -> None:
    lines = render_switch(nvue_desired(host_ports=("swp7", "swp9"), uplinks=())).text.splitlines()
    ports = {line.split()[3] for line in lines if line.startswith("nv set interface ")}
    assert ports == {"swp7,swp9"}
    assert "nv set interface swp7,swp9 qos pfc profile default-global" in lines


def _with(desired: DesiredSwitch, **changes: Any) -> DesiredSwitch:
    return dataclasses.replace(desired, **changes)


def test_values_nvue_cannot_express_are_render_errors() -> None:
    desired = nvue_desired()
    port = dataclasses.replace(desired.ports[1], trust="pcp")
    cases = [
        (_with(desired, trust="both"), "trust both has no NVUE mapping trust"),
        (_with(desired, ports=(desired.ports[0], port)), "port swp2 trust pcp differs"),
        (
            _with(desired, watchdog=dataclasses.replace(desired.watchdog, detection_ms=250)),
            "detection_ms 250 is not a multiple of NVUE's 100 ms",
        ),
        (
            _with(desired, watchdog=dataclasses.replace(desired.watchdog, restoration_ms=400)),
            "restoration_ms 400 differs from detection_ms",
        ),
        (
            _with(desired, watchdog=dataclasses.replace(desired.watchdog, action="forward")),
            "action forward: NVUE's PFC watchdog only drops",
        ),
        (
            _with(desired, queues=(dataclasses.replace(desired.queues[1], ecn_min_bytes=None),)),
            "queue 3 ecn_min_bytes is not set",
        ),
    ]
    for broken, message in cases:
        with pytest.raises(RenderError, match=message) as err:
            render_switch(broken)
        assert "cannot render switch leaf01" in str(err.value)


# NVIDIA's QoS guide (Egress Scheduler): a DWRR class takes bw-percent 1..100 and the shares of a
# profile add up to at most 100; default-global starts with 12 % / 13 % on every class.
def _scheduled(lines: list[str]) -> dict[int, tuple[str, int | None]]:
    """default-global's eight classes as the switch runs them after these lines: the factory
    12/13 % DWRR, overwritten by the rendered mode and bw-percent lines."""
    classes: dict[int, tuple[str, int | None]] = {tc: ("dwrr", 12 if tc % 2 == 0 else 13) for tc in range(8)}
    for line in lines:
        words = line.split()
        if line.startswith(f"{SCHED} traffic-class "):
            for tc in (int(t) for t in words[6].split(",")):
                mode, share = classes[tc]
                classes[tc] = (words[8], share) if words[7] == "mode" else (mode, int(words[8]))
    return classes


def _dwrr_total(lines: list[str]) -> int:
    return sum(share or 0 for mode, share in _scheduled(lines).values() if mode == "dwrr")


def test_every_class_of_default_global_is_scheduled_within_100_percent() -> None:
    lines = rendered_lines()
    assert _scheduled(lines) == {
        0: ("dwrr", 47), 1: ("dwrr", 1), 2: ("dwrr", 1), 3: ("dwrr", 47),
        4: ("dwrr", 1), 5: ("dwrr", 1), 6: ("strict", 12), 7: ("dwrr", 1),
    }  # fmt: skip
    assert _dwrr_total(lines) == 99  # was 50 + 50 + 5 untouched factory classes (12-13 %) = 163


def test_a_non_default_intent_with_other_weights_and_an_extra_queue_fits_too() -> None:
    desired = nvue_desired(NON_DEFAULT_INTENT)
    roce, cnp, default = (desired.queue(tc) for tc in (4, 5, 0))
    assert roce is not None and cnp is not None and default is not None
    extra = dataclasses.replace(default, traffic_class=2, weight_percent=20)
    weighted = _with(
        desired,
        queues=(
            dataclasses.replace(default, weight_percent=30),
            extra,
            dataclasses.replace(roce, weight_percent=90),
            cnp,
        ),
    )
    lines = render_switch(weighted).text.splitlines()
    scheduled = _scheduled(lines)
    # 30 : 20 : 90 keep their ratio in the 96 % the four unplanned classes (1 % each) leave
    assert {tc: scheduled[tc] for tc in (0, 2, 4)} == {0: ("dwrr", 20), 2: ("dwrr", 13), 4: ("dwrr", 61)}
    assert scheduled[5] == ("strict", 13) and _dwrr_total(lines) == 98
    small = _with(desired, queues=(dataclasses.replace(default, weight_percent=20), roce, cnp))
    assert _scheduled(render_switch(small).text.splitlines())[0] == ("dwrr", 20)  # fits: kept as asked


def test_shares_that_cannot_fit_are_render_errors() -> None:
    desired = nvue_desired()
    dwrr = desired.queues[0]
    crowded = tuple(
        dataclasses.replace(dwrr, traffic_class=tc, weight_percent=1 if tc == 7 else 100) for tc in range(8)
    )
    cases = [
        (_with(desired, queues=crowded), r"queue\(s\) 7 would get 0"),
        (
            _with(desired, queues=(dataclasses.replace(dwrr, weight_percent=0),)),
            "weight_percent 0 is not 1..100",
        ),
        (
            _with(desired, queues=(dataclasses.replace(dwrr, traffic_class=8),)),
            "not one of NVUE's traffic classes",
        ),
    ]
    for broken, message in cases:
        with pytest.raises(RenderError, match=message) as err:
            render_switch(broken)
        assert "cannot render switch leaf01" in str(err.value)
