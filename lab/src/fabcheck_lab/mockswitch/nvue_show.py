"""`nv show` output for the QoS objects the mock models, in NVUE's table and JSON layouts."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from fabcheck_lab.mockswitch.device import Counters
from fabcheck_lab.mockswitch.nvue_model import (
    CNP_PRIORITY,
    ROCE_PRIORITY,
    NvueQos,
    effective_qos,
    port_mtu,
    port_pfc_profile,
    port_scheduler_profile,
    port_view,
    port_watchdog,
    roce_priority,
    traffic_pools,
)
from fabcheck_lab.mockswitch.textfmt import (
    comma_list,
    nvue_attributes,
    nvue_bytes,
    nvue_section,
    simple_table,
)

Shown = tuple[str, Any]  # (table text, JSON object)
CELL_BYTES = 3072
PORT_SPEED = "400G"  # the mock's ports and cables
POOL_IDS = {
    "lossy-default-ingress": "2",
    "roce-reserved-ingress": "3",
    "lossy-default-egress": "13",
    "roce-reserved-egress": "14",
}  # Spectrum programs thresholds in whole buffer cells: the port view rounds up


def _ecn_view(q: NvueQos) -> dict[str, Any]:
    tc = q.sp_to_tc[ROCE_PRIORITY]
    cfg = q.ecn.get(tc) or next(iter(q.ecn.values()), None)
    return cfg or {"min": None, "max": None, "probability": None}


def _weight(q: NvueQos, tc: int, style: str) -> str:
    mode, bw = q.scheduler.get(tc, ("dwrr", 0))
    if mode == "strict":
        return "strict-priority" if style == "global" else "strict priority"
    return f"DWRR-{bw}%" if style == "global" else f"dwrr-{bw}%"


def _mode_label(q: NvueQos) -> str:
    return q.roce_mode if q.roce_enabled else "-"


def _sp_mapping_rows(q: NvueQos) -> list[list[str]]:
    rows = []
    for sp in range(8):
        pcps = [p for p in range(8) if q.pcp_to_sp[p] == sp]
        dscps = [d for d in range(64) if q.dscp_to_sp[d] == sp]
        rows.append([str(sp), comma_list(pcps), comma_list(dscps) if q.trust != "l2" else "-", str(sp)])
    return rows


def _pool_rows(q: NvueQos) -> list[list[str]]:
    lossless_sps = q.pfc["default-global"].active if "default-global" in q.pfc else set()
    roce_tc = {q.sp_to_tc[sp] for sp in lossless_sps}
    if q.roce_enabled and q.roce_mode == "lossless" and lossless_sps:
        lossy_sps = [sp for sp in range(8) if sp not in lossless_sps]
        return [
            ["0", "lossy-default-ingress", "Dynamic", "50%", comma_list(lossy_sps), "-"],
            ["1", "roce-reserved-ingress", "Dynamic", "50%", comma_list(lossless_sps), "-"],
            ["2", "lossy-default-egress", "Dynamic", "100%", "-", comma_list({0, CNP_PRIORITY})],
            ["3", "roce-reserved-egress", "Dynamic", "inf", "-", comma_list(roce_tc)],
        ]
    if q.roce_enabled and q.roce_mode == "lossless-single-ipool":
        return [
            ["0", "lossy-default-ingress", "Dynamic", "100%", comma_list(range(8)), "-"],
            ["2", "lossy-default-egress", "Dynamic", "100%", "-", comma_list({0, CNP_PRIORITY})],
            ["3", "roce-reserved-egress", "Dynamic", "inf", "-", comma_list(roce_tc or {3})],
        ]
    return [
        ["0", "lossy-default-ingress", "Dynamic", "100%", comma_list(range(8)), "-"],
        ["2", "lossy-default-egress", "Dynamic", "100%", "-", comma_list(range(8))],
    ]


def show_roce(config: Mapping[str, Any]) -> Shown:
    q = effective_qos(config)
    pfc = q.pfc.get("default-global")
    ecn = _ecn_view(q)
    state = "enabled" if q.roce_enabled else "disabled"
    rows: list[list[str]] = [
        ["state", state, state],
        ["mode", _mode_label(q), _mode_label(q)],
        ["pfc", "", ""],
    ]
    rows.append(["  pfc-priority", comma_list(pfc.active) if pfc else "-", ""])
    if pfc and pfc.active:
        rows += [
            ["  rx-enabled", "enabled" if pfc.rx else "disabled", ""],
            ["  tx-enabled", "enabled" if pfc.tx else "disabled", ""],
            ["  cable-length", str(pfc.cable_length), ""],
        ]
    rows += [
        ["congestion-control", "", ""],
        ["  congestion-mode", "ECN", ""],
        ["  enabled-tc", comma_list(q.ecn_tcs), ""],
        ["  min-threshold", nvue_bytes(ecn["min"]) if ecn["min"] else "-", ""],
        ["  max-threshold", nvue_bytes(ecn["max"]) if ecn["max"] else "-", ""],
        ["  probability", str(ecn["probability"] if ecn["probability"] is not None else "-"), ""],
        ["trust", "", ""],
        ["  trust-mode", q.trust_label(), ""],
    ]
    tlv = q.roce_enabled and q.roce_mode != "lossy-multi-tc"
    if tlv:
        rows += [
            ["lldp-app-tlv", "", ""],
            ["  priority", str(ROCE_PRIORITY), ""],
            ["  protocol-id", "4791", ""],
            ["  selector", "UDP", ""],
        ]
    sp_tc = [[str(sp), str(sp), str(q.sp_to_tc[sp]), _weight(q, q.sp_to_tc[sp], "global")] for sp in range(8)]
    text = "\n".join(
        [
            nvue_attributes(["operational", "applied"], rows),
            nvue_section(
                "RoCE PCP/DSCP->SP mapping configurations",
                ["", "pcp", "dscp", "switch-prio"],
                _sp_mapping_rows(q),
            ),
            nvue_section(
                "RoCE SP->TC mapping and ETS configurations",
                ["", "switch-prio", "traffic-class", "scheduler-weight"],
                sp_tc,
            ),
            nvue_section(
                "RoCE pool config",
                ["", "name", "mode", "size", "switch-priorities", "traffic-class"],
                _pool_rows(q),
            ),
            "Exception List",
            "=================",
            "No Data",
        ]
    )
    data = {
        "state": state,
        "mode": _mode_label(q),
        "pfc": {
            "pfc-priority": comma_list(pfc.active) if pfc else "-",
            **(
                {
                    "rx-enabled": "enabled" if pfc.rx else "disabled",
                    "tx-enabled": "enabled" if pfc.tx else "disabled",
                    "cable-length": pfc.cable_length,
                }
                if pfc and pfc.active
                else {}
            ),
        },
        "congestion-control": {
            "congestion-mode": "ECN",
            "enabled-tc": comma_list(q.ecn_tcs),
            "min-threshold": ecn["min"],
            "max-threshold": ecn["max"],
            "probability": ecn["probability"],
        },
        "trust": {"trust-mode": q.trust_label()},
        **(
            {"lldp-app-tlv": {"priority": ROCE_PRIORITY, "protocol-id": 4791, "selector": "UDP"}}
            if tlv
            else {}
        ),
        "dscp-map": {
            str(sp): {"pcp": r[1], "dscp": r[2], "switch-prio": sp}
            for sp, r in enumerate(_sp_mapping_rows(q))
        },
        "tc-map": {
            str(sp): {
                "switch-prio": sp,
                "traffic-class": q.sp_to_tc[sp],
                "scheduler-weight": _weight(q, q.sp_to_tc[sp], "global"),
            }
            for sp in range(8)
        },
    }
    return text, data


def _cells(value: int | None) -> int | None:
    return None if value is None else math.ceil(value / CELL_BYTES) * CELL_BYTES


def show_port_roce_status(config: Mapping[str, Any], port: str) -> Shown:
    q = port_view(config, port)
    pfc = port_pfc_profile(config, q, port)
    ecn = _ecn_view(q)
    sp = roce_priority(q)
    active = pfc.active if pfc else set()
    rows = [
        ["congestion-control", "", "", ""],
        ["  congestion-mode", "ecn, absolute", "", "Congestion config mode"],
        ["  enabled-tc", comma_list(q.ecn_tcs), "", "Congestion config enabled Traffic Class"],
        [
            "  max-threshold",
            nvue_bytes(_cells(ecn["max"])) if ecn["max"] else "-",
            "",
            "Congestion config max-threshold",
        ],
        [
            "  min-threshold",
            nvue_bytes(_cells(ecn["min"])) if ecn["min"] else "-",
            "",
            "Congestion config min-threshold",
        ],
        ["  probability", str(ecn["probability"] if ecn["probability"] is not None else "-"), "", ""],
        ["lldp-app-tlv", "", "", ""],
        ["  priority", str(ROCE_PRIORITY), "", ""],
        ["  protocol-id", "4791", "", ""],
        ["  selector", "UDP", "", ""],
        ["pfc", "", "", ""],
        ["  pfc-priority", comma_list(active), "", "switch-prio on which PFC is enabled"],
        ["  rx-enabled", "yes" if pfc and active and pfc.rx else "no", "", "PFC Rx Enabled status"],
        ["  tx-enabled", "yes" if pfc and active and pfc.tx else "no", "", "PFC Tx Enabled status"],
        ["trust", "", "", ""],
        ["  trust-mode", q.trust_label(), "", "Trust Setting on the port for packet classification"],
        ["mode", _mode_label(q), "", "Roce Mode"],
    ]
    cnp_sp = q.dscp_to_sp[48]
    mapping = [["cnp", "6", "48", str(cnp_sp)], ["roce", "3", "26", str(sp)]]
    sp_tc = [
        ["cnp", str(cnp_sp), str(q.sp_to_tc[cnp_sp]), _weight(q, q.sp_to_tc[cnp_sp], "port")],
        ["roce", str(sp), str(q.sp_to_tc[sp]), _weight(q, q.sp_to_tc[sp], "port")],
    ]
    pools = [
        [
            r[0],
            r[1],
            "DYNAMIC",
            POOL_IDS[r[1]],
            r[4],
            r[5],
            "inf" if r[3] == "inf" else "15.16 MB",
            "0 Bytes",
            "0 Bytes",
        ]
        for r in _pool_rows(q)
    ]
    text = "\n".join(
        [
            nvue_attributes(["operational", "applied", "description"], rows),
            "",
            nvue_section(
                "RoCE PCP/DSCP->SP mapping configurations", ["", "pcp", "dscp", "switch-prio"], mapping
            ),
            "",
            nvue_section(
                "RoCE SP->TC mapping and ETS configurations",
                ["", "switch-prio", "traffic-class", "scheduler-weight"],
                sp_tc,
            ),
            "",
            nvue_section(
                "RoCE Pool Status",
                [
                    "",
                    "name",
                    "mode",
                    "pool-id",
                    "switch-priorities",
                    "traffic-class",
                    "size",
                    "current-usage",
                    "max-usage",
                ],
                pools,
            ),
        ]
    )
    data = {
        "congestion-control": {
            "congestion-mode": "ecn, absolute",
            "enabled-tc": comma_list(q.ecn_tcs),
            "max-threshold": _cells(ecn["max"]),
            "min-threshold": _cells(ecn["min"]),
            "probability": ecn["probability"],
        },
        "lldp-app-tlv": {"priority": ROCE_PRIORITY, "protocol-id": 4791, "selector": "UDP"},
        "pfc": {"pfc-priority": comma_list(active), "rx-enabled": rows[12][1], "tx-enabled": rows[13][1]},
        "trust": {"trust-mode": q.trust_label()},
        "mode": _mode_label(q),
        # The sub-nodes as NVIDIA's command reference names them (`nv show interface P qos roce status
        # prio-map|tc-map|pool-map`); their JSON layout is the mock's own (unverified).
        "prio-map": {r[0]: {"pcp": int(r[1]), "dscp": int(r[2]), "switch-prio": int(r[3])} for r in mapping},
        "tc-map": {
            r[0]: {"switch-prio": int(r[1]), "traffic-class": int(r[2]), "scheduler-weight": r[3]}
            for r in sp_tc
        },
        "pool-map": {
            r[0]: {
                "name": r[1],
                "mode": r[2],
                "pool-id": int(r[3]),
                "switch-priorities": r[4],
                "traffic-class": r[5],
            }
            for r in pools
        },
    }
    return text, data


# `nv show interface P qos roce counters` as NVIDIA's CL 5.16 sample prints it (tests/data/real/nvue/
# nv-show-interface-swp16-qos-roce-counters.txt): groups nested under rx-stats / tx-stats, each counter
# with its description; byte counts in NVUE's human units.
_COUNTER_ROWS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    (
        "rx-stats",
        "rx-non-roce-stats",
        (
            ("buffer-max-usage", "Max Ingress Pool-buffer usage for non-RoCE traffic"),
            ("buffer-usage", "Current Ingress Pool-buffer usage for non-RoCE traffic"),
            ("no-buffer-discard", "Rx buffer discards for non-RoCE traffic"),
            ("non-roce-bytes", "non-roce rx bytes"),
            ("non-roce-packets", "non-roce rx packets"),
            ("pg-max-usage", "Max PG-buffer usage for non-RoCE traffic"),
            ("pg-usage", "Current PG-buffer usage for non-RoCE traffic"),
        ),
    ),
    (
        "rx-stats",
        "rx-pfc-stats",
        (
            ("pause-duration", "Rx PFC pause duration for RoCE traffic"),
            ("pause-packets", "Rx PFC pause packets for RoCE traffic"),
        ),
    ),
    (
        "rx-stats",
        "rx-roce-stats",
        (
            ("buffer-max-usage", "Max Ingress Pool-buffer usage for RoCE traffic"),
            ("buffer-usage", "Current Ingress Pool-buffer usage for RoCE traffic"),
            ("no-buffer-discard", "Rx buffer discards for RoCE traffic"),
            ("pg-max-usage", "Max PG-buffer usage for RoCE traffic"),
            ("pg-usage", "Current PG-buffer usage for RoCE traffic"),
            ("roce-bytes", "Rx RoCE Bytes"),
            ("roce-packets", "Rx RoCE Packets"),
        ),
    ),
    (
        "tx-stats",
        "tx-cnp-stats",
        (
            ("buffer-max-usage", "Max Egress Pool-buffer usage for CNP traffic"),
            ("buffer-usage", "Current Egress Pool-buffer usage for CNP traffic"),
            ("cnp-bytes", "Tx CNP Packet Bytes"),
            ("cnp-packets", "Tx CNP Packets"),
            ("tc-max-usage", "Max TC-buffer usage for CNP traffic"),
            ("tc-usage", "Current TC-buffer usage for CNP traffic"),
            ("unicast-no-buffer-discard", "Tx buffer discards for CNP traffic"),
        ),
    ),
    ("tx-stats", "tx-ecn-stats", (("ecn-marked-packets", "Tx ECN marked packets"),)),
    (
        "tx-stats",
        "tx-pfc-stats",
        (
            ("pause-duration", "Tx PFC pause duration for RoCE traffic"),
            ("pause-packets", "Tx PFC pause packets for RoCE traffic"),
        ),
    ),
    (
        "tx-stats",
        "tx-roce-stats",
        (
            ("buffer-max-usage", "Max Egress Pool-buffer usage for RoCE traffic"),
            ("buffer-usage", "Current Egress Pool-buffer usage for RoCE traffic"),
            ("roce-bytes", "Tx RoCE Packet bytes"),
            ("roce-packets", "Tx RoCE Packets"),
            ("tc-max-usage", "Max TC-buffer usage for RoCE traffic"),
            ("tc-usage", "Current TC-buffer usage for RoCE traffic"),
            ("unicast-no-buffer-discard", "Tx buffer discards for RoCE traffic"),
        ),
    ),
)


def show_port_roce_counters(config: Mapping[str, Any], counters: Counters, port: str) -> Shown:
    q = effective_qos(config)
    sp = roce_priority(q)
    tc = q.sp_to_tc[sp]
    c = counters.ports[port]
    cnp_tc = q.sp_to_tc[CNP_PRIORITY]
    values: dict[tuple[str, str], int] = {
        ("rx-pfc-stats", "pause-duration"): c["pfc_rx"][sp] * 12,
        ("rx-pfc-stats", "pause-packets"): c["pfc_rx"][sp],
        ("rx-roce-stats", "roce-bytes"): c["rx_bytes"][tc],
        ("rx-roce-stats", "roce-packets"): c["rx_packets"][tc],
        ("tx-cnp-stats", "cnp-packets"): c["ecn_marked"][tc] // 10,
        ("tx-cnp-stats", "unicast-no-buffer-discard"): c["drops"][cnp_tc] if cnp_tc != tc else 0,
        ("tx-ecn-stats", "ecn-marked-packets"): c["ecn_marked"][tc],
        ("tx-pfc-stats", "pause-duration"): c["pfc_tx"][sp] * 12,
        ("tx-pfc-stats", "pause-packets"): c["pfc_tx"][sp],
        ("tx-roce-stats", "roce-bytes"): c["tx_bytes"][tc],
        ("tx-roce-stats", "roce-packets"): c["tx_packets"][tc],
        ("tx-roce-stats", "unicast-no-buffer-discard"): c["drops"][tc],
    }
    rows: list[list[str]] = []
    data: dict[str, dict[str, dict[str, int]]] = {}
    for top, group, counters_ in _COUNTER_ROWS:
        if top not in data:
            rows.append([top, "", "", ""])
            data[top] = {}
        rows.append([f"  {group}", "", "", ""])
        data[top][group] = {}
        for name, description in counters_:
            value = values.get((group, name), 0)
            data[top][group][name] = value
            shown = nvue_bytes(value) if "bytes" in name or "usage" in name else str(value)
            rows.append([f"    {name}", shown, "", description])
    return nvue_attributes(["operational", "applied", "description"], rows), data


def _profile_rows(config: Mapping[str, Any], q: NvueQos, name: str) -> list[list[str]] | None:
    prof = q.pfc.get(name)
    if prof is None:
        return None
    applied = config.get("qos", {}).get("pfc", {}).get(name, {})

    def cell(key: str, shown: str) -> str:
        return shown if key in applied else ""

    state = {True: "enable", False: "disable"}
    return [
        [
            "cable-length",
            str(prof.cable_length),
            cell("cable-length", str(prof.cable_length)),
            "Cable Length (in meters)",
        ],
        [
            "port-buffer",
            f"{prof.port_buffer} B",
            cell("port-buffer", f"{prof.port_buffer} B"),
            "Port Buffer (in bytes)",
        ],
        ["rx", state[prof.rx], cell("rx", state[prof.rx]), "PFC Rx State"],
        ["tx", state[prof.tx], cell("tx", state[prof.tx]), "PFC Tx State"],
        [
            "xoff-threshold",
            f"{prof.xoff} B",
            cell("xoff-threshold", f"{prof.xoff} B"),
            "Xoff Threshold (in bytes)",
        ],
        [
            "xon-threshold",
            f"{prof.xon} B",
            cell("xon-threshold", f"{prof.xon} B"),
            "Xon Threshold (in bytes)",
        ],
        [
            "[switch-priority]",
            comma_list(prof.priorities),
            cell("switch-priority", comma_list(prof.priorities)),
            "Collection of switch priorities.",
        ],
    ]


def show_pfc(config: Mapping[str, Any], profile: str | None) -> Shown | None:
    q = effective_qos(config)
    if profile is None:
        rows = [[name, f"switch-priority: {comma_list(p.priorities)}"] for name, p in sorted(q.pfc.items())]
        data = {
            name: {"switch-priority": {str(s): {} for s in sorted(p.priorities)}} for name, p in q.pfc.items()
        }
        if not rows:
            return "", {}
        return simple_table(["Profile", "Summary"], rows, "ll"), data
    rows = _profile_rows(config, q, profile)
    if rows is None:
        return None
    prof = q.pfc[profile]
    data = {
        "cable-length": prof.cable_length,
        "port-buffer": prof.port_buffer,
        "rx": "enable" if prof.rx else "disable",
        "tx": "enable" if prof.tx else "disable",
        "xoff-threshold": prof.xoff,
        "xon-threshold": prof.xon,
        "switch-priority": {str(s): {} for s in sorted(prof.priorities)},
    }
    return nvue_attributes(["operational", "applied", "description"], rows), data


def show_congestion(config: Mapping[str, Any], profile: str | None) -> Shown | None:
    q = effective_qos(config)
    if profile is None:
        summary = f"traffic-class: {comma_list(sorted(q.ecn))}"
        return simple_table(["Profile", "Summary"], [["default-global", summary]], "ll"), {
            "default-global": {"traffic-class": {str(tc): {} for tc in sorted(q.ecn)}}
        }
    if profile != "default-global":
        return None
    state = {True: "enable", False: "disable"}
    rows = [
        [str(tc), state[c["ecn"]], state[c["red"]], f"{c['min']} B", f"{c['max']} B", str(c["probability"])]
        for tc, c in sorted(q.ecn.items())
    ]
    text = "\n".join(
        [
            nvue_attributes(["operational", "applied", "description"], []),
            "",
            nvue_section(
                "ECN Configurations", ["traffic-class", "ECN", "RED", "Min Th", "Max Th", "Probability"], rows
            ),
        ]
    )
    data = {
        "traffic-class": {
            str(tc): {
                "ecn": state[c["ecn"]],
                "red": state[c["red"]],
                "min-threshold": c["min"],
                "max-threshold": c["max"],
                "probability": c["probability"],
            }
            for tc, c in sorted(q.ecn.items())
        }
    }
    return text, data


def show_scheduler(config: Mapping[str, Any], profile: str) -> Shown | None:
    if profile != "default-global":
        return None
    rows, classes = _scheduler_table(effective_qos(config))
    text = "\n".join(
        [
            nvue_attributes(["operational", "applied", "description"], []),
            "",
            nvue_section("TC->DWRR weight configuration", ["traffic-class", "mode", "bw-percent"], rows),
        ]
    )
    return text, {"traffic-class": classes}


def _scheduler_table(q: NvueQos) -> tuple[list[list[str]], dict[str, Any]]:
    rows = [
        [str(tc), mode, "" if mode == "strict" else str(bw)] for tc, (mode, bw) in sorted(q.scheduler.items())
    ]
    data = {
        str(tc): {"mode": mode, **({} if mode == "strict" else {"bw-percent": bw})}
        for tc, (mode, bw) in sorted(q.scheduler.items())
    }
    return rows, data


def show_port_scheduler(config: Mapping[str, Any], port: str) -> Shown:
    """`nv show interface P qos egress-scheduler`: the profile bound to the port (NVUE reference,
    `nv show interface swp1 qos`: egress-scheduler profile in the applied column only). A bound
    profile's classes follow as the port runs them (the stock scheduler under the profile's own
    classes); with none bound the node is empty and the port runs default-global."""
    name = port_scheduler_profile(config, port)
    if name is None:
        return nvue_attributes(["operational", "applied"], []), {}
    rows, classes = _scheduler_table(port_view(config, port))
    text = "\n".join(
        [
            nvue_attributes(["operational", "applied"], [["profile", "", name]]),
            "",
            nvue_section("TC->DWRR weight configuration", ["traffic-class", "mode", "bw-percent"], rows),
        ]
    )
    return text, {"profile": name, "traffic-class": classes}


def show_mapping(config: Mapping[str, Any], profile: str, dscp: int | None) -> Shown | None:
    if profile != "default-global":
        return None
    q = effective_qos(config)
    applied = config.get("qos", {}).get("mapping", {}).get("default-global", {})
    if dscp is not None:
        sp = str(q.dscp_to_sp[dscp])
        shown = sp if str(dscp) in applied.get("dscp", {}) else ""
        rows = [["switch-priority", sp, shown, "Internal Switch Priority"]]
        return nvue_attributes(["operational", "applied", "description"], rows), {"switch-priority": int(sp)}
    rows = [
        [
            "port-default-sp",
            str(q.port_default_sp),
            str(applied.get("port-default-sp", "")),
            "Port Default Switch Priority",
        ],
        ["trust", q.trust, applied.get("trust", ""), "Port Trust configuration"],
    ]
    dscp_rows = [[str(d), str(q.dscp_to_sp[d])] for d in range(64)]
    text = "\n".join(
        [
            nvue_attributes(["operational", "applied", "description"], rows),
            "",
            nvue_section("DSCP->SP mapping configuration", ["dscp", "switch-priority"], dscp_rows),
        ]
    )
    data = {
        "port-default-sp": q.port_default_sp,
        "trust": q.trust,
        "dscp": {str(d): {"switch-priority": q.dscp_to_sp[d]} for d in range(64)},
    }
    return text, data


def show_queue_mapping(config: Mapping[str, Any], profile: str) -> Shown | None:
    if profile != "default-global":
        return None
    q = effective_qos(config)
    rows = [[str(sp), str(q.sp_to_tc[sp])] for sp in range(8)]
    text = "\n".join(
        [
            nvue_attributes(["operational", "applied", "description"], []),
            "",
            nvue_section("SP->TC mapping configuration", ["switch-priority", "traffic-class"], rows),
        ]
    )
    return text, {"switch-priority": {str(sp): {"traffic-class": q.sp_to_tc[sp]} for sp in range(8)}}


def show_watchdog_global(config: Mapping[str, Any]) -> Shown:
    q = effective_qos(config)
    rows = [
        ["polling-interval", str(q.wd_polling_interval), "", "Polling interval (in milliseconds)"],
        ["robustness", str(q.wd_robustness), "", "Number of polling intervals"],
    ]
    return (
        nvue_attributes(["operational", "applied", "description"], rows),
        {"polling-interval": q.wd_polling_interval, "robustness": q.wd_robustness},
    )


def show_traffic_pools(config: Mapping[str, Any]) -> Shown:
    """`nv show qos traffic-pool`: each pool's share of the shared buffer (table and JSON shape
    unverified: no real capture; the pool ids and memory-percent are the NVUE command reference's)."""
    pools = traffic_pools(config)
    rows = [[name, str(share)] for name, share in pools.items()]
    data = {name: {"memory-percent": share} for name, share in pools.items()}
    return simple_table(["Traffic Pool", "memory-percent"], rows, "lr"), data


