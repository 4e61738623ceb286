"""NVUE QoS as the ASIC runs it: factory defaults, then the RoCE preset, then explicit `nv set` keys.

The factory defaults are NVIDIA's: the CL 5.5 NVUE API dump of a factory switch (CumulusNetworks/docs,
Running-the-Playbooks.md; tests/data/real/nvue/nvue-api-cl55-factory-qos.json) and, where the dump is
silent, the QoS guide. `factory_qos_tree` spells them back as NVUE's config tree; a conformance test
diffs it with the dump and lists every difference with its reason."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fabcheck_lab.mockswitch.device import ROCE_DSCP, PortQos

DEFAULT_MTU = 9216
ROCE_PRIORITY = 3
CNP_PRIORITY = 6
ROCE_ECN = {"ecn": True, "red": False, "min": 150000, "max": 1500000, "probability": 100}
MULTI_TC_ECN = {"ecn": True, "red": False, "min": 166912, "max": 239616, "probability": 5}
_MULTI_TC_DSCP = {
    0: [0, 7, 8, 9, 10, *range(51, 64)],
    1: [1, 2],
    2: [3, 4],
    3: [5, 6],
    4: list(range(11, 41)),
    5: list(range(41, 51)),
}


@dataclass
class PfcProfile:
    priorities: set[int] = field(default_factory=set)
    tx: bool = True
    rx: bool = True
    cable_length: int = 10
    port_buffer: int = 25000
    xoff: int = 10000
    xon: int = 2000

    @property
    def active(self) -> set[int]:
        """Lossless priorities: a priority is lossless only while the port both sends pause frames
        (tx) and honours them (rx); with either off its queue drops under congestion."""
        return self.priorities if (self.tx and self.rx) else set()


@dataclass
class NvueQos:
    roce_enabled: bool = False
    roce_mode: str = "lossless"
    trust: str = "l2"
    port_default_sp: int = 0
    dscp_to_sp: list[int] = field(default_factory=lambda: [d >> 3 for d in range(64)])
    pcp_to_sp: list[int] = field(default_factory=lambda: list(range(8)))
    sp_to_tc: list[int] = field(default_factory=lambda: list(range(8)))
    pfc: dict[str, PfcProfile] = field(default_factory=dict)
    ecn: dict[int, dict[str, Any]] = field(default_factory=lambda: {0: dict(ROCE_ECN)})
    scheduler: dict[int, tuple[str, int]] = field(
        default_factory=lambda: {tc: ("dwrr", 12 if tc % 2 == 0 else 13) for tc in range(8)}
    )
    wd_polling_interval: int = 100
    wd_robustness: int = 3

    @property
    def ecn_tcs(self) -> list[int]:
        return sorted(tc for tc, cfg in self.ecn.items() if cfg["ecn"])

    @property
    def lossless(self) -> bool:
        return self.roce_enabled and self.roce_mode in ("lossless", "lossless-single-ipool")

    def trust_label(self) -> str:
        return {"l2": "pcp", "l3": "dscp", "both": "pcp,dscp", "port": "port"}[self.trust]


def _apply_roce_preset(q: NvueQos, mode: str) -> None:
    q.roce_enabled, q.roce_mode, q.trust = True, mode, "both"
    if mode == "lossy-multi-tc":
        q.dscp_to_sp = [0] * 64
        for sp, dscps in _MULTI_TC_DSCP.items():
            for d in dscps:
                q.dscp_to_sp[d] = sp
        q.ecn = {tc: dict(MULTI_TC_ECN) for tc in (1, 2, 3)}
        q.scheduler = dict(zip(range(8), [("dwrr", w) for w in (4, 8, 18, 22, 22, 22, 4, 0)], strict=True))
        return
    q.sp_to_tc = [sp if sp in (ROCE_PRIORITY, CNP_PRIORITY) else 0 for sp in range(8)]
    q.ecn = {0: dict(ROCE_ECN), ROCE_PRIORITY: dict(ROCE_ECN)}
    q.scheduler = {tc: ("dwrr", 0) for tc in range(8)}
    q.scheduler.update({0: ("dwrr", 50), ROCE_PRIORITY: ("dwrr", 50), CNP_PRIORITY: ("strict", 0)})
    if mode in ("lossless", "lossless-single-ipool"):
        q.pfc["default-global"] = PfcProfile({ROCE_PRIORITY}, cable_length=100)


def _overlay_pfc(q: NvueQos, profiles: Mapping[str, Any]) -> None:
    for name, cfg in profiles.items():
        prof = q.pfc.setdefault(name, PfcProfile())
        if "switch-priority" in cfg:
            prof.priorities = {int(p) for p in cfg["switch-priority"]}
        prof.tx = cfg.get("tx", "enable" if prof.tx else "disable") == "enable"
        prof.rx = cfg.get("rx", "enable" if prof.rx else "disable") == "enable"
        prof.cable_length = cfg.get("cable-length", prof.cable_length)
        prof.port_buffer = cfg.get("port-buffer", prof.port_buffer)
        prof.xoff = cfg.get("xoff-threshold", prof.xoff)
        prof.xon = cfg.get("xon-threshold", prof.xon)


def _overlay_ecn(q: NvueQos, tcs: Mapping[str, Any]) -> None:
    for tc, cfg in tcs.items():
        cur = q.ecn.setdefault(int(tc), dict(ROCE_ECN))
        for key, attr in (("min-threshold", "min"), ("max-threshold", "max"), ("probability", "probability")):
            if key in cfg:
                cur[attr] = cfg[key]
        for key in ("ecn", "red"):
            if key in cfg:
                cur[key] = cfg[key] == "enable"


def _overlay_mapping(q: NvueQos, cfg: Mapping[str, Any]) -> None:
    q.trust = cfg.get("trust", q.trust)
    q.port_default_sp = cfg.get("port-default-sp", q.port_default_sp)
    for dscp, entry in cfg.get("dscp", {}).items():
        if "switch-priority" in entry:
            q.dscp_to_sp[int(dscp)] = entry["switch-priority"]
    for pcp, entry in cfg.get("pcp", {}).items():
        if "switch-priority" in entry:
            q.pcp_to_sp[int(pcp)] = entry["switch-priority"]


def effective_qos(config: Mapping[str, Any]) -> NvueQos:
    qos_cfg = config.get("qos", {})
    q = NvueQos()
    roce = qos_cfg.get("roce")
    if roce is not None and roce.get("state", "enabled") == "enabled" and roce.get("enable", "on") == "on":
        _apply_roce_preset(q, roce.get("mode", "lossless"))
    _overlay_mapping(q, qos_cfg.get("mapping", {}).get("default-global", {}))
    for sp, entry in (
        qos_cfg.get("egress-queue-mapping", {}).get("default-global", {}).get("switch-priority", {}).items()
    ):
        if "traffic-class" in entry:
            q.sp_to_tc[int(sp)] = entry["traffic-class"]
    _overlay_pfc(q, qos_cfg.get("pfc", {}))
    _overlay_ecn(q, qos_cfg.get("congestion-control", {}).get("default-global", {}).get("traffic-class", {}))
    _overlay_scheduler(
        q, qos_cfg.get("egress-scheduler", {}).get("default-global", {}).get("traffic-class", {})
    )
    wd = qos_cfg.get("pfc-watchdog", {})
    q.wd_polling_interval = wd.get("polling-interval", q.wd_polling_interval)
    q.wd_robustness = wd.get("robustness", q.wd_robustness)
    return q


def port_pfc_profile(config: Mapping[str, Any], q: NvueQos, port: str) -> PfcProfile | None:
    name = config.get("interface", {}).get(port, {}).get("qos", {}).get("pfc", {}).get("profile")
    return q.pfc.get(name or "default-global")


def port_mtu(config: Mapping[str, Any], port: str) -> int:
    return int(config.get("interface", {}).get(port, {}).get("link", {}).get("mtu", DEFAULT_MTU))


def port_watchdog(config: Mapping[str, Any], port: str) -> bool:
    wd = config.get("interface", {}).get(port, {}).get("qos", {}).get("pfc-watchdog")
    return wd is not None and wd.get("state", "enable") == "enable"


def roce_priority(q: NvueQos) -> int:
    """Switch priority that untagged DSCP 26 traffic is classified to."""
    return q.dscp_to_sp[ROCE_DSCP] if q.trust in ("l3", "both") else q.port_default_sp


LOSSLESS_POOLS = ("default-lossless", "roce-lossless")


def traffic_pools(config: Mapping[str, Any]) -> dict[str, int]:
    """The buffer split as the switch runs it: each configured pool's memory-percent, and
    default-lossy, unless set itself, keeping the rest (100 % by default: NVIDIA's Flow Control
    Buffers note). How a real switch shows an unset pool is unverified."""
    configured = {
        name: int(pool.get("memory-percent", 0))
        for name, pool in config.get("qos", {}).get("traffic-pool", {}).items()
        if "memory-percent" in pool
    }
    if "default-lossy" not in configured:
        configured["default-lossy"] = max(0, 100 - sum(configured.values()))
    return dict(sorted(configured.items()))


def lossless_priorities(config: Mapping[str, Any], q: NvueQos) -> set[int] | None:
    """Which PFC priorities a lossless pool buffers: None (every one) when the RoCE lossless preset
    or a lossless traffic pool with memory is configured, else none. By default 100 % of the buffer
    is in the lossy pool, so PFC pauses nothing until buffer moves to a lossless pool (NVIDIA's
    Flow Control Buffers note). Which pool takes which priority is not modelled."""
    pools = config.get("qos", {}).get("traffic-pool", {})
    if q.lossless or any(int(pools.get(name, {}).get("memory-percent", 0)) > 0 for name in LOSSLESS_POOLS):
        return None
    return set()


def _port_profile(config: Mapping[str, Any], port: str, feature: str) -> Mapping[str, Any] | None:
    """The per-port profile of `feature` bound to `port` (None: the port uses default-global)."""
    name = config.get("interface", {}).get(port, {}).get("qos", {}).get(feature, {}).get("profile")
    if not name or name == "default-global":
        return None
    return config.get("qos", {}).get(feature, {}).get(name, {})


DWRR_TOTAL = 100  # NVIDIA's QoS guide: the bw-percent of a profile's classes add up to at most 100
AUTO_SAVE_SINCE = (5, 9)  # NVUE command reference (nv config apply): auto-save on by default from 5.9


def auto_save(config: Mapping[str, Any], release: tuple[int, int]) -> bool:
    """Whether `nv config apply` also saves: the applied `system config auto-save` setting, else the
    release's default (off before CL 5.9, on from it)."""
    node = config.get("system", {}).get("config", {}).get("auto-save", {})
    if "state" in node:
        return bool(node["state"] == "enabled")
    if "enable" in node:
        return bool(node["enable"] == "on")
    return release >= AUTO_SAVE_SINCE


