"""Desired state of a GPU host and its RoCE NICs, derived from the host's validated intent.

Every NIC-side value the host role writes and the gate expects is computed here and nowhere else:
which priorities carry PFC (and its bitmap), which DSCPs map to which priority, whether the DCQCN
reaction and notification points run, the CNP marking, the RDMA-CM ToS byte, the MTUs and the PFC storm
prevention timeout. The host role's applier writes these values as they are and derives none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from fabcheck.desired.nvlink import DesiredNvlinkHost
from fabcheck.intent.model import FabricIntent, GpuHealth, LinkHealth, NicFirmware, Pcie

# The wire checks judge what the error, FEC and flap counters did over a window of this many seconds
# (`fabcheck validate --counter-window S`, default DEFAULT_COUNTER_WINDOW_S): every node reads them at
# its start and its end. 0 reads them once and judges lifetime totals, and the report says so; it is
# what a desired state gets when the run asks for no window (the library's default). The upper bound
# keeps a typo (5000 for 5) from holding every round trip open for an hour.
DEFAULT_COUNTER_WINDOW_S = 5
MAX_COUNTER_WINDOW_S = 600


def counter_window(value: object) -> int:
    """A counter window in whole seconds, 0..MAX_COUNTER_WINDOW_S; ValueError saying what is wrong."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"counter window {value!r}: expected whole seconds 0..{MAX_COUNTER_WINDOW_S}")
    text = str(value).strip()
    if not text.isdigit() or not text.isascii() or int(text) > MAX_COUNTER_WINDOW_S:
        raise ValueError(
            f"counter window {value!r}: expected whole seconds 0..{MAX_COUNTER_WINDOW_S} "
            "(0 reads lifetime totals only)"
        )
    return int(text)


PRIORITY_COUNT = 8  # 802.1p priorities 0..7: mlnx_qos --pfc takes one flag per priority

# Where role roce_host keeps what re-applies the NIC settings at boot and on driver reload (the settings
# file holds roce_nic_args()), and the unit it enables; `fabcheck validate` reads the same places.
PERSIST_PATHS: dict[str, str] = {
    "config": "/etc/fabcheck/roce-nic.json",
    "applier": "/usr/local/lib/fabcheck/roce_nic_apply.py",
    "unit": "/etc/systemd/system/fabcheck-roce-nic.service",
    "rule": "/etc/udev/rules.d/70-fabcheck-roce-nic.rules",
}
PERSIST_UNIT = PERSIST_PATHS["unit"].rsplit("/", 1)[1]

# When role gpu_rdma loads nvidia_peermem (DesiredHost.peermem_policy).
PEERMEM_ALWAYS = "always"
PEERMEM_NEVER = "never"
PEERMEM_WITHOUT_DMABUF = "without_dmabuf"

# The DCQCN files of a netdev (MLNX_OFED's /sys/class/net/<netdev>/ecn/) that role roce_host writes and
# `fabcheck validate` reads, each under the DesiredNic value it holds, named once: the collection's
# probes read these paths, the host checks' hints write them and the owned-field table names them. The
# roce_nic module (stdlib only: it runs on the host) keys its writes by the same names; a test ties them.
ECN_DIR = "/sys/class/net/{netdev}/ecn"
ECN_FILES: dict[str, str] = {
    "np_enable": "roce_np/enable/{priority}",
    "rp_enable": "roce_rp/enable/{priority}",
    "cnp_dscp": "roce_np/cnp_dscp",
    "cnp_priority": "roce_np/cnp_802p_prio",
    "min_time_between_cnps": "roce_np/min_time_between_cnps",
    "rp_params": "roce_rp",  # a folder: one file per reaction-point parameter, roce_rp/<name>
}


def ecn_file(value: str, netdev: str, priority: int | str = "{priority}") -> str:
    """The path of the netdev's file that holds DesiredNic `value` (ECN_FILES), for one priority."""
    return f"{ECN_DIR}/{ECN_FILES[value]}".format(netdev=netdev, priority=priority)


# The roce_nic module's `settings` record (roles/roce_host; module_utils/roce_nic_apply.py SETTINGS reads
# the same keys, tests tie the two), besides `devices`: each key and the DesiredNic JSON value it carries.
ROCE_NIC_SETTINGS: dict[str, str] = {
    "trust": "trust",
    "pfc_bitmap": "pfc_bitmap",
    "dscp_to_priority": "dscp_to_priority",
    "ecn_priority": "ecn_priority",
    "cnp_dscp": "cnp_dscp",
    "cnp_priority": "cnp_priority",
    "np_enable": "np_enable",
    "rp_enable": "rp_enable",
    "min_time_between_cnps": "min_time_between_cnps",
    "rp_params": "rp_params",
    "roce_tos": "roce_tos",
    "mtu": "netdev_mtu",
    "pfc_storm_prevention_ms": "pfc_storm_prevention_ms",
}


