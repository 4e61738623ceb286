"""Collect a GPU host's evidence in ONE ssh round trip: the probe table, the round trip, the records.

Every host probe is declared once in HOST_PROBES: its name, its scope (the host, each RDMA port, each
RoCE netdev), the command or file it reads and how its output is read into a record. The collection
script is generated from that table (fabcheck.collect.script, which also splits the output back into
sections) and run through the one ssh runner (fabcheck.collect.ssh); `read_records` (pure) turns the
sections into records. Adding a host probe is one line of HOST_PROBES and its parser.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fabcheck.collect.script import COUNTER_WINDOW, EARLIER, LAUNCHER, HostProbe, Section
from fabcheck.collect.script import collection_script as script_for
from fabcheck.collect.ssh import TimeLimits
from fabcheck.desired.nic import ECN_DIR, ECN_FILES, PERSIST_PATHS, PERSIST_UNIT
from fabcheck.errors import ParseError
from fabcheck.parsers import host_sysfs
from fabcheck.parsers.ethtool_fec import parse_fec
from fabcheck.parsers.ethtool_module import parse_module
from fabcheck.parsers.ethtool_phy import parse_link_counters
from fabcheck.parsers.ethtool_tunable import TUNABLE, parse_pfc_prevention_tout
from fabcheck.parsers.flint import parse_flint
from fabcheck.parsers.gpudirect import NVIDIA_MODULE, parse_kernel_release, parse_module_license
from fabcheck.parsers.hw_counters import parse_port_hw_counters
from fabcheck.parsers.ibv_devinfo import NO_DEVICES, parse_ibv_devinfo
from fabcheck.parsers.imex import parse_imex_nodes_config, parse_imex_status
from fabcheck.parsers.kernel_log import parse_xid_events
from fabcheck.parsers.lspci import parse_lspci
from fabcheck.parsers.mlnx_qos import parse_mlnx_qos
from fabcheck.parsers.mlxconfig import parse_mlxconfig
from fabcheck.parsers.mlxlink import parse_mlxlink
from fabcheck.parsers.nic_persist import (
    missing_file,
    parse_boot_settings,
    parse_present_files,
    parse_unit_state,
)
from fabcheck.parsers.nvidia_smi_q import parse_nvidia_smi_q
from fabcheck.parsers.nvlink import parse_active_state, parse_nvlink_status
from fabcheck.parsers.pcie_sysfs import aer_answer, parse_cmdline, parse_iommu_group_type
from fabcheck.parsers.show_gids import parse_show_gids
from fabcheck.parsers.topo import parse_topo

# Probe (= section) names: a host probe's section is its name, a port probe's "<name>:<dev>/<port>", a
# netdev probe's "<name>:<netdev>".
TIME_LIMIT = "time_limit"  # whether the host has `timeout` (coreutils) to bound its own run
TOPO = "topo"
RDMA_LINK = "rdma_link"
IBV_DEVINFO = "ibv_devinfo"
LSMOD = "lsmod"
SHOW_GIDS = "show_gids"
MLNX_QOS = "mlnx_qos"
NETDEV_MTU = "mtu"
ECN_NP_ENABLE = "ecn_np_enable"
ECN_RP_ENABLE = "ecn_rp_enable"
CNP_DSCP = "cnp_dscp"
CNP_PRIO = "cnp_802p_prio"
MIN_TIME_BETWEEN_CNPS = "min_time_between_cnps"
ROCE_RP = "roce_rp"
DRIVER = "driver"
PFC_STORM = "pfc_storm"  # ethtool's PFC storm prevention timeout of the netdev (ms)
TRAFFIC_CLASS = "traffic_class"
CMA_ROCE_TOS = "cma_roce_tos"
CMA_ROCE_MODE = "cma_roce_mode"
# What re-applies the NIC settings at boot (role roce_host, tag persist): the settings file, whether the
# boot unit is enabled, and which of the boot files exist.
PERSIST_CONFIG = "persist_config"
PERSIST_UNIT_STATE = "persist_unit"
PERSIST_FILES = "persist_files"
PERSIST_FILE_ORDER = ("config", "applier", "unit", "rule")
# The GPUDirect mechanism (host.gpudirect): which nvidia module flavour is installed and the kernel.
NVIDIA_LICENSE = "nvidia_license"
KERNEL_RELEASE = "kernel_release"
# The wire (docs/checks/wire.md): a netdev's physical counters, its FEC and its module's diagnostics,
# and where mlxlink is installed its port's BER and FEC counters. The counter views are read at the
# start and the end of the counter window (COUNTER_WINDOW says how long the script waited).
LINK_STATS = "link_stats"  # ethtool -S: the mlx5 *_phy counters
FEC = "fec"  # ethtool -I --show-fec: the FEC mode, and its statistics where the kernel has them
MODULE = "module"  # ethtool -m: the module's identity and digital diagnostics with its thresholds
MLXLINK = "mlxlink"  # mlxlink -c: raw/effective BER and FEC counters (optional tool)
# The RDMA port's own counters (the kernel's /sys/class/infiniband/DEV/ports/N/hw_counters, one file per
# counter: https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband): mlx5 keeps the
# RoCE sequence errors and the ECN/CNP counts there, not in `ethtool -S` (fabcheck.parsers.hw_counters,
# the same `grep -r -H` the incast capture runs). No check judges them: the metrics report them.
RDMA_HW_COUNTERS = "rdma_hw_counters"
# `ethtool -m` on a port that has no module EEPROM to read (an empty cage, a driver or port without
# module EEPROM access) fails with "Cannot get module EEPROM information: <errno text>" (ethtool's
# message; real: "...: No such device", sonic-net/sonic-mgmt issue 8198; "...: Invalid argument" on an
# i40e port without NVM support, netdev list 2019). The record is an Unreadable whose reason starts with
# NO_MODULE_EEPROM: the optics checks make it a named skip, never a collection error.
NO_MODULE_EEPROM = "no module EEPROM to read"
# NIC firmware (docs/checks/bus.md): the running and burned image with the board's PSID, and the
# firmware parameters with what is in effect (Current) and what the next boot brings (Next Boot).
FLINT = "flint"
MLXCONFIG = "mlxconfig"
_NO_EEPROM = "Cannot get module EEPROM information: "
_NO_EEPROM_ERRNOS = ("Operation not supported", "No such device", "Invalid argument")
# The bus (docs/checks/bus.md): every PCI function with its links, ACS and ATS (`lspci -D -vvv`; run as
# root, else capabilities are `<access denied>`), the AER counters of every function that has them (a
# counter view: its glob matches no file on a host without AER, an answer), the kernel command line and
# the IOMMU group type of each rail NIC (no iommu_group: no IOMMU translation).
LSPCI = "lspci"
AER = "aer"
CMDLINE = "cmdline"
IOMMU_GROUP = "iommu_group"
PCI_DEVICES = "/sys/bus/pci/devices"
AER_FILES = tuple(f"{PCI_DEVICES}/*/aer_dev_{severity}" for severity in ("correctable", "nonfatal", "fatal"))
# GPU health (docs/checks/bus.md, host.gpu_health): each GPU's `nvidia-smi -q` and the Xid events of
# the kernel log since boot, as far back as the ring buffer holds it.
NVIDIA_SMI_Q = "nvidia_smi_q"
KERNEL_LOG = "kernel_log"
# NVLink domains (docs/checks/nvlink.md): each GPU's NVLinks, the IMEX daemon of a multi-node NVLink
# domain (its unit, the node list it read at start-up, the domain as it sees it) and fabric manager on
# NVSwitch baseboards. `systemctl is-active` exits non-zero for every state but active: an answer.
NVLINK_STATUS = "nvlink_status"
IMEX_ACTIVE = "imex_active"
IMEX_NODES = "imex_nodes"
IMEX_STATUS = "imex_status"
FABRIC_MANAGER_ACTIVE = "fabric_manager_active"
IMEX_UNIT = "nvidia-imex"
IMEX_NODES_CONFIG = "/etc/nvidia-imex/nodes_config.cfg"
FABRIC_MANAGER_UNIT = "nvidia-fabricmanager"


def module_answer(parse: Callable[[str, str], Any]) -> Callable[[int, str, str, str], Any]:
    """`ethtool -m` read as an answer: its output parsed, and a port with no module EEPROM to read an
    Unreadable whose reason starts with NO_MODULE_EEPROM (any other failure is an Unreadable too)."""

    def answer(rc: int, out: str, err: str, source: str) -> Any:
        if rc == 0:
            return parse(out, source)
        said = last_line(err) or last_line(out)
        if said.startswith(_NO_EEPROM) and said[len(_NO_EEPROM) :].strip() in _NO_EEPROM_ERRNOS:
            return Unreadable(source, f"{NO_MODULE_EEPROM} (exit {rc}: {said})")
        return Unreadable(source, _short(f"exit {rc}" + (f": {said}" if said else "")))

    return answer


def _listed(folder: str) -> Callable[[str, str], dict[str, int]]:
    def parse(text: str, source: str) -> dict[str, int]:
        return host_sysfs.sysfs_listing(text, source, folder)

    return parse


def _present(rc: int, out: str, err: str, source: str) -> frozenset[str]:
    wanted = [PERSIST_PATHS[key] for key in PERSIST_FILE_ORDER]
    return parse_present_files(rc, out, err, wanted, source)


NET = "/sys/class/net/{netdev}"
ECN = {value: f"{ECN_DIR}/{name}" for value, name in ECN_FILES.items()}  # "{netdev}", "{priority}" left in
HOST_PROBES: tuple[HostProbe, ...] = (
    HostProbe(TIME_LIMIT, "host", ("command", "-v", "timeout"), str, builtin=True),
    HostProbe(COUNTER_WINDOW, "host", ("sleep", "<counter window>"), host_sysfs.sysfs_int, builtin=True),
    HostProbe(TOPO, "host", ("nvidia-smi", "topo", "-m"), parse_topo),
    HostProbe(LSMOD, "host", ("lsmod",), host_sysfs.loaded_modules),
    HostProbe(IBV_DEVINFO, "host", ("ibv_devinfo", "-v"), parse_ibv_devinfo, empty_when=NO_DEVICES),
    HostProbe(SHOW_GIDS, "host", ("show_gids",), parse_show_gids),
    HostProbe(RDMA_LINK, "host", ("rdma", "link"), host_sysfs.rdma_links, builtin=True),
    HostProbe(
        TRAFFIC_CLASS,
        "port",
        ("cat", "/sys/class/infiniband/{dev}/tc/{port}/traffic_class"),
        host_sysfs.traffic_class,
    ),
    # The RDMA-CM defaults as role roce_host reads them: the tools read configfs
    # (/sys/kernel/config/rdma_cm/DEV/ports/N/default_roce_tos, default_roce_mode), mounting it and
    # creating the device's group with the kernel defaults when absent; without -t/-m they set nothing.
    HostProbe(CMA_ROCE_TOS, "port", ("cma_roce_tos", "-d", "{dev}", "-p", "{port}"), host_sysfs.rdma_cm_tos),
    HostProbe(
        CMA_ROCE_MODE, "port", ("cma_roce_mode", "-d", "{dev}", "-p", "{port}"), host_sysfs.rdma_cm_mode
    ),
    HostProbe(MLNX_QOS, "netdev", ("mlnx_qos", "-i", "{netdev}"), parse_mlnx_qos),
    HostProbe(NETDEV_MTU, "netdev", ("cat", NET + "/mtu"), host_sysfs.sysfs_int),
    HostProbe(ECN_NP_ENABLE, "netdev", ("cat", ECN["np_enable"]), host_sysfs.sysfs_int),
    HostProbe(ECN_RP_ENABLE, "netdev", ("cat", ECN["rp_enable"]), host_sysfs.sysfs_int),
    HostProbe(CNP_DSCP, "netdev", ("cat", ECN["cnp_dscp"]), host_sysfs.sysfs_int),
    HostProbe(CNP_PRIO, "netdev", ("cat", ECN["cnp_priority"]), host_sysfs.sysfs_int),
    HostProbe(MIN_TIME_BETWEEN_CNPS, "netdev", ("cat", ECN["min_time_between_cnps"]), host_sysfs.sysfs_int),
    # Every DCQCN reaction-point parameter at once, as path:value lines (the intent picks which to judge).
    HostProbe(ROCE_RP, "netdev", ("grep", "-r", "-H", "", ECN["rp_params"]), _listed(ECN_FILES["rp_params"])),
    HostProbe(DRIVER, "netdev", ("ethtool", "-i", "{netdev}"), host_sysfs.ethtool_driver),
    HostProbe(
        PFC_STORM, "netdev", ("ethtool", "--get-tunable", "{netdev}", TUNABLE), parse_pfc_prevention_tout
    ),
    # The wire (docs/checks/wire.md). `-I` (--include-statistics) adds the FEC statistics where the
    # kernel has them. mlxlink (NVIDIA MFT / mstflint) takes the RDMA device name for -d (mstflint
    # mtcr_ul resolves mlx5_N through /sys/class/infiniband), the port for -p, and -c
    # (--show_counters) prints "Physical Counters and BER Info" (Mellanox/mstflint:
    # mlxlink/modules/mlxlink_commander.h@b9d9e844a14ae1c85cb90c76ccd4a56a0eccd599).
    HostProbe(LINK_STATS, "netdev", ("ethtool", "-S", "{netdev}"), parse_link_counters, counter=True),
    HostProbe(FEC, "netdev", ("ethtool", "-I", "--show-fec", "{netdev}"), parse_fec, counter=True),
    HostProbe(MODULE, "netdev", ("ethtool", "-m", "{netdev}"), module_answer(parse_module), "answer"),
    HostProbe(
        MLXLINK,
        "port",
        ("mlxlink", "-d", "{dev}", "-p", "{port}", "-c"),
        parse_mlxlink,
        counter=True,
        optional=True,
    ),
    HostProbe(
        RDMA_HW_COUNTERS,
        "port",
        ("grep", "-r", "-H", "", "/sys/class/infiniband/{dev}/ports/{port}/hw_counters"),
        parse_port_hw_counters,
        counter=True,
    ),
    HostProbe(PERSIST_CONFIG, "host", ("cat", PERSIST_PATHS["config"]), parse_boot_settings, "file"),
    HostProbe(
        PERSIST_UNIT_STATE, "host", ("systemctl", "is-enabled", PERSIST_UNIT), parse_unit_state, "answer"
    ),
    HostProbe(
        PERSIST_FILES,
        "host",
        ("ls", "-1d", "--", *(PERSIST_PATHS[key] for key in PERSIST_FILE_ORDER)),
        _present,
        "answer",
    ),
    HostProbe(
        NVIDIA_LICENSE, "host", ("modinfo", "-F", "license", NVIDIA_MODULE), parse_module_license, "answer"
    ),
    HostProbe(KERNEL_RELEASE, "host", ("uname", "-r"), parse_kernel_release),
    # NIC firmware: flint and mlxconfig (NVIDIA MFT, or mstflint's) take the RDMA device name for -d
    # (mstflint's mtcr_ul resolves mlx5_N through /sys/class/infiniband). Optional tools: absent, the
    # firmware version is read from ibv_devinfo and pinned parameters are an ERROR (host.nic_fw_config).
    HostProbe(FLINT, "port", ("flint", "-d", "{dev}", "q"), parse_flint, optional=True),
    HostProbe(MLXCONFIG, "port", ("mlxconfig", "-d", "{dev}", "-e", "q"), parse_mlxconfig, optional=True),
    HostProbe(LSPCI, "host", ("lspci", "-D", "-vvv"), parse_lspci),
    HostProbe(AER, "host", ("grep", "-H", "", *AER_FILES), aer_answer, "answer", counter=True, glob=True),
    HostProbe(CMDLINE, "host", ("cat", "/proc/cmdline"), parse_cmdline),
    HostProbe(
        IOMMU_GROUP,
        "port",
        ("cat", "/sys/class/infiniband/{dev}/device/iommu_group/type"),
        parse_iommu_group_type,
        "file",
    ),
    HostProbe(NVIDIA_SMI_Q, "host", ("nvidia-smi", "-q"), parse_nvidia_smi_q),
    HostProbe(KERNEL_LOG, "host", ("dmesg",), parse_xid_events),
    HostProbe(NVLINK_STATUS, "host", ("nvidia-smi", "nvlink", "-s"), parse_nvlink_status),
    HostProbe(IMEX_ACTIVE, "host", ("systemctl", "is-active", IMEX_UNIT), parse_active_state, "answer"),
    # An absent file (no IMEX configured) is an Unreadable record: cat's exit and its complaint.
    HostProbe(IMEX_NODES, "host", ("cat", IMEX_NODES_CONFIG), parse_imex_nodes_config),
    HostProbe(IMEX_STATUS, "host", ("nvidia-imex-ctl", "-N"), parse_imex_status, optional=True),
    HostProbe(
        FABRIC_MANAGER_ACTIVE,
        "host",
        ("systemctl", "is-active", FABRIC_MANAGER_UNIT),
        parse_active_state,
        "answer",
    ),
)
PROBES_BY_NAME: Mapping[str, HostProbe] = {probe.name: probe for probe in HOST_PROBES}


def collection_script(probes: Iterable[HostProbe] = HOST_PROBES) -> str:
    """The round trip's script: of the probe table, or of the probes given (tests)."""
    return script_for(probes)