def factory_qos_tree() -> dict[str, Any]:
    """The QoS tree a factory switch of this mock runs (no `nv set` at all), in NVUE's config-tree
    shape: what the mock's model holds, spelled as the CL 5.5 API dump spells its defaults."""
    q = effective_qos({})
    return {
        "congestion-control": {
            "default-global": {
                "traffic-class": {
                    str(tc): {
                        "ecn": "enable" if cfg["ecn"] else "disable",
                        "max-threshold": cfg["max"],
                        "min-threshold": cfg["min"],
                        "probability": cfg["probability"],
                        "red": "enable" if cfg["red"] else "disable",
                    }
                    for tc, cfg in sorted(q.ecn.items())
                }
            }
        },
        "egress-queue-mapping": {
            "default-global": {
                "switch-priority": {str(sp): {"traffic-class": tc} for sp, tc in enumerate(q.sp_to_tc)}
            }
        },
        "egress-scheduler": {
            "default-global": {
                "traffic-class": {
                    str(tc): {"mode": mode, **({} if mode == "strict" else {"bw-percent": bw})}
                    for tc, (mode, bw) in sorted(q.scheduler.items())
                }
            }
        },
        "mapping": {
            "default-global": {
                "dscp": {str(d): {"switch-priority": sp} for d, sp in enumerate(q.dscp_to_sp)},
                "pcp": {str(p): {"switch-priority": sp} for p, sp in enumerate(q.pcp_to_sp)},
                "port-default-sp": q.port_default_sp,
                "trust": q.trust,
            }
        },
        "pfc": {
            name: {"switch-priority": {str(p): {} for p in sorted(prof.priorities)}}
            for name, prof in q.pfc.items()
        },
        "pfc-watchdog": {"polling-interval": q.wd_polling_interval, "robustness": q.wd_robustness},
        "roce": {"enable": "on" if q.roce_enabled else "off"},
        "traffic-pool": {name: {"memory-percent": share} for name, share in traffic_pools({}).items()},
    }