@dataclass(frozen=True)
class DesiredNic:
    """What one RDMA NIC (and its netdev) must hold. Pairs are sorted tuples so records stay hashable."""

    host: str
    device: str
    trust: str
    pfc_priorities: tuple[int, ...]
    lossless_dscp: tuple[int, ...]
    dscp_to_priority_pairs: tuple[tuple[int, int], ...]
    ecn_priority: int
    np_enable: bool
    rp_enable: bool
    min_time_between_cnps: int
    rp_param_pairs: tuple[tuple[str, int], ...]
    cnp_dscp: int
    cnp_priority: int
    roce_tos: int
    netdev_mtu: int
    rdma_mtu: int
    link_layer: str
    speed_gbps: int
    pfc_storm_prevention_ms: int | None = None  # None: not managed (PFC off, or the intent says null)

    @property
    def dscp_to_priority(self) -> dict[int, int]:
        """Only the DSCPs the intent pins (lossless data and CNP); other entries are left as they are."""
        return dict(self.dscp_to_priority_pairs)

    @property
    def rp_params(self) -> dict[str, int]:
        return dict(self.rp_param_pairs)

    @property
    def pfc_bitmap(self) -> tuple[int, ...]:
        """One 0/1 flag per priority, as `mlnx_qos --pfc 0,0,0,1,0,0,0,0` takes and prints them."""
        return tuple(int(prio in self.pfc_priorities) for prio in range(PRIORITY_COUNT))

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "device": self.device,
            "trust": self.trust,
            "pfc_priorities": list(self.pfc_priorities),
            "pfc_bitmap": list(self.pfc_bitmap),
            "lossless_dscp": list(self.lossless_dscp),
            "dscp_to_priority": {str(d): p for d, p in self.dscp_to_priority_pairs},
            "ecn_priority": self.ecn_priority,
            "np_enable": self.np_enable,
            "rp_enable": self.rp_enable,
            "min_time_between_cnps": self.min_time_between_cnps,
            "rp_params": self.rp_params,
            "cnp_dscp": self.cnp_dscp,
            "cnp_priority": self.cnp_priority,
            "roce_tos": self.roce_tos,
            "netdev_mtu": self.netdev_mtu,
            "rdma_mtu": self.rdma_mtu,
            "link_layer": self.link_layer,
            "speed_gbps": self.speed_gbps,
            "pfc_storm_prevention_ms": self.pfc_storm_prevention_ms,
        }


def desired_nic(intent: FabricIntent, host: str, nic: str) -> DesiredNic:
    """Pure: the host's intent -> what NIC `nic` on `host` must hold."""
    lossless, cnp = intent.lossless, intent.cnp
    dscp_map = {dscp: lossless.priority for dscp in lossless.dscp} | {cnp.dscp: cnp.priority}
    return DesiredNic(
        host=host,
        device=nic,
        trust=intent.trust,
        pfc_priorities=(lossless.priority,) if lossless.pfc else (),
        lossless_dscp=tuple(sorted(lossless.dscp)),
        dscp_to_priority_pairs=tuple(sorted(dscp_map.items())),
        ecn_priority=lossless.priority,
        # pfc_only (Meta-style lossless without DCQCN) turns both NIC points off; dcqcn and ecn_only
        # run them unless the intent switches one off explicitly.
        np_enable=intent.dcqcn_on and intent.dcqcn.np_enable,
        rp_enable=intent.dcqcn_on and intent.dcqcn.rp_enable,
        min_time_between_cnps=intent.dcqcn.min_time_between_cnps,
        rp_param_pairs=tuple(sorted(intent.dcqcn.rp_params.items())),
        cnp_dscp=cnp.dscp,
        cnp_priority=cnp.priority,
        roce_tos=intent.roce_tos,
        netdev_mtu=intent.mtu.netdev,
        rdma_mtu=intent.mtu.rdma,
        link_layer=intent.link_layer,
        speed_gbps=intent.link.speed_gbps,
        # Without PFC the NIC sends no pauses, so there is no storm to stop: left as it is.
        pfc_storm_prevention_ms=lossless.pfc_storm_prevention_ms if lossless.pfc else None,
    )