COLLECT_SCRIPT = collection_script()


@dataclass(frozen=True)
class HostCollection:
    """What one round trip brought back. ``error`` says why nothing (or not everything) came back;
    ``expired`` is CONNECT or COMMAND when a time limit ended it."""

    host: str
    sections: Mapping[str, Section]
    complete: bool
    error: str | None = None
    priority: int = 3
    expired: str | None = None


def remote_command(token: str, priority: int, limits: TimeLimits | None = None) -> str:
    """The one remote command line: the launcher and the static script as single quoted arguments (the
    limits' counter window is the script's last one)."""
    if not 0 <= priority <= 7:
        raise ValueError(f"lossless priority {priority} is not 0..7")
    limits = limits or TimeLimits()
    window = str(limits.counter_window_s)
    script = [COLLECT_SCRIPT, "fabcheck-collect", token, str(priority), str(limits.tool_s), window]
    return shlex.join(["sh", "-c", LAUNCHER, "fabcheck-collect", str(limits.host_s), *script])


def section_command(section: str, priority: int) -> str:
    """The command a section ran, shell-quoted, e.g. 'mlnx_qos -i ens1np0' for 'mlnx_qos:ens1np0'."""
    kind, _, subject = section.partition(":")
    probe = PROBES_BY_NAME.get(kind.removesuffix(EARLIER))
    if probe is None:
        return shlex.quote(section)
    dev, _, port = subject.partition("/")
    values = {"dev": dev, "port": port, "netdev": subject, "priority": priority}
    words = [word.format(**values) for word in probe.argv]
    return " ".join(word if probe.glob and "*" in word else shlex.quote(word) for word in words)