def _dwrr_problems(qos_cfg: Mapping[str, Any], q: NvueQos) -> list[str]:
    """Egress-scheduler profiles whose DWRR shares add up to more than 100 (NVIDIA's QoS guide):
    default-global as it runs (factory 12/13 % under the explicit keys), another profile by the
    classes it names (NVIDIA's port-group example gives a profile only some classes)."""
    problems = []
    profiles = {"default-global": q.scheduler}
    for name, cfg in qos_cfg.get("egress-scheduler", {}).items():
        if name != "default-global":
            classes = cfg.get("traffic-class", {})
            profiles[name] = {
                int(tc): (entry.get("mode", "dwrr"), entry.get("bw-percent", 0))
                for tc, entry in classes.items()
            }
    for name, classes in sorted(profiles.items()):
        total = sum(bw for mode, bw in classes.values() if mode == "dwrr")
        if total > DWRR_TOTAL:
            shares = ", ".join(f"{tc}: {bw}" for tc, (mode, bw) in sorted(classes.items()) if mode == "dwrr")
            problems.append(
                f"qos egress-scheduler {name}: the bw-percent of the dwrr traffic classes adds up to "
                f"{total}, above {DWRR_TOTAL} ({shares})"
            )
    return problems


def _overlay_scheduler(q: NvueQos, tcs: Mapping[str, Any]) -> None:
    for tc, entry in tcs.items():
        mode, bw = q.scheduler.get(int(tc), ("dwrr", 0))
        q.scheduler[int(tc)] = (entry.get("mode", mode), entry.get("bw-percent", bw))


