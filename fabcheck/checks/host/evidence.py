"""What one host showed, as the host checks read it: the records of one collection round trip, keyed by
(probe, subject), with named views; a record that could not be read is `Unreadable` and every check
turns it into an ERROR naming the command, never a pass."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fabcheck.checks.model import Finding, errored
from fabcheck.collect import host as probes
from fabcheck.collect.host import NO_MODULE_EEPROM, Unreadable, section_command
from fabcheck.collect.script import earlier
from fabcheck.desired.nic import DesiredHost
from fabcheck.parsers.bus_records import AerCounts, AerSeverity, PcieTree, bdf_of
from fabcheck.parsers.flint import FlintQuery
from fabcheck.parsers.gpudirect import KernelRelease, NvidiaModule
from fabcheck.parsers.host_sysfs import DriverInfo
from fabcheck.parsers.ibv_devinfo import IbvDevice, IbvPort
from fabcheck.parsers.kernel_log import XidEvent
from fabcheck.parsers.mlnx_qos import MlnxQos
from fabcheck.parsers.mlxconfig import MlxconfigQuery
from fabcheck.parsers.nvidia_smi_q import SmiQuery
from fabcheck.parsers.nvlink_records import ImexStatus, NvlinkStatus
from fabcheck.parsers.pcie_sysfs import KernelCmdline
from fabcheck.parsers.rdma_link import RdmaLink
from fabcheck.parsers.topo import TopoMatrix
from fabcheck.parsers.wire_records import LinkCounters, LinkDelta, ModuleOptics

__all__ = [
    "NO_MODULE_EEPROM",
    "AerWindow",
    "FirmwareEvidence",
    "HostEvidence",
    "IommuEvidence",
    "NetdevEvidence",
    "PersistEvidence",
    "RailNic",
    "Unreadable",
    "WireEvidence",
]


@dataclass(frozen=True)
class NetdevEvidence:
    """What the host showed for one RoCE netdev (the view the link stage reads)."""

    qos: MlnxQos | Unreadable
    mtu: int | Unreadable
    np_enable: int | Unreadable  # roce_np/enable/<lossless priority>
    rp_enable: int | Unreadable
    cnp_dscp: int | Unreadable
    cnp_prio: int | Unreadable


@dataclass(frozen=True)
class WireEvidence:
    """What the host showed of one netdev's wire (docs/checks/wire.md).

    counters: what its physical counters did over the counter window: `ethtool -S` merged with
    `ethtool -I --show-fec` and, where mlxlink is installed and answered, `mlxlink -c` (a LinkDelta
    whose `lifetime` says the window was 0). Unreadable when a required reading failed or the round trip
    ended inside the window. optics: its module's diagnostics (`ethtool -m`); an Unreadable whose
    `no_module` is True when the port has no module EEPROM to read (a named skip, not an error)."""

    counters: LinkDelta | Unreadable
    optics: ModuleOptics | Unreadable

    @property
    def no_module(self) -> bool:
        """`ethtool -m` found no module EEPROM to read on this port (collect.host.NO_MODULE_EEPROM)."""
        return isinstance(self.optics, Unreadable) and self.optics.reason.startswith(NO_MODULE_EEPROM)


@dataclass(frozen=True)
class PersistEvidence:
    """What the host keeps to re-apply its NIC settings at boot (role roce_host, tag persist)."""

    settings: dict[str, Any] | Unreadable | None  # the boot file's settings; None: no boot file
    unit_state: str | Unreadable  # `systemctl is-enabled`: enabled, disabled, ..., absent
    present: frozenset[str] | Unreadable  # which of PERSIST_PATHS exist


@dataclass(frozen=True)
class FirmwareEvidence:
    """What the host showed of one NIC's firmware (docs/checks/bus.md)."""

    nic: str
    image: FlintQuery | Unreadable | None  # `flint -d DEV q`; None: flint not installed
    config: MlxconfigQuery | Unreadable | None  # `mlxconfig -d DEV -e q`; None: mlxconfig not installed
    fw_ver: str | None  # ibv_devinfo: the firmware the driver reports running
    board_id: str | None  # ibv_devinfo: the PSID

    @property
    def psid(self) -> str | None:
        return self.image.psid if isinstance(self.image, FlintQuery) else self.board_id


