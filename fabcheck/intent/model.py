"""The fabric intent: one typed model of what the fabric must be.

The Ansible roles render configuration from it and `fabcheck` derives its checks from it. Defaults
follow the canonical NVIDIA RoCEv2 recipe (DSCP 26 -> priority 3 lossless, CNP DSCP 48 / priority 6,
ECN 150 KB..1.5 MB at 100 %, trust DSCP, MTU 9000/4096).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_BOOLEAN_TEXT = {"true": True, "false": False}


# Types are strict (a YAML `true` is never the number 1, a number never a boolean), but a string
# holding exactly the literal is read as it: vault-encrypted values are always strings.
def _integer_text(value: Any) -> Any:
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
        return int(value.strip())
    return value


def _number_text(value: Any) -> Any:
    if isinstance(value, str) and _NUMBER_TEXT.fullmatch(value.strip()):
        return float(value.strip())
    return value


def _boolean_text(value: Any) -> Any:
    if isinstance(value, str):
        return _BOOLEAN_TEXT.get(value.strip().lower(), value)
    return value


Integer = Annotated[int, BeforeValidator(_integer_text)]
Number = Annotated[float, BeforeValidator(_number_text)]
Boolean = Annotated[bool, BeforeValidator(_boolean_text)]
Priority = Annotated[Integer, Field(ge=0, le=7, description="802.1p priority / traffic class 0..7")]
Dscp = Annotated[Integer, Field(ge=0, le=63, description="DSCP code point 0..63")]

# The roce_nic module's rule for device and interface names (plugins/module_utils/roce_nic_apply.py,
# NAME and check_name); a test keeps the two equal. Names reach argv and sysfs paths on the hosts.
NIC_NAME_PATTERN = r"^[A-Za-z0-9_.:-]+$"
_NIC_NAME = re.compile(NIC_NAME_PATTERN)


def is_safe_nic_name(name: str) -> bool:
    return _NIC_NAME.fullmatch(name) is not None and set(name) != {"."}


def _nic_name(name: str) -> str:
    if not is_safe_nic_name(name):
        raise ValueError(
            f"not a usable NIC name: allowed {NIC_NAME_PATTERN} and not only dots "
            "(shell and path characters such as ; $ ` / space or a newline are refused)"
        )
    return name


NicName = Annotated[str, AfterValidator(_nic_name)]

# The GPU-to-NIC link classes of `nvidia-smi topo -m`, best to worst: declared once here (the intent
# names the worst acceptable one; fabcheck.parsers.topo ranks the printed tokens and
# fabcheck.desired.nccl picks NCCL's GDR level by this order).
GpuNicLinkClass = Literal["PIX", "PXB", "PHB", "NODE", "SYS"]
GPU_NIC_LINK_CLASSES: tuple[GpuNicLinkClass, ...] = get_args(GpuNicLinkClass)
# Bytes a RoCEv2 packet adds around the RDMA payload; the kernel's iboe_get_mtu() subtracts GRH, UDP,
# BTH, extended headers and ICRC (96 bytes) from the netdev MTU before picking the IB MTU.
ROCE_HEADER_BYTES = 96
# DCQCN reaction-point knobs under /sys/class/net/IF/ecn/roce_rp/ (MLNX_OFED naming).
DCQCN_RP_PARAMS = (
    "clamp_tgt_rate",
    "clamp_tgt_rate_ati",
    "rpg_time_reset",
    "rpg_byte_reset",
    "rpg_threshold",
    "rpg_max_rate",
    "rpg_ai_rate",
    "rpg_hai_rate",
    "rpg_gd",
    "rpg_min_dec_fac",
    "rpg_min_rate",
    "rate_to_set_on_first_cnp",
    "dce_tcp_g",
    "dce_tcp_rtt",
    "rate_reduce_monitor_period",
    "initial_alpha_value",
)


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo in the inventory must not silently fall back to a default."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, strict=True)


# NIC PFC storm prevention (`ethtool --set-tunable IF pfc-prevention-tout MS`, mlx5): 0 turns it off,
# else 80..8000 ms (the driver refuses other values with EINVAL). mlx5 ships at 8000 ms; 100 ms is the
# driver's own "auto" value (linux 2afa609f5c97, drivers/net/ethernet/mellanox/mlx5/core/en_ethtool.c).
PFC_STORM_PREVENTION_MIN_MS = 80
PFC_STORM_PREVENTION_MAX_MS = 8000


class LosslessClass(StrictModel):
    dscp: list[Dscp] = Field(default_factory=lambda: [26], min_length=1)
    priority: Priority = 3
    pfc: Boolean = True
    # How long a NIC may keep sending pauses before it stops and drops instead; null: not managed
    # (a NIC without the stall-detect capability answers EOPNOTSUPP).
    pfc_storm_prevention_ms: Integer | None = Field(100, description="milliseconds; 0 = off; null = leave")

    @field_validator("dscp")
    @classmethod
    def _unique(cls, value: list[int]) -> list[int]:
        if len(set(value)) != len(value):
            raise ValueError("DSCP values must be unique")
        return value

    @field_validator("pfc_storm_prevention_ms")
    @classmethod
    def _storm_timeout(cls, value: int | None) -> int | None:
        low, high = PFC_STORM_PREVENTION_MIN_MS, PFC_STORM_PREVENTION_MAX_MS
        if value is not None and value != 0 and not low <= value <= high:
            raise ValueError(f"{value} ms: must be 0 (off) or {low}..{high} ms, the range mlx5 accepts")
        return value


class Cnp(StrictModel):
    dscp: Dscp = 48
    priority: Priority = 6


class Ecn(StrictModel):
    enabled: Boolean = True
    min_bytes: Integer = Field(150_000, ge=1)
    max_bytes: Integer = Field(1_500_000, ge=1)
    probability: Integer = Field(100, ge=1, le=100)

    @model_validator(mode="after")
    def _min_not_above_max(self) -> Ecn:
        if self.min_bytes > self.max_bytes:
            raise ValueError(
                f"min_bytes ({self.min_bytes}) is above max_bytes ({self.max_bytes}); "
                "the marking ramp needs min_bytes <= max_bytes"
            )
        return self


class Dcqcn(StrictModel):
    """NIC congestion control (reaction point = sender, notification point = receiver)."""

    rp_enable: Boolean = True
    np_enable: Boolean = True
    min_time_between_cnps: Integer = Field(4, ge=0, description="microseconds")
    rp_params: dict[str, Integer] = Field(default_factory=dict, description="roce_rp sysfs overrides")

    @field_validator("rp_params")
    @classmethod
    def _known_params(cls, value: dict[str, int]) -> dict[str, int]:
        unknown = sorted(set(value) - set(DCQCN_RP_PARAMS))
        if unknown:
            raise ValueError(f"unknown DCQCN parameter(s) {unknown}; allowed: {', '.join(DCQCN_RP_PARAMS)}")
        return value


class Mtu(StrictModel):
    netdev: Integer = Field(9000, ge=1280, le=9216)
    rdma: Annotated[Literal[256, 512, 1024, 2048, 4096], BeforeValidator(_integer_text)] = 4096
    switch: Integer = Field(9216, ge=1500, le=9216)

    @model_validator(mode="after")
    def _fits(self) -> Mtu:
        if self.netdev < self.rdma + ROCE_HEADER_BYTES:
            raise ValueError(
                f"netdev MTU {self.netdev} cannot carry RDMA MTU {self.rdma}: "
                f"needs at least {self.rdma + ROCE_HEADER_BYTES}"
            )
        if self.switch < self.netdev:
            raise ValueError(f"switch MTU {self.switch} is below the host netdev MTU {self.netdev}")
        return self


class Link(StrictModel):
    speed_gbps: Integer = Field(400, ge=1, description="per-NIC line rate in Gb/s")
    link_layer: Literal["Ethernet", "InfiniBand"] | None = None  # derived from kind when unset


class Nccl(StrictModel):
    transport: Literal["rdma"] = "rdma"
    gdr_required: Boolean = True
    # How GPUDirect RDMA maps GPU memory for the NIC (host.gpudirect, role gpu_rdma): dma-buf (kernel >= 5.12
    # with NVIDIA's open GPU kernel module; NVIDIA's recommendation) or the out-of-tree nvidia_peermem
    # module. "any": either passes, and the role loads nvidia_peermem only where the host cannot do dma-buf.
    gdr_mechanism: Literal["any", "dmabuf", "peermem"] = "any"
    gid_index: Integer | None = Field(3, ge=0, le=255)
    traffic_class: Integer | None = Field(106, ge=0, le=255, description="NCCL_IB_TC (whole ToS byte)")
    allowed_networks: list[str] = Field(
        default_factory=lambda: ["IB"],
        description="NCCL network names (or prefixes, IB matches IBext_v8) that count as the RDMA path",
    )


class Performance(StrictModel):
    perftest_min_fraction: Number = Field(0.90, gt=0, le=1.0)
    nccl_busbw_min_fraction: Number = Field(0.85, gt=0, le=1.0)
    nccl_min_bytes: Integer = Field(1 << 30, ge=1)
    nics_per_node: Integer | None = Field(None, ge=1, description="defaults to the number of rails, else 8")


class LinkHealth(StrictModel):
    """Limits of the wire checks (host.link_errors, host.link_flaps, host.optics, their switch twins and
    link.health). Error limits are counts over the counter window (`fabcheck validate --counter-window`);
    an uncorrectable FEC block or a link-down transition inside the window always fails. Each default's
    source is in docs/checks/wire.md."""

    # aristanetworks/anta VerifyInterfacesBER: pre-FEC BER above 1e-7 fails (the IEEE 802.3 Clause 136
    # design point, 2.4e-4, is where RS(544,514) just still corrects: far too late for a gate).
    max_pre_fec_ber: Number = Field(1e-7, gt=0, lt=1, description="pre-FEC bit error ratio over the window")
    # aristanetworks/anta VerifyInterfaceErrors and VerifyInterfaceDiscards: any error or discard fails.
    max_crc_errors: Integer = Field(0, ge=0, description="FCS/CRC errors per counter window")
    max_symbol_errors: Integer = Field(0, ge=0, description="symbol (physical coding) errors per window")
    max_discards: Integer = Field(0, ge=0, description="physical discards per counter window")
    # Down transitions since the counters were cleared (not the window: any in the window fails).
    # anta VerifyInterfacesCounterDetails allows 100 link status changes = 50 down transitions.
    flaps_allowed: Integer = Field(50, ge=0, description="down transitions since the last clear")
    # anta VerifyInterfacesOpticsReceivePower: RX power at least 2 dB above the module's low alarm.
    optics_rx_margin_db: Number = Field(2.0, ge=0, description="dB above the module's RX low alarm")
    # Temperature at least this far under the module's own high warning threshold (SFF-8636/CMIS).
    optics_temperature_margin_c: Number = Field(0.0, ge=0, description="°C under the module's high warning")


class Pcie(StrictModel):
    """Limits of the bus checks (host.pcie_link, host.pcie_errors, host.pcie_acs, host.iommu;
    docs/checks/bus.md, where each default's source is)."""

    # AER correctable errors (Receiver Error, Bad TLP, Bad DLLP, Replay ...) a GPU, a rail NIC or a bridge
    # between them may count over the counter window; any non-fatal or fatal AER error since boot fails.
    max_correctable_errors: Integer = Field(0, ge=0, description="AER correctable errors per counter window")
    # passthrough: the rail NICs' IOMMU domain is identity (iommu=pt) or there is no IOMMU;
    # translated_with_ats: a translated (DMA) domain passes when the NIC has ATS enabled (VMs);
    # any: not judged.
    iommu: Literal["passthrough", "translated_with_ats", "any"] = "passthrough"


MlxconfigValue = Annotated[str | int | bool, Field(union_mode="left_to_right")]
# MT_0000000838 (NVIDIA), DEL0000000027 (an OEM's own): letters, then digits, as flint prints PSID.
_PSID = re.compile(r"^[A-Z][A-Z0-9_]{3,15}$")


def _psid(text: str) -> str:
    if not _PSID.match(text):
        raise ValueError(f"{text!r} is not a PSID (board id) such as MT_0000000838 (`ibv_devinfo`: board_id)")
    return text


class NicFirmware(StrictModel):
    """The firmware one NIC part (PSID) must run and the firmware parameters it must hold
    (host.nic_firmware, host.nic_fw_config; role roce_host sets `config` with mlxconfig)."""

    psid: Annotated[str, AfterValidator(_psid)]
    version: str | None = Field(None, description="pinned running firmware, e.g. 28.39.1002")
    image: str | None = Field(None, description="the firmware image to burn for `version` (named in hints)")
    # mlxconfig parameter -> value as mlxconfig names it (LINK_TYPE_P1: ETH, ATS_ENABLED: false,
    # ROCE_CC_PRIO_MASK_P1: 255): a name matches the enum's name, a number its value.
    config: dict[Annotated[str, Field(pattern=r"^[A-Z][A-Za-z0-9_]*(\[[0-9]+\])?$")], MlxconfigValue] = Field(
        default_factory=dict
    )


class GpuHealth(StrictModel):
    """What host.gpu_health requires of every GPU (docs/checks/bus.md)."""

    persistence_mode: Boolean = Field(True, description="persistence mode on (nvidia-smi -pm 1)")
    # Xids that do not fail the gate: application-caused or informational in NVIDIA's Xid catalog
    # (13 graphics exception, 31 MMU fault, 43 channel reset, 45 preemptive cleanup, 63 row-remapping
    # event - its pending remap is judged itself, 94 contained memory error).
    ignored_xids: list[Annotated[Integer, Field(ge=1)]] = Field(
        default_factory=lambda: [13, 31, 43, 45, 63, 94]
    )


IbWidth = Literal["1x", "2x", "4x", "8x", "12x"]
IbSpeed = Literal["SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"]
# PortCounters error counters as infiniband-diags name them (libibmad fields.c; what each one means: the
# Linux sysfs ABI, Documentation/ABI/stable/sysfs-class-infiniband), judged over the counter window.
IbErrorCounter = Literal[
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortXmitDiscards",
    "ExcessiveBufferOverrunErrors",
    "LocalLinkIntegrityErrors",
]
# A node's port as the fabric tools address it: `mlx5_0/1` (`-C mlx5_0 -P 1`). Exactly what the ib
# stage's script passes (fabcheck.collect.ib _ARGUMENTS): a CA name of letters, digits, _ . - not
# starting with -, and a port number 1..254.
_CA_PORT = re.compile(r"^(?!-)[A-Za-z0-9_.-]{1,32}/([1-9][0-9]?|1[0-9][0-9]|2[0-4][0-9]|25[0-4])$")


def _ca_port(text: str) -> str:
    if not _CA_PORT.match(text) or not is_safe_nic_name(text.split("/")[0]):
        raise ValueError(
            f"{text!r} is not a local port such as mlx5_0/1 (a CA name of letters, digits, _ . - "
            "not starting with -, then / and a port number 1..254)"
        )
    return text


class IbSwitchFirmwarePin(StrictModel):
    """The firmware every IB switch of one device id must run (ib.firmware)."""

    device_id: Integer = Field(ge=0, le=0xFFFF, description="device id as saquery prints it")
    # vendstat prints fw_version as three numbers, "%02d.%02d.%02d" (rdma-core
    # infiniband-diags/vendstat.c:470), so a pin of another shape could never match.
    version: str = Field(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$", description="e.g. 31.2012.1024")


class IbFabric(StrictModel):
    """The InfiniBand fabric between the hosts: how every link must run, where the `ib` stage reads it
    from, and what its counters may count (ib.topology, ib.link, ib.errors, ib.guids, ib.firmware;
    docs/checks/ib.md, where each default's source is)."""

    width: IbWidth = Field("4x", description="LinkWidthActive every planned link must run at")
    speed: IbSpeed = Field("NDR", description="link speed generation every planned link must run at")
    # The node the ib stage runs infiniband-diags on: an inventory node with an HCA in the fabric.
    # None: the intended SM master, else the first SM node, else the first GPU host of the run.
    read_from: str | None = Field(None, description="inventory node the ib stage reads the fabric from")
    read_port: Annotated[str, AfterValidator(_ca_port)] | None = Field(
        None, description="its local port, mlx5_0/1 (default: the tools' own choice, the first active port)"
    )
    # rdma-ndd's default node description, "%h %d": the host name and the device (rdma-core
    # rdma-ndd/rdma-ndd.8.in.rst); %h is the inventory name unless the host sets ib_hostname.
    host_description: str = Field("%h %d", description="node description format of host HCAs (rdma-ndd)")
    # ibqueryerrors reports a counter above threshold 0 by default (rdma-core ibqueryerrors.c
    # exceeds_threshold): any error inside the window fails unless raised here, per counter name.
    max_errors: dict[IbErrorCounter, Annotated[Integer, Field(ge=0)]] = Field(
        default_factory=dict, description="error counter name -> allowed count per counter window (default 0)"
    )
    firmware: list[IbSwitchFirmwarePin] = Field(
        default_factory=list, description="per switch device id (none pinned: one version per device id)"
    )


# InfiniBand partition keys: 15 bits, 0x7fff the default partition, 0x0000 invalid; bit 15 (0x8000) is
# the full-member flag, which is a property of a membership, never of the partition itself.
PKEY_MIN, PKEY_MAX, DEFAULT_PKEY = 0x0001, 0x7FFF, 0x7FFF
PKEY_FULL_MEMBER = 0x8000
# A partition name in partitions.conf ends at `=`, `,`, `:` or white space; `#` starts a comment.
PARTITION_NAME_PATTERN = r"^[A-Za-z0-9_.+-]+$"
MEMBER_KEYWORDS = ("ALL", "ALL_CAS", "ALL_SWITCHES", "ALL_ROUTERS", "SELF")
MEMBERSHIPS = ("full", "limited", "both")
_MEMBER = re.compile(r"(?P<port>[A-Z_]+|0x[0-9a-fA-F]{1,16})(=(?P<membership>[a-z]+))?")
IFNAMSIZ = 15  # Linux interface names: at most 15 characters
ROUTING_ENGINES = (
    "minhop",
    "updn",
    "dnup",
    "file",
    "ftree",
    "lash",
    "dor",
    "torus-2QoS",
    "nue",
    "dfsssp",
    "sssp",
    "ar_ftree",
    "ar_updn",
    "no_fallback",
)
VL_COUNT = 15  # data VLs 0..14; VL15 is the management VL and never carries data
SL_COUNT = 16


def _partition_name(name: str) -> str:
    if not re.fullmatch(PARTITION_NAME_PATTERN, name):
        raise ValueError(
            f"not a partition name: allowed {PARTITION_NAME_PATTERN} (partitions.conf ends a name at "
            "white space, '=', ',', ':' or ';', and '#' starts a comment)"
        )
    return name


def _pkey_text(value: Any) -> Any:
    """A YAML `pkey: 0x8001` without quotes is the integer 32769: read it as the hex it was written as."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"0x{value:04x}"
    return value


def _pkey_range(value: str) -> str:
    number = int(value, 16)
    if not PKEY_MIN <= number <= PKEY_MAX:
        raise ValueError(
            f"partition key {value} is outside 0x0001..0x7fff (0x7fff is the default partition; the "
            "full-member bit 0x8000 is set per member with =full, never in the partition key)"
        )
    return value


def _members_text(value: Any) -> Any:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return ", ".join(value)
    return value


def _members(value: str) -> str:
    items = [item.strip() for item in value.split(",")]
    for item in items:
        match = _MEMBER.fullmatch(item)
        port_ok = match is not None and (match["port"] in MEMBER_KEYWORDS or match["port"].startswith("0x"))
        if not port_ok or (match and match["membership"] not in (None, *MEMBERSHIPS)):
            raise ValueError(
                f"member {item!r} is not a port GUID (0x0002c9030001a2b3) or one of "
                f"{', '.join(MEMBER_KEYWORDS)}, optionally followed by ={'|'.join(MEMBERSHIPS)}"
            )
    return ", ".join(items)


def _ipoib_parent(name: str) -> str:
    longest = IFNAMSIZ - len(".8001")
    if len(name) > longest:
        raise ValueError(f"{name!r} is too long for a child name {name}.8001: at most {longest} characters")
    return name


def _vl_arbitration(value: str) -> str:
    """OpenSM's VL arbitration table: up to 64 `VL:weight` pairs, VL 0..14, weight 0..255."""
    pairs = [pair.strip() for pair in value.split(",")]
    for pair in pairs:
        vl, sep, weight = pair.partition(":")
        if not (sep and vl.isdigit() and weight.isdigit() and int(vl) < VL_COUNT and int(weight) <= 255):
            raise ValueError(
                f"entry {pair!r} is not VL:weight with VL 0..14 and weight 0..255 (e.g. 0:64,1:64)"
            )
    if len(pairs) > 64:
        raise ValueError(f"{len(pairs)} entries; a VL arbitration table holds at most 64")
    return ",".join(pairs)


Pkey = Annotated[
    str, BeforeValidator(_pkey_text), Field(pattern=r"^0x[0-9a-fA-F]{1,4}$"), AfterValidator(_pkey_range)
]
VlArbitration = Annotated[str, AfterValidator(_vl_arbitration)]


class Partition(StrictModel):
    """One InfiniBand partition: a line of OpenSM's partitions.conf, and where hosts join it over IPoIB."""

    name: Annotated[str, AfterValidator(_partition_name)]
    pkey: Pkey
    members: Annotated[str, BeforeValidator(_members_text), AfterValidator(_members)] = "ALL=full"
    ipoib: Boolean = True
    # IPoIB broadcast-group settings (partitions.conf flags mtu= and sl=); unset: OpenSM's defaults.
    mtu: Annotated[Literal[256, 512, 1024, 2048, 4096], BeforeValidator(_integer_text)] | None = None
    sl: Annotated[Integer, Field(ge=0, le=15)] | None = None
    # Host netdevs (on gpu_hosts) that get an IPoIB child interface for this partition, e.g. ib0 -> ib0.8001.
    ipoib_parents: list[Annotated[NicName, AfterValidator(_ipoib_parent)]] = Field(default_factory=list)

    @property
    def pkey_value(self) -> int:
        return int(self.pkey, 16)


class SubnetManager(StrictModel):
    routing_engine: str = "ftree"
    sm_priorities: dict[str, Annotated[Integer, Field(ge=0, le=15)]] = Field(default_factory=dict)
    lmc: Integer = Field(0, ge=0, le=7)
    sweep_interval: Integer = Field(10, ge=0)
    qos: Boolean = False
    # OpenSM's default QoS levels (opensm.conf qos_*), written only when set; they need qos: true.
    qos_max_vls: Annotated[Literal[1, 2, 4, 8, 15], BeforeValidator(_integer_text)] | None = None
    qos_high_limit: Annotated[Integer, Field(ge=0, le=255)] | None = None
    qos_vlarb_high: VlArbitration | None = None
    qos_vlarb_low: VlArbitration | None = None
    qos_sl2vl: list[Annotated[Integer, Field(ge=0, le=VL_COUNT - 1)]] | None = Field(
        None, min_length=SL_COUNT, max_length=SL_COUNT, description="the VL of each SL 0..15"
    )
    partitions: list[Partition] = Field(default_factory=list)

    @field_validator("routing_engine")
    @classmethod
    def _engines(cls, value: str) -> str:
        engines = [e.strip() for e in value.split(",")]
        bad = [e for e in engines if e not in ROUTING_ENGINES]
        if bad:
            allowed = ", ".join(sorted(ROUTING_ENGINES))
            raise ValueError(f"unknown routing engine(s) {bad}; allowed: {allowed}")
        return ",".join(engines)

    @property
    def qos_settings(self) -> dict[str, Any]:
        """The qos_* keys the intent sets (None: not set)."""
        keys = ("qos_max_vls", "qos_high_limit", "qos_vlarb_high", "qos_vlarb_low", "qos_sl2vl")
        return {key: getattr(self, key) for key in keys if getattr(self, key) is not None}

    @property
    def intended_master(self) -> str | None:
        """The SM node with the highest sm_priority (None when no priority is set)."""
        if not self.sm_priorities:
            return None
        return max(self.sm_priorities, key=lambda node: self.sm_priorities[node])


def subnet_manager_problems(manager: SubnetManager) -> list[tuple[str, str]]:
    """Rules across subnet_manager keys: (key to fix, why), keys relative to fabric_intent."""
    problems: list[tuple[str, str]] = []
    if manager.sm_priorities:
        top = max(manager.sm_priorities.values())
        tied = [node for node, prio in manager.sm_priorities.items() if prio == top]
        if len(tied) > 1:
            problems.append(
                (
                    f"subnet_manager.sm_priorities.{tied[1]}",
                    f"{', '.join(tied)} share the top priority {top}: exactly one SM must be the intended "
                    "master (give the standbys lower priorities, e.g. 15 and 14)",
                )
            )
    if not manager.qos:
        for key in manager.qos_settings:
            problems.append((f"subnet_manager.{key}", "is set but qos is false (set qos: true)"))
    seen_pkeys: dict[int, int] = {}
    seen_names: dict[str, int] = {}
    for index, partition in enumerate(manager.partitions):
        where = f"subnet_manager.partitions.{index}"
        first = seen_pkeys.setdefault(partition.pkey_value, index)
        if first != index:
            problems.append((f"{where}.pkey", f"is also the pkey of partitions[{first}] (pkeys are unique)"))
        first = seen_names.setdefault(partition.name, index)
        if first != index:
            problems.append((f"{where}.name", f"is also the name of partitions[{first}] (names are unique)"))
        problems += _partition_problems(partition, where)
    return problems


def _partition_problems(partition: Partition, where: str) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    if not partition.ipoib:
        for key in ("mtu", "sl", "ipoib_parents"):
            if getattr(partition, key) not in (None, []):
                problems.append((f"{where}.{key}", "is an IPoIB setting but the partition has ipoib: false"))
    if partition.ipoib_parents and partition.pkey_value == DEFAULT_PKEY:
        problems.append(
            (
                f"{where}.ipoib_parents",
                "the default partition 0x7fff is the parent interface itself; only other pkeys get a child",
            )
        )
    if len(set(partition.ipoib_parents)) != len(partition.ipoib_parents):
        problems.append((f"{where}.ipoib_parents", "lists a parent interface more than once"))
    return problems


class NvlinkIntent(StrictModel):
    """What every host of an NVLink domain must show (docs/checks/nvlink.md). The domains themselves are
    inventory groups under `nvlink_domains`; a host in none is a domain of its own (an HGX server)."""

    gpus: Integer | None = Field(None, ge=1, le=72, description="NVLink GPUs per host; null: not judged")
    links_per_gpu: Integer = Field(18, ge=1, le=64, description="active NVLinks per GPU (nvlink -s)")
    link_gbytes: Number | None = Field(None, gt=0, description="per-link GB/s (GB200 53.125)")
    imex: Boolean = Field(False, description="nvidia-imex runs with the domain's node list (MNNVL)")
    fabric_manager: Boolean = Field(False, description="nvidia-fabricmanager is active (NVSwitch HGX/DGX)")
    busbw_min_fraction: Number = Field(0.6, gt=0, le=1.0, description="NVLink busbw floor: of links x GB/s")


class FabricIntent(StrictModel):
    kind: Literal["roce", "ib"] = "roce"
    trust: Literal["dscp", "pcp"] = "dscp"
    lossless: LosslessClass = Field(default_factory=LosslessClass)
    cnp: Cnp = Field(default_factory=Cnp)
    congestion_control: Literal["dcqcn", "pfc_only", "ecn_only"] = "dcqcn"
    ecn: Ecn = Field(default_factory=Ecn)
    dcqcn: Dcqcn = Field(default_factory=Dcqcn)
    roce_tos: Integer = Field(106, ge=0, le=255, description="RDMA-CM default ToS / traffic_class byte")
    mtu: Mtu = Field(default_factory=Mtu)
    rails: dict[Annotated[Integer, Field(ge=0)], NicName] = Field(
        default_factory=dict, description="GPU index -> NIC"
    )
    max_gpu_nic_link: GpuNicLinkClass = Field(
        "PXB",
        description="worst acceptable `nvidia-smi topo -m` class GPU -> rail NIC; per host override: "
        "host var fabric_max_gpu_nic_link (a PCIe server whose NICs sit behind the host bridge: NODE)",
    )
    link: Link = Field(default_factory=Link)
    nccl: Nccl = Field(default_factory=Nccl)
    performance: Performance = Field(default_factory=Performance)
    subnet_manager: SubnetManager = Field(default_factory=SubnetManager)
    link_health: LinkHealth = Field(default_factory=LinkHealth)
    pcie: Pcie = Field(default_factory=Pcie)
    nic_firmware: list[NicFirmware] = Field(default_factory=list, description="per NIC part (PSID)")
    gpu_health: GpuHealth = Field(default_factory=GpuHealth)
    ib_fabric: IbFabric = Field(default_factory=IbFabric)
    nvlink: NvlinkIntent = Field(default_factory=NvlinkIntent)

    @model_validator(mode="after")
    def _coherent(self, info: ValidationInfo) -> FabricIntent:
        if info.context and info.context.get(SKIP_COHERENCE):
            return self
        problems = coherence_problems(self)
        if problems:
            raise ValueError("; ".join(f"{key}: {message}" for key, message in problems))
        return self

    @property
    def link_layer(self) -> str:
        return self.link.link_layer or ("Ethernet" if self.kind == "roce" else "InfiniBand")

    @property
    def nics_per_node(self) -> int:
        return self.performance.nics_per_node or len(self.rails) or 8

    @property
    def dcqcn_on(self) -> bool:
        """Whether NIC reaction/notification points must be enabled on the lossless priority."""
        return self.congestion_control in ("dcqcn", "ecn_only")


SKIP_COHERENCE = "skip_coherence"  # validation context flag: check fields only (the loader reports keys)


def coherence_problems(intent: FabricIntent) -> list[tuple[str, str]]:
    """Rules that span several keys: (the key to fix, why) for each one broken."""
    problems: list[tuple[str, str]] = []
    lossless, cnp = intent.lossless, intent.cnp
    if cnp.priority == lossless.priority:
        problems.append(
            (
                "cnp.priority",
                f"must differ from lossless.priority {lossless.priority}: CNPs ride their own "
                "strict-priority queue, never the PFC-paused RoCE queue",
            )
        )
    if cnp.dscp in lossless.dscp:
        problems.append(("cnp.dscp", f"is also a lossless (RoCE data) DSCP {lossless.dscp}"))
    if intent.congestion_control == "pfc_only" and not lossless.pfc:
        problems.append(("lossless.pfc", "congestion_control pfc_only needs lossless.pfc: true"))
    if intent.congestion_control == "ecn_only" and lossless.pfc:
        problems.append(
            ("lossless.pfc", "congestion_control ecn_only (lossy RoCE) needs lossless.pfc: false")
        )
    if intent.congestion_control in ("dcqcn", "ecn_only") and not intent.ecn.enabled:
        problems.append(
            ("ecn.enabled", f"congestion_control {intent.congestion_control} needs ecn.enabled: true")
        )
    if intent.kind == "roce" and (intent.roce_tos >> 2) not in lossless.dscp:
        problems.append(
            (
                "roce_tos",
                f"carries DSCP {intent.roce_tos >> 2}, which is not a lossless DSCP {lossless.dscp}",
            )
        )
    expected_layer = "Ethernet" if intent.kind == "roce" else "InfiniBand"
    if intent.link.link_layer not in (None, expected_layer):
        problems.append(("link.link_layer", f"does not match kind {intent.kind} (expected {expected_layer})"))
    problems += subnet_manager_problems(intent.subnet_manager)
    psids = [pin.psid for pin in intent.nic_firmware]
    for psid in sorted({p for p in psids if psids.count(p) > 1}):
        problems.append(("nic_firmware", f"lists PSID {psid} more than once"))
    return problems


def default_intent() -> FabricIntent:
    return FabricIntent()