def show_port_watchdog(config: Mapping[str, Any], port: str) -> Shown:
    enabled = port_watchdog(config, port)
    state = "enabled" if enabled else "disabled"
    head = nvue_attributes(["operational", "applied"], [["state", state, state]])
    if not enabled:
        return head, {"state": state}
    q = effective_qos(config)
    prof = port_pfc_profile(config, q, port)
    tcs = sorted({q.sp_to_tc[sp] for sp in (prof.active if prof else set())})
    rows = [[str(tc), "OK", "0"] for tc in tcs]
    text = "\n".join(
        [head, "", nvue_section("PFC WD Status", ["traffic-class", "status", "deadlock-count"], rows)]
    )
    return text, {"state": state, "status": {str(tc): {"status": "OK", "deadlock-count": 0} for tc in tcs}}


def show_port_link(config: Mapping[str, Any], port: str) -> Shown:
    """`nv show interface P link` in the layout of NVIDIA's command reference example (operational,
    applied and pending columns; an empty [breakout] row; counters under `stats`)."""
    mtu = port_mtu(config, port)
    link = config.get("interface", {}).get(port, {}).get("link", {})
    state = link.get("state", "up")
    applied_speed = link.get("speed", "auto")
    # The mock's ports and cables are 400G: auto trains there, a set speed runs as set.
    speed = PORT_SPEED if applied_speed == "auto" else applied_speed
    applied_mtu = str(link.get("mtu", mtu))
    rows = [
        ["auto-negotiate", "off", "on", "on"],
        ["duplex", "full", "full", "full"],
        ["speed", speed, applied_speed, applied_speed],
        ["fec", "rs", "auto", "auto"],
        ["mtu", str(mtu), applied_mtu, applied_mtu],
        ["[breakout]", "", "", ""],
        ["state", state, state, state],
        ["stats", "", "", ""],
        *([f"  {name}", "0", "", ""] for name in ("carrier-transitions", "in-drops", "in-errors", "in-pkts")),
    ]
    data = {
        "auto-negotiate": "off",
        "duplex": "full",
        "fec": "rs",
        "mtu": mtu,
        "speed": speed,
        "state": state,
    }
    return nvue_attributes(["operational", "applied", "pending"], rows), data