@dataclass(frozen=True)
class AerWindow:
    """The AER counters of every PCI function that has them (docs/checks/bus.md): cumulative since boot
    (the window's last reading) and, with a counter window, the first reading to subtract. An empty
    mapping: the host shows no AER counter file at all (kernel < 4.19 or AER off)."""

    since_boot: Mapping[str, AerCounts] | Unreadable
    before: Mapping[str, AerCounts] | Unreadable | None  # None: counter window 0, one reading
    window_s: int

    def grown(self, bdf: str, severity: AerSeverity) -> int | None:
        """How much the function's `severity` total grew over the window (None: one reading, or the
        function did not show that severity in both readings)."""
        if isinstance(self.since_boot, Unreadable) or not isinstance(self.before, Mapping):
            return None
        now, then = self.since_boot.get(bdf), self.before.get(bdf)
        later = None if now is None else now.total(severity)
        earlier_total = None if then is None else then.total(severity)
        return None if later is None or earlier_total is None else later - earlier_total


@dataclass(frozen=True)
class IommuEvidence:
    """The kernel command line and each rail port's IOMMU group type (None: no iommu_group, so no
    IOMMU translation for that device)."""

    cmdline: KernelCmdline | Unreadable
    group_type: Mapping[str, str | Unreadable | None]  # "mlx5_0/1" -> identity, DMA, DMA-FQ, ... or None