@dataclass(frozen=True)
class DesiredHost:
    """A GPU host: its rails (GPU index -> NIC), the desired state of each rail NIC, and host modules."""

    host: str
    kind: str
    rail_pairs: tuple[tuple[int, str], ...]
    nics: tuple[DesiredNic, ...]
    # Settings every NIC of this host shares; also the template for a NIC found at run time when the
    # intent names no rails (then the role configures every RoCE NIC it finds).
    template: DesiredNic
    gdr_required: bool  # nccl.gdr_required: GPUDirect RDMA must work (host.gpudirect, role gpu_rdma)
    # The wire checks' limits (the intent's link_health) and the counter window they are judged over
    # (the run's --counter-window; 0: lifetime totals).
    link_health: LinkHealth = field(default_factory=LinkHealth)
    counter_window_s: int = 0
    # The bus checks (docs/checks/bus.md): PCIe limits and IOMMU mode, the GPUDirect mechanism, the
    # pinned NIC firmware per part (PSID) and what every GPU must show.
    pcie: Pcie = field(default_factory=Pcie)
    gdr_mechanism: str = "any"
    nic_firmware: tuple[NicFirmware, ...] = ()
    gpu_health: GpuHealth = field(default_factory=GpuHealth)
    # The host's NVLink domain (GateDesired.nvlink, derived once by the plan; the host stage attaches it
    # here so the NVLink host checks read it like any other desired field). None: no NVLink plan.
    nvlink: DesiredNvlinkHost | None = None

    @property
    def peermem_policy(self) -> str:
        """When role gpu_rdma loads nvidia_peermem: PEERMEM_ALWAYS (gdr_mechanism peermem), PEERMEM_NEVER
        (dmabuf, or no GPUDirect required), PEERMEM_WITHOUT_DMABUF (any: only on a host that cannot do
        dma-buf, which the role reads on the host)."""
        if not self.gdr_required or self.gdr_mechanism == "dmabuf":
            return PEERMEM_NEVER
        return PEERMEM_ALWAYS if self.gdr_mechanism == "peermem" else PEERMEM_WITHOUT_DMABUF

    def firmware_pin(self, psid: str | None) -> NicFirmware | None:
        """The intent's firmware entry for a NIC part, None when the intent pins none for it."""
        return next((pin for pin in self.nic_firmware if pin.psid == psid), None)

    @property
    def rails(self) -> dict[int, str]:
        return dict(self.rail_pairs)

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(nic.device for nic in self.nics)

    def nic(self, device: str) -> DesiredNic:
        """The desired state of `device`: a rail NIC's record, else the host's shared settings."""
        for nic in self.nics:
            if nic.device == device:
                return nic
        return _with_device(self.template, device)

    def roce_nic_args(self) -> dict[str, Any]:
        """The roce_nic module's one `settings` argument (roles/roce_host): the host's rail devices and
        every value to write, already derived (the PFC bitmap, the DSCP -> priority entries); the
        module applies them as they are.

        The role also writes exactly this record to the host's boot file (PERSIST_PATHS["config"]), and
        validate compares that file with it. JSON-shaped: DSCP keys are strings."""
        shared = self.template.to_json()
        settings = {key: shared[value] for key, value in ROCE_NIC_SETTINGS.items()}
        return {"devices": list(self.devices), **settings}

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "kind": self.kind,
            "rails": {str(gpu): nic for gpu, nic in self.rail_pairs},
            "nics": [nic.to_json() for nic in self.nics],
            "nic_settings": self.template.to_json() | {"device": None},
            "gdr_required": self.gdr_required,
            "gdr_mechanism": self.gdr_mechanism,
            "peermem_policy": self.peermem_policy,
            "nic_firmware": [pin.model_dump() for pin in self.nic_firmware],
            "persist_paths": dict(PERSIST_PATHS),
        }


def desired_host(intent: FabricIntent, host: str, counter_window_s: int = 0) -> DesiredHost:
    """Pure: a GPU host's intent (rails already merged from `fabric_rails`) -> its desired state."""
    devices = sorted(set(intent.rails.values()))
    template = desired_nic(intent, host, "")
    return DesiredHost(
        host=host,
        kind=intent.kind,
        rail_pairs=tuple(sorted(intent.rails.items())),
        nics=tuple(_with_device(template, device) for device in devices),
        template=template,
        gdr_required=intent.nccl.gdr_required,
        link_health=intent.link_health,
        counter_window_s=counter_window(counter_window_s),
        pcie=intent.pcie,
        gdr_mechanism=intent.nccl.gdr_mechanism,
        nic_firmware=tuple(intent.nic_firmware),
        gpu_health=intent.gpu_health,
    )


def _with_device(template: DesiredNic, device: str) -> DesiredNic:
    return replace(template, device=device)