# ---- sections -> records ------------------------------------------------------------------------


@dataclass(frozen=True)
class Unreadable:
    """A record that could not be read: the command, and why (exit code, stderr, parse error)."""

    command: str
    reason: str


REASON_CHARS = 300  # a hostile host's 5000-digit value is quoted, never echoed whole


def read_records(
    sections: Mapping[str, Section], priority: int, probes: Iterable[HostProbe] | None = None
) -> dict[tuple[str, str], Any]:
    """Pure: every probe's record for every subject the host showed (ports and netdevs from `rdma link`).

    A counter probe's record is its second (or only) reading; with a counter window, its first reading
    is the record `earlier(probe)` of the same subject. A section that is missing, cut off, failed or
    unparsable is an Unreadable record, never a guess."""
    probes = HOST_PROBES if probes is None else tuple(probes)
    records: dict[tuple[str, str], Any] = {}
    links = read_section(PROBES_BY_NAME[RDMA_LINK], sections, "", priority)
    records[(RDMA_LINK, "")] = links
    ports = [] if isinstance(links, Unreadable) else [link.name for link in links]
    netdevs = [] if isinstance(links, Unreadable) else sorted({lk.netdev for lk in links if lk.netdev})
    subjects = {"host": [""], "port": ports, "netdev": netdevs}
    window: Any = 0
    if any(probe.counter for probe in probes):
        window = read_section(PROBES_BY_NAME[COUNTER_WINDOW], sections, "", priority)
        records[(COUNTER_WINDOW, "")] = window
    for probe in probes:
        if probe.name in (RDMA_LINK, TIME_LIMIT, COUNTER_WINDOW):
            continue  # the listing and the window are read above; the time limit is judged from its section
        for subject in subjects[probe.scope]:
            records[(probe.name, subject)] = read_section(probe, sections, subject, priority)
            if probe.counter and window != 0:  # a window (or a round trip stopped inside it): two readings
                first = read_section(probe, sections, subject, priority, first=True)
                records[(probe.earlier, subject)] = first
    return records


