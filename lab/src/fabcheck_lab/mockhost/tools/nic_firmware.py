"""The mock NIC's firmware: its burned and running image and its non-volatile configuration (mlxconfig).

State lives in ``firmware/<rdma dev>.json`` (absent: the factory state below). A firmware parameter has
three values as mlxconfig shows them (Mellanox/mstflint: mlxconfig/mlxcfg_ui.cpp@b9d9e844a14ae1c85cb90c76
ccd4a56a0eccd599): Default, Current (in effect) and Next Boot (what `mlxconfig set` wrote, in effect after
a firmware reset or reboot). The running firmware is what flint's `FW Version(Running)`, ibv_devinfo's
fw_ver and ethtool -i show; a burned image that differs runs only after the next boot. ``boot`` is that
boot: Next Boot becomes Current and the burned image the running one.

Parameter names, value spellings and factory values come from cited real queries
(tests/data/real/host/INDEX.tsv, docs/checks/bus.md): LINK_TYPE_P1 ETH(2)/IB(1) (Mellanox/nic-configuration-
operator:pkg/consts/consts.go@8bfbeb34ba25215dd06402cd01bae0108341a8d4), True(1)/False(0) booleans,
ROCE_CC_PRIO_MASK_P1 255, CNP_DSCP_P1 48, CNP_802P_PRIO_P1 6 (a real ConnectX-5 query,
https://github.com/ironcore-dev/dpservice/issues/26), PCI_WR_ORDERING per_mkey(0). Unverified: the bit
widths of the numbers (derived from what each value means), the value name force_relax(1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .common import Node, ToolError

# name -> (kind, size in bits, {enum name: value}); kind "enum", "bool" or "uint".
PARAMS: dict[str, tuple[str, int, dict[str, int]]] = {
    "LINK_TYPE_P1": ("enum", 2, {"IB": 1, "ETH": 2}),
    "ADVANCED_PCI_SETTINGS": ("bool", 1, {"False": 0, "True": 1}),
    "PCI_WR_ORDERING": ("enum", 1, {"per_mkey": 0, "force_relax": 1}),
    "ATS_ENABLED": ("bool", 1, {"False": 0, "True": 1}),
    "SRIOV_EN": ("bool", 1, {"False": 0, "True": 1}),
    "ROCE_CC_PRIO_MASK_P1": ("uint", 8, {}),  # a bit per priority
    "CNP_DSCP_P1": ("uint", 6, {}),  # a DSCP
    "CNP_802P_PRIO_P1": ("uint", 3, {}),  # an 802.1p priority
}
ROCE_FACTORY = {
    "LINK_TYPE_P1": 2,
    "ADVANCED_PCI_SETTINGS": 0,
    "PCI_WR_ORDERING": 0,
    "ATS_ENABLED": 0,
    "SRIOV_EN": 0,
    "ROCE_CC_PRIO_MASK_P1": 255,
    "CNP_DSCP_P1": 48,
    "CNP_802P_PRIO_P1": 6,
}
OTHER_FIRMWARE = "28.37.1014"  # the fw-mismatch fault's older image of the same part
DEVICE_TYPE = "ConnectX7"  # mstflint's dm_dev_type2str for device id 4129 (vendor_part_id of the profile)
# [unverified] the part behind PSID MT_0000000838 (a standalone ConnectX-7: Mellanox/mstflint issue 1717);
# the name and description are the mock's, no real query of this part was found.
PART_NUMBER = "MCX75310AAS-NEAT_Ax"
DESCRIPTION = "NVIDIA ConnectX-7 adapter card; 400GbE / NDR IB; single-port OSFP; PCIe 5.0 x16"


def state_name(nic: dict[str, Any]) -> str:
    return f"firmware/{nic['name']}.json"


def factory_state(nic: dict[str, Any]) -> dict[str, Any]:
    """A NIC as shipped: the profile's firmware running and burned, every parameter at its default."""
    values = dict(ROCE_FACTORY)
    if nic.get("link_layer") == "InfiniBand":
        values["LINK_TYPE_P1"] = 1
    params = {name: {"default": v, "current": v, "next": v} for name, v in values.items()}
    return {"running": nic["fw"], "burned": nic["fw"], "params": params}


def firmware_state(node: Node, nic: dict[str, Any]) -> dict[str, Any]:
    state = node.load(state_name(nic))
    return state if state is not None else factory_state(nic)


def save_firmware_state(node: Node, nic: dict[str, Any], state: dict[str, Any]) -> None:
    node.save(state_name(nic), state)


def resolve_device(node: Node, device: str) -> dict[str, Any] | None:
    """The NIC a `-d` names: its RDMA device (mlx5_0, as mstflint resolves it through
    /sys/class/infiniband) or its PCI address with or without the domain (0000:1a:00.0, 1a:00.0)."""
    for nic in node.all_nics():
        pci = str(nic["pci"])
        if device in (nic["name"], pci, pci.split(":", 1)[1]):
            return nic
    return None


def shown(name: str, value: int) -> str:
    """A value as mlxconfig prints it: NAME(n) for an enum or boolean, the plain number otherwise."""
    kind, _size, names = PARAMS[name]
    label = next((text for text, number in names.items() if number == value), None)
    return f"{label}({value})" if kind != "uint" and label is not None else str(value)


def parse_value(name: str, text: str) -> int:
    """A value given to `set`, as mstflint's EnumParamValue/UnsignedParamValue parse it (mlxconfig/
    mlxcfg_param.cpp): an enum's name (any case) or its number; a number within the parameter's bits."""
    kind, size, names = PARAMS[name]
    number = _number(text)
    if kind != "uint":
        if number is not None and number in names.values():
            return number
        for label, value in names.items():
            if number is None and label.lower() == text.lower():
                return value
        raise ToolError(f"Unknown value {text}")
    if number is None:
        raise ToolError("Cannot parse the value")
    if number > (1 << size) - 1:
        raise ToolError(f"The value {text} is not valid,  as its size is {size} bits")
    return number


def _number(text: str) -> int | None:
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text, 10)
    except ValueError:
        return None


def boot(node: Node) -> list[str]:
    """The NICs' part of a boot: each parameter's Next Boot value takes effect, a burned image runs.
    Returns the NICs whose running firmware changed (their fw_ver in sysfs and the topology follow)."""
    changed = []
    topology = node.load("topology.json")
    for nic in node.all_nics():
        state = node.load(state_name(nic))
        if state is None:
            continue
        for values in state["params"].values():
            values["current"] = values["next"]
        if state["running"] != state["burned"]:
            state["running"] = state["burned"]
            changed.append(nic["name"])
            set_running_version(node, topology, nic["name"], state["running"])
        save_firmware_state(node, nic, state)
    if changed:
        node.save("topology.json", topology)
    return changed


def set_running_version(node: Node, topology: dict[str, Any], device: str, version: str) -> None:
    """Every other view of the running firmware: the topology's (ethtool -i, ibv_devinfo) and sysfs fw_ver."""
    for entry in topology["nics"]:
        if entry["name"] == device:
            entry["fw"] = version
    if (node.sys_class / "infiniband" / device).is_dir():
        node.write_sys(f"infiniband/{device}/fw_ver", version)


def firmware_tools() -> dict[str, Callable[[Node, list[str]], int]]:
    """The firmware tools (served: they read and write the node's state only)."""
    from . import flint, mlxconfig, mlxfwmanager

    return {"mlxconfig": mlxconfig.main, "flint": flint.main, "mlxfwmanager": mlxfwmanager.main}
