"""The fabric intent: one typed model of what the fabric must be.

The Ansible roles render configuration from it and `fabcheck` derives its checks from it. Defaults
follow the canonical NVIDIA RoCEv2 recipe (DSCP 26 -> priority 3 lossless, CNP DSCP 48 / priority 6,
ECN 150 KB..1.5 MB at 100 %, trust DSCP, MTU 9000/4096).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

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

# The roce_nic module's rule for device and interface names (roles/roce_host/library/roce_nic.py,
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

# Link classes of `nvidia-smi topo -m`, best to worst; the intent names the worst acceptable one.
GPU_NIC_LINK_CLASSES = ("PIX", "PXB", "PHB", "NODE", "SYS")
RDMA_MTUS = (256, 512, 1024, 2048, 4096)
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


class LosslessClass(StrictModel):
    dscp: list[Dscp] = Field(default_factory=lambda: [26], min_length=1)
    priority: Priority = 3
    pfc: Boolean = True

    @field_validator("dscp")
    @classmethod
    def _unique(cls, value: list[int]) -> list[int]:
        if len(set(value)) != len(value):
            raise ValueError("DSCP values must be unique")
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


class Partition(StrictModel):
    name: str
    pkey: str = Field(pattern=r"^0x[0-9a-fA-F]{1,4}$")
    members: str = "ALL=full"
    ipoib: Boolean = True


class SubnetManager(StrictModel):
    routing_engine: str = "ftree"
    sm_priorities: dict[str, Annotated[Integer, Field(ge=0, le=15)]] = Field(default_factory=dict)
    lmc: Integer = Field(0, ge=0, le=7)
    sweep_interval: Integer = Field(10, ge=0)
    qos: Boolean = False
    partitions: list[Partition] = Field(default_factory=list)

    @field_validator("routing_engine")
    @classmethod
    def _engines(cls, value: str) -> str:
        known = {
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
        }
        engines = [e.strip() for e in value.split(",")]
        bad = [e for e in engines if e not in known]
        if bad:
            raise ValueError(f"unknown routing engine(s) {bad}; allowed: {', '.join(sorted(known))}")
        return value


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
    max_gpu_nic_link: Literal["PIX", "PXB", "PHB", "NODE", "SYS"] = "PXB"
    link: Link = Field(default_factory=Link)
    nccl: Nccl = Field(default_factory=Nccl)
    performance: Performance = Field(default_factory=Performance)
    subnet_manager: SubnetManager = Field(default_factory=SubnetManager)

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
    return problems


def default_intent() -> FabricIntent:
    return FabricIntent()