@dataclass(frozen=True)
class HostEvidence:
    """Every record one collection round trip showed: (probe, subject) -> record or Unreadable.

    The subject is "" for a host probe, "mlx5_0/1" for a port probe, the netdev for a netdev probe
    (collect.host.HOST_PROBES). The properties are the named views checks and later stages read, each
    typed as what its probe's parser returns."""

    records: Mapping[tuple[str, str], Any] = field(default_factory=dict)
    priority: int = 3  # the lossless priority the collection read ECN enables at

    def record(self, probe: str, subject: str = "") -> Any:
        if (probe, subject) in self.records:
            return self.records[(probe, subject)]
        name = f"{probe}:{subject}" if subject else probe
        return Unreadable(section_command(name, self.priority), "not collected")

    @property
    def topo(self) -> TopoMatrix | Unreadable:
        shown: TopoMatrix | Unreadable = self.record(probes.TOPO)
        return shown

    @property
    def links(self) -> tuple[RdmaLink, ...] | Unreadable:
        shown: tuple[RdmaLink, ...] | Unreadable = self.record(probes.RDMA_LINK)
        return shown

    @property
    def devices(self) -> tuple[IbvDevice, ...] | Unreadable:
        shown: tuple[IbvDevice, ...] | Unreadable = self.record(probes.IBV_DEVINFO)
        return shown

    @property
    def modules(self) -> frozenset[str] | Unreadable:
        shown: frozenset[str] | Unreadable = self.record(probes.LSMOD)
        return shown

    @property
    def netdevs(self) -> dict[str, NetdevEvidence]:
        names = sorted({subject for (probe, subject) in self.records if probe == probes.MLNX_QOS})
        return {name: self.netdev(name) for name in names}

    def netdev(self, name: str) -> NetdevEvidence:
        return NetdevEvidence(
            qos=self.record(probes.MLNX_QOS, name),
            mtu=self.record(probes.NETDEV_MTU, name),
            np_enable=self.record(probes.ECN_NP_ENABLE, name),
            rp_enable=self.record(probes.ECN_RP_ENABLE, name),
            cnp_dscp=self.record(probes.CNP_DSCP, name),
            cnp_prio=self.record(probes.CNP_PRIO, name),
        )

    def wire(self, netdev: str) -> WireEvidence:
        """The netdev's counters over the counter window and its module's diagnostics."""
        optics: ModuleOptics | Unreadable = self.record(probes.MODULE, netdev)
        return WireEvidence(self._counter_delta(netdev), optics)

    def _counter_delta(self, netdev: str) -> LinkDelta | Unreadable:
        window = self.record(probes.COUNTER_WINDOW)
        if isinstance(window, Unreadable):
            reason = f"the counter window did not complete ({window.reason}): no second reading"
            return Unreadable(section_command(f"{probes.LINK_STATS}:{netdev}", self.priority), reason)
        later = self._counters(netdev, first=False)
        if isinstance(later, Unreadable) or window == 0:
            return later if isinstance(later, Unreadable) else later.since(None, 0)
        before = self._counters(netdev, first=True)
        return before if isinstance(before, Unreadable) else later.since(before, window)

    def _counters(self, netdev: str, *, first: bool) -> LinkCounters | Unreadable:
        """One reading of the netdev's counters: `ethtool -S` and its FEC (both required), and its
        port's mlxlink where the tool answered (optional: absent or failed leaves it out)."""

        def named(probe: str) -> str:
            return earlier(probe) if first else probe

        stats: LinkCounters | Unreadable = self.record(named(probes.LINK_STATS), netdev)
        fec: LinkCounters | Unreadable = self.record(named(probes.FEC), netdev)
        if isinstance(stats, Unreadable) or isinstance(fec, Unreadable):
            return stats if isinstance(stats, Unreadable) else fec
        reading = stats.merged(fec)
        links = () if isinstance(self.links, Unreadable) else self.links
        for link in links:
            if link.netdev == netdev:
                mlxlink = self.records.get((named(probes.MLXLINK), f"{link.dev}/{link.port}"))
                if isinstance(mlxlink, LinkCounters):
                    reading = reading.merged(mlxlink)
        return reading

    def rdma_counters(self, port: str) -> Mapping[str, int] | Unreadable:
        """The RDMA port's ("mlx5_0/1") hw_counters at the end of the counter window, cumulative (no
        check judges them; the metrics report them)."""
        shown: Mapping[str, int] | Unreadable = self.record(probes.RDMA_HW_COUNTERS, port)
        return shown

    @property
    def traffic_class(self) -> dict[str, int | Unreadable]:
        """ "mlx5_0/1" -> the port's default TClass."""
        return {s: v for (p, s), v in self.records.items() if p == probes.TRAFFIC_CLASS}

    @property
    def persistence(self) -> PersistEvidence:
        return PersistEvidence(
            settings=self.record(probes.PERSIST_CONFIG),
            unit_state=self.record(probes.PERSIST_UNIT_STATE),
            present=self.record(probes.PERSIST_FILES),
        )

    @property
    def nvidia_module(self) -> NvidiaModule | Unreadable:
        """`modinfo -F license nvidia`: the installed GPU kernel module's flavour (host.gpudirect)."""
        shown: NvidiaModule | Unreadable = self.record(probes.NVIDIA_LICENSE)
        return shown

    @property
    def kernel_release(self) -> KernelRelease | Unreadable:
        shown: KernelRelease | Unreadable = self.record(probes.KERNEL_RELEASE)
        return shown

    def firmware(self, nic: str) -> FirmwareEvidence:
        """One NIC's firmware: flint's image and PSID, mlxconfig's parameters (read on its first port;
        None: the tool is not installed), and ibv_devinfo's fw_ver and board_id."""
        links = () if isinstance(self.links, Unreadable) else self.links
        port = next((link.name for link in links if link.dev == nic), f"{nic}/1")
        devices = () if isinstance(self.devices, Unreadable) else self.devices
        device = next((d for d in devices if d.hca_id == nic), None)
        return FirmwareEvidence(
            nic,
            self.record(probes.FLINT, port),
            self.record(probes.MLXCONFIG, port),
            None if device is None else device.fw_ver,
            None if device is None else device.board_id,
        )

    @property
    def pcie(self) -> PcieTree | Unreadable:
        """Every PCI function with its links, ACS and ATS (`lspci -D -vvv`)."""
        shown: PcieTree | Unreadable = self.record(probes.LSPCI)
        return shown

    @property
    def aer(self) -> AerWindow:
        """The AER counters since boot and, over a counter window, their first reading."""
        since_boot: Mapping[str, AerCounts] | Unreadable = self.record(probes.AER)
        window = self.record(probes.COUNTER_WINDOW)
        if isinstance(window, Unreadable):
            reason = f"the counter window did not complete ({window.reason}): no second reading"
            return AerWindow(since_boot, Unreadable(section_command(probes.AER, self.priority), reason), 0)
        if window == 0:
            return AerWindow(since_boot, None, 0)
        before: Mapping[str, AerCounts] | Unreadable = self.record(earlier(probes.AER))
        return AerWindow(since_boot, before, int(window))

    @property
    def iommu(self) -> IommuEvidence:
        types = {s: v for (p, s), v in self.records.items() if p == probes.IOMMU_GROUP}
        return IommuEvidence(self.record(probes.CMDLINE), types)

    def bus_info(self, netdev: str) -> str | Unreadable:
        """The netdev's PCI function (`ethtool -i`: bus-info), normalised as lspci -D prints it."""
        driver: DriverInfo | Unreadable = self.record(probes.DRIVER, netdev)
        if isinstance(driver, Unreadable):
            return driver
        bdf = bdf_of(driver.bus_info)
        if bdf is None:
            command = section_command(f"{probes.DRIVER}:{netdev}", self.priority)
            return Unreadable(command, f"bus-info {driver.bus_info!r} is not a PCI function")
        return bdf

    @property
    def gpu_query(self) -> SmiQuery | Unreadable:
        """`nvidia-smi -q`: every GPU's persistence mode, ECC and memory-repair state (host.gpu_health)."""
        shown: SmiQuery | Unreadable = self.record(probes.NVIDIA_SMI_Q)
        return shown

    @property
    def nvlink_status(self) -> NvlinkStatus | Unreadable:
        """`nvidia-smi nvlink -s`: every GPU's NVLinks and their rates (host.nvlink)."""
        shown: NvlinkStatus | Unreadable = self.record(probes.NVLINK_STATUS)
        return shown

    @property
    def imex_active(self) -> str | Unreadable:
        """`systemctl is-active nvidia-imex`: its one word (host.imex)."""
        shown: str | Unreadable = self.record(probes.IMEX_ACTIVE)
        return shown

    @property
    def imex_nodes(self) -> tuple[str, ...] | Unreadable:
        """/etc/nvidia-imex/nodes_config.cfg: the addresses the IMEX daemon was given (host.imex)."""
        shown: tuple[str, ...] | Unreadable = self.record(probes.IMEX_NODES)
        return shown

    @property
    def imex_status(self) -> ImexStatus | Unreadable | None:
        """`nvidia-imex-ctl -N`: the IMEX domain as this tray's daemon sees it (None: tool absent)."""
        shown: ImexStatus | Unreadable | None = self.record(probes.IMEX_STATUS)
        return shown

    @property
    def fabric_manager_active(self) -> str | Unreadable:
        """`systemctl is-active nvidia-fabricmanager`: its one word (host.fabric_manager)."""
        shown: str | Unreadable = self.record(probes.FABRIC_MANAGER_ACTIVE)
        return shown

    @property
    def xid_events(self) -> tuple[XidEvent, ...] | Unreadable:
        """The Xid events of the kernel log since boot (`dmesg`), in log order."""
        shown: tuple[XidEvent, ...] | Unreadable = self.record(probes.KERNEL_LOG)
        return shown


