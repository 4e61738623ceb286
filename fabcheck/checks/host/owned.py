"""The NIC settings role roce_host owns (through the roce_nic module), each with the host check that
judges it, and the host checks that judge a NIC value no fabcheck role writes, each with who owns it.

Declared once here; tests/invariant/test_host_fields.py drifts each owned setting on a mock host and
docs/checks/host.md's owned-field table is generated from both tables (host_owned_fields_markdown).
"""

from __future__ import annotations

from dataclasses import dataclass

from fabcheck.checks.host.dcqcn import CNP, MIN_TIME_BETWEEN_CNPS, RP_PARAMS
from fabcheck.checks.host.firmware import NIC_FW_CONFIG
from fabcheck.checks.host.pcie import IOMMU
from fabcheck.checks.host.pfc_storm import PFC_STORM_PREVENTION
from fabcheck.checks.host.ports import LINK_LAYER, NETDEV_MTU, PORT_SPEED, RDMA_MTU
from fabcheck.checks.host.qos import CMA_ROCE_MODE, CMA_ROCE_TOS, DSCP2PRIO, ECN_ENABLE, PFC, ROCE_TOS, TRUST
from fabcheck.checks.host.wire import LINK_ERRORS, LINK_FLAPS, OPTICS
from fabcheck.desired.nic import ECN_FILES

# The module keys a DCQCN file's write by its path under ecn/ (the priority as the record names it).
_ECN_SETTING = {value: name.format(priority="<ecn_priority>") for value, name in ECN_FILES.items()}


@dataclass(frozen=True)
class HostOwnedField:
    """One NIC setting the roce_nic module writes: `field` of fabcheck.desired.nic.DesiredNic it
    writes, `setting` the module's own key (its diff and `changed` name it), and the check that judges
    it on that NIC (`also`: checks that judge a value the kernel derives from it, failing with it;
    `rewrites`: module settings its drift hides, which check mode then plans to write again too)."""

    field: str
    setting: str
    check: str
    also: tuple[str, ...] = ()
    rewrites: tuple[str, ...] = ()


HOST_OWNED_FIELDS: tuple[HostOwnedField, ...] = (
    # mlnx_qos prints no DSCP map while trust is pcp: the module cannot see it and sets its entries again.
    HostOwnedField("trust", "trust", TRUST, rewrites=("dscp2prio",)),
    HostOwnedField("pfc_priorities", "pfc", PFC),
    HostOwnedField("dscp_to_priority_pairs", "dscp2prio", DSCP2PRIO),
    HostOwnedField("np_enable", _ECN_SETTING["np_enable"], ECN_ENABLE),
    HostOwnedField("rp_enable", _ECN_SETTING["rp_enable"], ECN_ENABLE),
    HostOwnedField("cnp_dscp", _ECN_SETTING["cnp_dscp"], CNP),
    HostOwnedField("cnp_priority", _ECN_SETTING["cnp_priority"], CNP),
    HostOwnedField("min_time_between_cnps", _ECN_SETTING["min_time_between_cnps"], MIN_TIME_BETWEEN_CNPS),
    HostOwnedField("rp_param_pairs", _ECN_SETTING["rp_params"] + "/<param>", RP_PARAMS),
    HostOwnedField("roce_tos", "traffic_class/<port>", ROCE_TOS),
    HostOwnedField("roce_tos", "rdma_cm_tos/<port>", CMA_ROCE_TOS),
    HostOwnedField("netdev_mtu", "mtu", NETDEV_MTU, also=(RDMA_MTU,)),
    HostOwnedField("pfc_storm_prevention_ms", "pfc_storm_prevention", PFC_STORM_PREVENTION),
)


@dataclass(frozen=True)
class ForeignNicValue:
    """A NIC value a host check judges though no fabcheck role writes it: `field` of DesiredNic (None:
    the intent does not carry it), the check, and who owns it."""

    check: str
    field: str | None
    owner: str


FOREIGN_NIC_VALUES: tuple[ForeignNicValue, ...] = (
    ForeignNicValue(
        RDMA_MTU, "rdma_mtu", "the kernel: RoCE active_mtu follows the netdev MTU roce_host sets (`mtu`)"
    ),
    ForeignNicValue(LINK_LAYER, "link_layer", "the NIC firmware: `mlxconfig set LINK_TYPE_P<n>` and a reset"),
    ForeignNicValue(
        PORT_SPEED, "speed_gbps", "link training with the switch port (switch_port_speeds) and the cable"
    ),
    ForeignNicValue(CMA_ROCE_MODE, None, "the kernel's RDMA-CM default (RoCE v2); no role writes it"),
    # The wire (docs/checks/wire.md): counters and diagnostics, judged against the intent's link_health.
    ForeignNicValue(LINK_ERRORS, None, "the wire: the cable and the optics at both ends; no role writes it"),
    ForeignNicValue(LINK_FLAPS, None, "the wire: the cable and the optics at both ends; no role writes it"),
    ForeignNicValue(OPTICS, None, "the module in the NIC's cage; no role writes it"),
    # The bus (docs/checks/bus.md): the rail NIC's IOMMU domain follows the kernel command line.
    ForeignNicValue(IOMMU, None, "the kernel command line (`iommu=pt`) and the BIOS; no role writes it"),
    # Not a roce_nic setting: role roce_host's second module writes the firmware's Next Boot values.
    ForeignNicValue(
        NIC_FW_CONFIG,
        None,
        "the NIC firmware (the intent's nic_firmware): role roce_host's nic_fw_config module (tag "
        "firmware) sets it with `mlxconfig set`, in effect after a firmware reset or reboot",
    ),
)
# DesiredNic fields that are no setting of their own: the record's keys, and values the owned ones carry.
NOT_SETTINGS: dict[str, str] = {
    "host": "the record's key",
    "device": "the record's key",
    "lossless_dscp": "written as entries of dscp_to_priority_pairs",
    "ecn_priority": "selects which roce_np/roce_rp enable/<p> file np_enable and rp_enable write",
}


def host_owned_fields_markdown(check_tags: dict[str, str | None], test: str) -> str:
    """docs/checks/host.md's rows: each owned NIC setting with its concern tag, check and test, then
    each value a host check judges that no role writes, with its owner (`check_tags`: check id -> role
    tag)."""
    rows = ["| field | module setting | concern tag | check | test |", "|---|---|---|---|---|"]
    for owned in HOST_OWNED_FIELDS:
        checks = ", ".join(f"`{name}`" for name in (owned.check, *owned.also))
        tag = check_tags[owned.check]
        rows.append(f"| `{owned.field}` | `{owned.setting}` | `{tag}` | {checks} | {test} |")
    for foreign in FOREIGN_NIC_VALUES:
        field = f"`{foreign.field}`" if foreign.field else "-"
        rows.append(f"| {field} | none: owned by {foreign.owner} | - | `{foreign.check}` | - |")
    return "\n".join(rows)