def yaml_lines(tree: Any, indent: int = 0) -> list[str]:
    """Tiny YAML emitter for NVUE config trees (dict of dicts and scalars)."""
    pad = "  " * indent
    lines: list[str] = []
    for key, value in tree.items():
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:" + (" {}" if not value else ""))
            lines.extend(yaml_lines(value, indent + 1))
        else:
            lines.append(f"{pad}{key}: {value}")
    return lines


def config_documents(docs: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """`- set:` / `- unset:` YAML documents as `nv config diff` and `nv config show` print them."""
    lines: list[str] = []
    for kind, tree in docs:
        lines.append(f"- {kind}:")
        lines.extend(yaml_lines(tree, 2))
    return "\n".join(lines)


def show_lldp(neighbors: Mapping[str, tuple[str, str]], ports: Sequence[str]) -> Shown:
    """`nv show interface lldp`: every port, with the host and port LLDP hears on it (blank: none)."""
    rows = [[port, "400G", "swp", *neighbors.get(port, ("", ""))] for port in ports]
    table = simple_table(["Interface", "Speed", "Type", "Remote Host", "Remote Port"], rows, "lllll")
    data = {
        port: {"lldp": {"neighbor": {system: {"port": {"name": remote}}}}}
        for port, (system, remote) in neighbors.items()
    }
    return table, data