@dataclass(frozen=True)
class RailNic:
    """One rail NIC as the host shows it: its ports in `rdma link` and `ibv_devinfo`."""

    name: str
    links: tuple[RdmaLink, ...]
    ports: tuple[IbvPort, ...]

    @property
    def netdev(self) -> str | None:
        return next((link.netdev for link in self.links if link.netdev), None)


def rail_nics(evidence: HostEvidence, desired: DesiredHost) -> list[str]:
    """The NICs to judge: the desired rails, else every RDMA device the host shows."""
    if desired.rails:
        return sorted(set(desired.rails.values()))
    names: set[str] = set()
    if not isinstance(evidence.links, Unreadable):
        names |= {link.dev for link in evidence.links}
    if not isinstance(evidence.devices, Unreadable):
        names |= {device.hca_id for device in evidence.devices}
    return sorted(names)


def present_nics(evidence: HostEvidence, desired: DesiredHost) -> list[RailNic]:
    """The rail NICs the host shows in both `rdma link` and `ibv_devinfo` (host.rdma_device judges
    the others)."""
    links = () if isinstance(evidence.links, Unreadable) else evidence.links
    devices = () if isinstance(evidence.devices, Unreadable) else evidence.devices
    nics = []
    for name in rail_nics(evidence, desired):
        nic_links = tuple(link for link in links if link.dev == name)
        ports = tuple(p for d in devices if d.hca_id == name for p in d.ports)
        if nic_links and ports:
            nics.append(RailNic(name, nic_links, ports))
    return nics


def unreadable_error(check: str, subject: str, expected: str, missing: Unreadable) -> Finding:
    """The ERROR of a check whose record could not be read: it names the command, never passes."""
    return errored(
        check,
        subject,
        expected,
        f"could not read `{missing.command}`: {missing.reason}",
        "fix collection first (tool installed? run as root?), then run validate again",
    )