def read_section(
    probe: HostProbe, sections: Mapping[str, Section], subject: str, priority: int, *, first: bool = False
) -> Any:
    """One probe's record for one subject (`first`: a counter probe's first reading), or Unreadable
    saying why."""
    name = probe.section(subject, first=first)
    command = section_command(name, priority)
    section = sections.get(name)
    if section is None:
        return Unreadable(command, "not in the collected output")
    if section.rc is None:
        return Unreadable(command, "output truncated (no end marker)")
    try:
        return _parsed(probe, section, command)
    except ParseError as err:
        where = "" if err.line is None else f"line {err.line}: "
        return Unreadable(command, _short(where + err.message))
    except Exception as err:  # any output a parser did not foresee is unreadable, never a crash of the run
        return Unreadable(command, f"unreadable output ({_short(f'{type(err).__name__}: {err}')})")


def _parsed(probe: HostProbe, section: Section, command: str) -> Any:
    assert section.rc is not None
    if probe.reading == "answer":
        return probe.parse(section.rc, section.stdout, section.stderr, command)
    if probe.reading == "file" and missing_file(section.rc, section.stderr):
        return None
    if probe.optional and section.rc == 127:
        return None  # the tool is not installed: an optional source, absent
    empty = probe.empty_when
    if empty is not None and section.rc != 0 and section.stderr.strip() == empty:
        return probe.parse(empty, command)
    if section.rc != 0:
        detail = last_line(section.stderr) or last_line(section.stdout)
        return Unreadable(command, _short(f"exit {section.rc}" + (f": {detail}" if detail else "")))
    return probe.parse(section.stdout, command)


def _short(text: str) -> str:
    return text if len(text) <= REASON_CHARS else f"{text[:REASON_CHARS]}... ({len(text)} characters)"


def last_line(text: str) -> str:
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