def port_view(config: Mapping[str, Any], port: str, q: NvueQos | None = None) -> NvueQos:
    """The QoS one port runs: default-global under the mapping, congestion-control and
    egress-scheduler profiles bound to it (`nv set interface P qos <feature> profile NAME`, CL 5.4+,
    NVUE command reference). A profile of its own starts from NVUE's defaults, not from
    default-global: a mapping profile trusts l2 with the identity PCP/DSCP maps, a congestion-control
    profile marks nothing until a class is enabled, an egress-scheduler profile is the stock one.
    The one place the per-port overlay lives: the show views and the traffic model both read it."""
    q = effective_qos(config) if q is None else q
    mapping = _port_profile(config, port, "mapping")
    congestion = _port_profile(config, port, "congestion-control")
    scheduler = _port_profile(config, port, "egress-scheduler")
    if mapping is None and congestion is None and scheduler is None:
        return q
    own = copy.deepcopy(q)
    if mapping is not None:
        own.trust, own.dscp_to_sp, own.pcp_to_sp = "l2", [d >> 3 for d in range(64)], list(range(8))
        _overlay_mapping(own, mapping)
    if congestion is not None:
        own.ecn = {}
        _overlay_ecn(own, congestion.get("traffic-class", {}))
    if scheduler is not None:
        own.scheduler = dict(NvueQos().scheduler)
        _overlay_scheduler(own, scheduler.get("traffic-class", {}))
    return own


def port_scheduler_profile(config: Mapping[str, Any], port: str) -> str | None:
    """The egress-scheduler profile bound to `port` by name (None: none bound, default-global runs)."""
    name = config.get("interface", {}).get(port, {}).get("qos", {}).get("egress-scheduler", {}).get("profile")
    return name or None


def port_qos(config: Mapping[str, Any], ports: Sequence[str]) -> dict[str, PortQos]:
    """Per port, the effective QoS (port_view), PFC only on priorities a lossless pool buffers."""
    q = effective_qos(config)
    lossless = lossless_priorities(config, q)
    out = {}
    for port in ports:
        port_q = port_view(config, port, q)
        sp = roce_priority(port_q)
        profile = port_pfc_profile(config, q, port)
        active = profile.active if profile else set()
        out[port] = PortQos(
            roce_priority=sp,
            roce_queue=port_q.sp_to_tc[sp],
            pfc_priorities=tuple(sorted(active if lossless is None else active & lossless)),
            ecn_queues=tuple(port_q.ecn_tcs),
            mtu=port_mtu(config, port),
            trust=port_q.trust_label(),
        )
    return out


def config_problems(config: Mapping[str, Any]) -> list[str]:
    """What `nv config apply` refuses: dangling profile references, pools or DWRR shares over 100 %,
    inverted thresholds. NVUE's own wording of these refusals is not public: unverified."""
    problems = []
    qos_cfg = config.get("qos", {})
    for port, cfg in sorted(config.get("interface", {}).items()):
        for feature in ("pfc", "congestion-control", "egress-scheduler", "mapping"):
            name = cfg.get("qos", {}).get(feature, {}).get("profile")
            if name and name not in qos_cfg.get(feature, {}):
                problems.append(f"interface {port}: qos {feature} profile '{name}' does not exist")
    pools = qos_cfg.get("traffic-pool", {})
    total = sum(int(pool.get("memory-percent", 0)) for pool in pools.values())
    if total > 100:
        problems.append(f"qos traffic-pool: the memory-percent of the pools adds up to {total}, above 100")
    q = effective_qos(config)
    problems += _dwrr_problems(qos_cfg, q)
    for tc, cfg in sorted(q.ecn.items()):
        if cfg["min"] > cfg["max"]:
            problems.append(
                f"qos congestion-control default-global traffic-class {tc}: min-threshold "
                f"{cfg['min']} is greater than max-threshold {cfg['max']}"
            )
    return problems
