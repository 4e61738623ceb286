"""Bring RoCE NICs to a desired state, writing only what differs: the one copy of the apply logic.

Stdlib only. The roce_nic module (plugins/modules/roce_nic.py) imports it through Ansible's
module_utils, and the role installs this same file on the host as the boot-time applier, which the
systemd unit (at boot) and the udev rule (when an RDMA device appears: driver load or reload) run as

    python3 roce_nic_apply.py --config /etc/fabcheck/roce-nic.json [--device DEV]

so the host gets back exactly what the role applied, from the settings the role wrote, without Ansible.
The settings are fabcheck's desired record (fabcheck.desired DesiredHost.roce_nic_args): every value is
written as the record holds it (the PFC bitmap, each DSCP -> priority entry); nothing is derived here.
For every RDMA device it reads the whole current state once (mlnx_qos, ECN/CNP sysfs, traffic_class,
RDMA-CM ToS, netdev MTU, the PFC storm prevention tunable), diffs it against the record and writes only
the differences, always through argv lists or direct sysfs writes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

# (rc, stdout, stderr) of one command given as an argv list: AnsibleModule.run_command, or subprocess.
Runner = Callable[[list[str]], tuple[int, str, str]]

NAME = re.compile(r"^[A-Za-z0-9_.:-]+$")
SYS_NET = "/sys/class/net"
SYS_IB = "/sys/class/infiniband"
PRIORITIES = range(8)
HIDDEN_MAP = "hidden while trust is pcp"
# The ethtool tunable of PFC storm prevention (ms; 0 off); mlx5 accepts 0 or 80..8000.
STORM_TUNABLE = "pfc-prevention-tout"
STORM_KEY = "pfc_storm_prevention"
STORM_MAX_MS = 8000
RP_PARAMS = (
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


class NicError(Exception):
    """A read or write on one NIC failed; the message names the NIC and the command."""


class WriteFailed(NicError):
    """A write (or the re-read between writes) failed after `done` writes on the same NIC."""

    def __init__(self, message: str, done: list[Change], failed: Change | None) -> None:
        super().__init__(message)
        self.done = done
        self.failed = failed  # None: the re-read of a hidden DSCP map failed, no write was attempted


@dataclass
class Change:
    """One setting that differs: its key, before/after text, and how to write it (argv or sysfs)."""

    key: str
    before: str
    after: str
    argv: list[str] | None = None
    sysfs: tuple[str, str] | None = None  # (path, value)
    undo_argv: list[str] | None = None  # the command that writes `before` back; None: it cannot be
    dscps: tuple[int, ...] = ()  # dscp2prio only: the DSCPs this change maps

    def undo(self) -> Change | None:
        """The write that puts `before` back, or None when `before` is not a value that can be written."""
        if self.sysfs is not None:
            return Change(self.key, self.after, self.before, sysfs=(self.sysfs[0], self.before))
        if self.undo_argv is None:
            return None
        return Change(self.key, self.after, self.before, argv=self.undo_argv, dscps=self.dscps)

    def command(self) -> str:
        if self.sysfs is not None:
            return f"echo {self.sysfs[1]} > {self.sysfs[0]}"
        return " ".join(self.argv or [])


@dataclass
class Nic:
    dev: str
    netdev: str
    ports: list[str]
    state: dict[str, str] = field(default_factory=dict)  # key -> current value as text
    dscp2prio: dict[int, int] | None = None  # None: hidden (trust pcp)


# ---- validation -----------------------------------------------------------------------------------


def check_name(kind: str, name: str) -> str:
    if not NAME.fullmatch(name) or set(name) == {"."}:
        raise NicError(f"invalid {kind} name {name!r}: allowed ^[A-Za-z0-9_.:-]+$")
    return name


def check_params(params: dict) -> None:
    """Range-check the settings record; NicError naming the key. Types are checked by the module's
    argument spec (and read_config for the boot file)."""

    def in_range(key: str, value: int, low: int, high: int) -> None:
        if not low <= value <= high:
            raise NicError(f"{key}={value}: out of range, allowed {low}..{high}")

    if params["trust"] not in ("dscp", "pcp"):
        raise NicError(f"trust={params['trust']!r}: allowed dscp, pcp")
    bitmap = params["pfc_bitmap"]
    if len(bitmap) != len(PRIORITIES) or any(flag not in (0, 1) or isinstance(flag, bool) for flag in bitmap):
        raise NicError(f"pfc_bitmap={bitmap!r}: must be {len(PRIORITIES)} flags, each 0 or 1")
    for dscp, prio in params["dscp_to_priority"].items():
        if not str(dscp).isdigit():
            raise NicError(f"dscp_to_priority.{dscp}: the key must be a DSCP number 0..63")
        in_range("dscp_to_priority key", int(dscp), 0, 63)
        if not isinstance(prio, int) or isinstance(prio, bool):
            raise NicError(f"dscp_to_priority.{dscp}={prio!r}: must be a priority 0..7")
        in_range(f"dscp_to_priority.{dscp}", prio, 0, 7)
    in_range("ecn_priority", params["ecn_priority"], 0, 7)
    in_range("cnp_priority", params["cnp_priority"], 0, 7)
    in_range("cnp_dscp", params["cnp_dscp"], 0, 63)
    in_range("roce_tos", params["roce_tos"], 0, 255)
    in_range("mtu", params["mtu"], 68, 65535)
    if params["min_time_between_cnps"] is not None:
        in_range("min_time_between_cnps", params["min_time_between_cnps"], 0, 1 << 20)
    if params["pfc_storm_prevention_ms"] is not None:
        in_range("pfc_storm_prevention_ms", params["pfc_storm_prevention_ms"], 0, STORM_MAX_MS)
    for key, value in params["rp_params"].items():
        if key not in RP_PARAMS:
            raise NicError(f"rp_params.{key}: unknown, allowed: {', '.join(RP_PARAMS)}")
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise NicError(f"rp_params.{key}={value!r}: must be a non-negative integer")
    for dev in params["devices"]:
        check_name("RDMA device", dev)


# ---- reading --------------------------------------------------------------------------------------


def read_sys(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip()
    except OSError as exc:
        raise NicError(f"cannot read {path}: {exc.strerror}") from None


def write_sys(path: str, value: str) -> None:
    try:
        # In place, as `echo VALUE > PATH` does: sysfs attributes cannot be replaced.
        with open(path, "w", encoding="ascii") as handle:
            handle.write(value + "\n")
    except OSError as exc:
        raise NicError(f"`echo {value} > {path}` failed: {exc.strerror}") from None


def traffic_class_value(text: str) -> str:
    """`106` or `Global tclass=106` -> `106`."""
    match = re.fullmatch(r"(?:Global tclass=)?\s*(\d+)", text.strip())
    return match.group(1) if match else text.strip()


def all_ethernet_devices() -> list[str]:
    if not os.path.isdir(SYS_IB):
        return []
    found = []
    for dev in sorted(os.listdir(SYS_IB)):
        ports = os.path.join(SYS_IB, dev, "ports")
        layers = {read_sys(os.path.join(ports, p, "link_layer")) for p in sorted(os.listdir(ports))}
        if "Ethernet" in layers:
            found.append(dev)
    return found


def netdev_of(runner: Runner, dev: str) -> str:
    net_dir = os.path.join(SYS_IB, dev, "device", "net")
    names = sorted(os.listdir(net_dir)) if os.path.isdir(net_dir) else []
    if not names:
        names = netdevs_from_rdma_link(runner, dev)
    if len(names) != 1:
        raise NicError(f"{dev}: expected one netdev, found {names or 'none'} ({net_dir}, `rdma link`)")
    return check_name("interface", names[0])


def netdevs_from_rdma_link(runner: Runner, dev: str) -> list[str]:
    rc, out, _err = runner(["rdma", "link", "show"])
    if rc != 0:
        return []
    found = []
    for line in out.splitlines():
        words = line.split()
        if len(words) > 1 and words[0] == "link" and words[1].split("/")[0] == dev and "netdev" in words:
            found.append(words[words.index("netdev") + 1])
    return sorted(set(found))


def ports_of(dev: str) -> list[str]:
    ports_dir = os.path.join(SYS_IB, dev, "ports")
    if not os.path.isdir(ports_dir):
        raise NicError(f"{dev}: no such RDMA device ({ports_dir} missing)")
    return [check_name("port", p) for p in sorted(os.listdir(ports_dir))]


def parse_mlnx_qos(text: str) -> tuple[str, list[int], dict[int, int] | None]:
    """(trust, PFC-enabled priorities, dscp2prio or None when not shown) from `mlnx_qos -i IF`."""
    trust, pfc, mapping = "", None, {}
    shown = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("Priority trust state:"):
            trust = line.split(":", 1)[1].strip()
        elif line.startswith("dscp2prio mapping"):
            shown = True
        elif line.startswith("prio:") and " dscp:" in line:
            prio_text, dscps = line.split(" dscp:", 1)
            for dscp in filter(None, (d.strip() for d in dscps.split(","))):
                mapping[int(dscp)] = int(prio_text[len("prio:") :])
        elif line.startswith("enabled") and pfc is None:
            flags = line.split()[1:]
            pfc = [p for p, flag in zip(PRIORITIES, flags, strict=False) if flag == "1"]
    if not trust or pfc is None:
        raise ValueError("no 'Priority trust state' or PFC 'enabled' line")
    return trust, pfc, mapping if shown else None


def read_qos(runner: Runner, nic: Nic) -> None:
    argv = ["mlnx_qos", "-i", nic.netdev]
    rc, out, err = runner(argv)
    if rc != 0:
        raise NicError(f"{nic.dev}: `{' '.join(argv)}` failed (rc={rc}): {err.strip() or out.strip()}")
    try:
        trust, pfc, mapping = parse_mlnx_qos(out)
    except ValueError as exc:
        raise NicError(f"{nic.dev}: cannot read `{' '.join(argv)}` output: {exc}") from None
    nic.state["trust"] = trust
    nic.state["pfc"] = bitmap_text([int(p in pfc) for p in PRIORITIES])
    nic.dscp2prio = mapping


def parse_tunable(text: str) -> str:
    """`ethtool --get-tunable IF pfc-prevention-tout` prints one `pfc-prevention-tout: N` line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    name, _colon, value = lines[0].partition(": ") if len(lines) == 1 else ("", "", "")
    if name != STORM_TUNABLE or not value.isdigit():
        raise ValueError(f"no single '{STORM_TUNABLE}: N' line")
    return str(int(value))


def read_storm_timeout(runner: Runner, nic: Nic) -> str:
    argv = ["ethtool", "--get-tunable", nic.netdev, STORM_TUNABLE]
    rc, out, err = runner(argv)
    if rc != 0:
        raise NicError(f"{nic.dev}: `{' '.join(argv)}` failed (rc={rc}): {err.strip() or out.strip()}")
    try:
        return parse_tunable(out)
    except ValueError as exc:
        raise NicError(f"{nic.dev}: cannot read `{' '.join(argv)}` output: {exc}") from None


def read_rdma_cm_tos(runner: Runner, dev: str, port: str) -> str:
    argv = ["cma_roce_tos", "-d", dev, "-p", port]
    rc, out, err = runner(argv)
    if rc != 0:
        raise NicError(f"{dev}: `{' '.join(argv)}` failed (rc={rc}): {err.strip() or out.strip()}")
    return out.strip().splitlines()[-1].strip() if out.strip() else ""


def read_nic(runner: Runner, dev: str, params: dict) -> Nic:
    ports = ports_of(dev)  # first: a device that does not exist is named as such
    nic = Nic(dev=dev, netdev=netdev_of(runner, dev), ports=ports)
    read_qos(runner, nic)
    for key, path in sysfs_keys(nic, params).items():
        value = read_sys(path)
        nic.state[key] = traffic_class_value(value) if key.startswith("traffic_class") else value
    for port in nic.ports:
        nic.state[f"rdma_cm_tos/{port}"] = read_rdma_cm_tos(runner, dev, port)
    if params["pfc_storm_prevention_ms"] is not None:
        nic.state[STORM_KEY] = read_storm_timeout(runner, nic)
    return nic


def sysfs_keys(nic: Nic, params: dict) -> dict[str, str]:
    """Every sysfs attribute this module manages on one NIC: key -> path."""
    ecn = os.path.join(SYS_NET, nic.netdev, "ecn")
    prio = str(params["ecn_priority"])
    keys = {
        f"roce_np/enable/{prio}": os.path.join(ecn, "roce_np", "enable", prio),
        f"roce_rp/enable/{prio}": os.path.join(ecn, "roce_rp", "enable", prio),
        "roce_np/cnp_dscp": os.path.join(ecn, "roce_np", "cnp_dscp"),
        "roce_np/cnp_802p_prio": os.path.join(ecn, "roce_np", "cnp_802p_prio"),
        "mtu": os.path.join(SYS_NET, nic.netdev, "mtu"),
    }
    if params["min_time_between_cnps"] is not None:
        keys["roce_np/min_time_between_cnps"] = os.path.join(ecn, "roce_np", "min_time_between_cnps")
    for name in sorted(params["rp_params"]):
        keys[f"roce_rp/{name}"] = os.path.join(ecn, "roce_rp", name)
    for port in nic.ports:
        keys[f"traffic_class/{port}"] = os.path.join(SYS_IB, nic.dev, "tc", port, "traffic_class")
    return keys


# ---- desired state and diff -----------------------------------------------------------------------


def bitmap_text(flags: Sequence[int]) -> str:
    """PFC flags as `mlnx_qos --pfc` takes them: `0,0,0,1,0,0,0,0`."""
    return ",".join(str(int(flag)) for flag in flags)


def wanted_dscp_map(params: dict) -> dict[int, int]:
    """The record's DSCP -> priority entries with integer DSCPs (JSON object keys are strings)."""
    return {int(dscp): prio for dscp, prio in params["dscp_to_priority"].items()}


def plan(nic: Nic, params: dict) -> list[Change]:
    """Every setting of this NIC that differs from the desired state, in the order to write them."""
    changes = qos_changes(nic, params)
    paths = sysfs_keys(nic, params)
    for key, want in desired_sysfs(nic, params).items():
        if nic.state[key] != want:
            changes.append(sysfs_change(nic, key, paths[key], want, params))
    for port in nic.ports:
        key, want = f"rdma_cm_tos/{port}", str(params["roce_tos"])
        if nic.state[key] != want:
            argv = ["cma_roce_tos", "-d", nic.dev, "-p", port, "-t", want]
            undo = [*argv[:-1], nic.state[key]] if nic.state[key].isdigit() else None
            changes.append(Change(key, nic.state[key], want, argv=argv, undo_argv=undo))
    if params["pfc_storm_prevention_ms"] is not None:
        have, want = nic.state[STORM_KEY], str(params["pfc_storm_prevention_ms"])
        if have != want:
            argv = ["ethtool", "--set-tunable", nic.netdev, STORM_TUNABLE, want]
            undo = [*argv[:-1], have] if have.isdigit() else None
            changes.append(Change(STORM_KEY, have, want, argv=argv, undo_argv=undo))
    return changes


def qos_changes(nic: Nic, params: dict) -> list[Change]:
    qos = ["mlnx_qos", "-i", nic.netdev]
    changes = []
    if nic.state["trust"] != params["trust"]:
        argv, undo = [*qos, "--trust", params["trust"]], [*qos, "--trust", nic.state["trust"]]
        changes.append(Change("trust", nic.state["trust"], params["trust"], argv=argv, undo_argv=undo))
    if params["trust"] == "dscp":
        changes += dscp_map_changes(nic, params, qos)
    want_pfc = bitmap_text(params["pfc_bitmap"])
    if nic.state["pfc"] != want_pfc:
        argv, undo = [*qos, "--pfc", want_pfc], [*qos, "--pfc", nic.state["pfc"]]
        changes.append(Change("pfc", nic.state["pfc"], want_pfc, argv=argv, undo_argv=undo))
    return changes


def dscp_map_changes(nic: Nic, params: dict, qos: list[str]) -> list[Change]:
    wanted = wanted_dscp_map(params)
    current = nic.dscp2prio
    wrong = sorted(wanted) if current is None else sorted(d for d, p in wanted.items() if current.get(d) != p)
    if not wrong:
        return []
    before = HIDDEN_MAP if current is None else map_text({d: current.get(d) for d in wrong})
    argv, undo = [*qos], [*qos]
    for dscp in wrong:
        argv += ["--dscp2prio", f"set,{dscp},{wanted[dscp]}"]
        old = None if current is None else current.get(dscp)
        undo += ["--dscp2prio", f"set,{dscp},{old}"]
    # A hidden map (trust pcp) is only known after trust is dscp: apply() plans it again then.
    known = current is not None and all(current.get(d) is not None for d in wrong)
    after = map_text({d: wanted[d] for d in wrong})
    change = Change(
        "dscp2prio", before, after, argv=argv, undo_argv=undo if known else None, dscps=tuple(wrong)
    )
    return [change]


def map_text(mapping: dict[int, int | None]) -> str:
    return ",".join(f"{d}->{'unmapped' if p is None else p}" for d, p in sorted(mapping.items()))


def desired_sysfs(nic: Nic, params: dict) -> dict[str, str]:
    prio = params["ecn_priority"]
    wanted = {
        f"roce_np/enable/{prio}": str(int(params["np_enable"])),
        f"roce_rp/enable/{prio}": str(int(params["rp_enable"])),
        "roce_np/cnp_dscp": str(params["cnp_dscp"]),
        "roce_np/cnp_802p_prio": str(params["cnp_priority"]),
        "mtu": str(params["mtu"]),
    }
    if params["min_time_between_cnps"] is not None:
        wanted["roce_np/min_time_between_cnps"] = str(params["min_time_between_cnps"])
    wanted.update({f"roce_rp/{name}": str(value) for name, value in params["rp_params"].items()})
    wanted.update({f"traffic_class/{port}": str(params["roce_tos"]) for port in nic.ports})
    return wanted


def sysfs_change(nic: Nic, key: str, path: str, want: str, params: dict) -> Change:
    if key == "mtu":
        argv = ["ip", "link", "set", "dev", nic.netdev, "mtu", want]
        undo = [*argv[:-1], nic.state[key]] if nic.state[key].isdigit() else None
        return Change(key, nic.state[key], want, argv=argv, undo_argv=undo)
    return Change(key, nic.state[key], want, sysfs=(path, want))


# ---- writing --------------------------------------------------------------------------------------


def apply(runner: Runner, nic: Nic, changes: list[Change], params: dict) -> list[Change]:
    """Write the changes; a hidden DSCP map is re-read once trust is dscp, so only real differences go.

    Raises WriteFailed with the writes already made when one fails.
    """
    done: list[Change] = []
    for change in changes:
        attempt: Change | None = None
        try:
            if change.key == "dscp2prio" and change.before == HIDDEN_MAP:
                read_qos(runner, nic)
                fresh = dscp_map_changes(nic, params, ["mlnx_qos", "-i", nic.netdev])
                if not fresh:
                    continue
                change = fresh[0]
            attempt = change
            write(runner, nic, change)
        except NicError as exc:
            raise WriteFailed(str(exc), done, attempt) from None
        done.append(change)
    return done


def write(runner: Runner, nic: Nic, change: Change) -> None:
    if change.sysfs is not None:
        try:
            write_sys(*change.sysfs)
        except NicError as exc:
            raise NicError(f"{nic.dev} ({nic.netdev}): {exc}") from None
        return
    if change.argv is None:  # a Change is either a sysfs write or a command
        raise NicError(f"{nic.dev} ({nic.netdev}): {change.key}: neither a sysfs write nor a command")
    rc, out, err = runner(change.argv)
    if rc != 0:
        raise NicError(
            f"{nic.dev} ({nic.netdev}): `{' '.join(change.argv)}` failed (rc={rc}): "
            f"{err.strip() or out.strip()}"
        )


# ---- rollback after a failed write ---------------------------------------------------------------


@dataclass
class Rollback:
    """What putting one NIC back after a failed write did, and whether it now reads as before the run."""

    undone: list[str] = field(default_factory=list)  # settings written back, newest first
    errors: list[str] = field(default_factory=list)  # write-backs that failed or cannot be expressed
    remaining: dict[str, tuple[str, str]] = field(default_factory=dict)  # setting -> (before the run, now)
    unverified: str = ""  # why the NIC could not be read again to compare

    @property
    def ok(self) -> bool:
        return not (self.errors or self.remaining or self.unverified)


def snapshot(nic: Nic) -> Nic:
    """A copy of the NIC as read before any write: apply() re-reads into the live object."""
    mapping = None if nic.dscp2prio is None else dict(nic.dscp2prio)
    return Nic(nic.dev, nic.netdev, list(nic.ports), dict(nic.state), mapping)


def differences(original: Nic, current: Nic) -> dict[str, tuple[str, str]]:
    """Settings whose value now differs from the original read, as (then, now)."""
    found = {
        key: (value, current.state.get(key, "unread"))
        for key, value in original.state.items()
        if current.state.get(key) != value
    }
    old, new = original.dscp2prio, current.dscp2prio
    if old is not None and new is not None:  # a map hidden on either side follows trust, compared above
        moved = sorted(d for d in set(old) | set(new) if old.get(d) != new.get(d))
        if moved:
            found["dscp2prio"] = (
                map_text({d: old.get(d) for d in moved}),
                map_text({d: new.get(d) for d in moved}),
            )
    return found


def took_effect(change: Change, current: Nic) -> bool:
    """Whether a failed write changed its setting anyway (one mlnx_qos call sets several DSCPs in turn)."""
    if change.key == "dscp2prio":
        if current.dscp2prio is None:
            return change.before != HIDDEN_MAP
        return map_text({d: current.dscp2prio.get(d) for d in change.dscps}) != change.before
    return current.state.get(change.key) != change.before


def roll_back(
    runner: Runner, original: Nic, done: list[Change], failed: Change | None, params: dict
) -> Rollback:
    """Write back every setting changed on this NIC, newest first, then read the NIC again to compare.

    Newest first matters: mlx5 turns trust to dscp when a DSCP mapping is set, so the map is put back
    while trust is still dscp and trust last.
    """
    report = Rollback()
    undo = list(done)
    if failed is not None:
        try:
            if took_effect(failed, read_nic(runner, original.dev, params)):
                undo.append(failed)
        except NicError:
            undo.append(failed)  # cannot tell whether it took effect: writing the old value is harmless
    for change in reversed(undo):
        inverse = change.undo()
        if inverse is None:
            report.errors.append(f"{change.key}: the previous value {change.before!r} cannot be written back")
            continue
        try:
            write(runner, original, inverse)
        except NicError as exc:
            report.errors.append(str(exc))
            continue
        report.undone.append(change.key)
    try:
        report.remaining = differences(original, read_nic(runner, original.dev, params))
    except NicError as exc:
        report.unverified = str(exc)
    return report


def failed_run(runner: Runner, result: dict, original: Nic, exc: WriteFailed, params: dict) -> dict:
    """The module result after a failed write on `original`: every write made, and what rollback did."""
    rollback = (
        roll_back(runner, original, exc.done, exc.failed, params) if params["rollback_on_failure"] else None
    )
    earlier = [
        f"{dev} ({', '.join(entry['changed'])})" for dev, entry in result["nics"].items() if entry["changed"]
    ]
    undone = set(rollback.undone) if rollback else set()
    result["writes"] += [write_record(original, c, rolled_back=c.key in undone) for c in exc.done]
    result["changed"] |= bool(exc.done)
    entry: dict = {
        "netdev": original.netdev,
        "changed": [c.key for c in exc.done],
        "changes": {c.key: {"before": c.before, "after": c.after} for c in exc.done},
        "failed_write": None if exc.failed is None else exc.failed.key,
        "rolled_back": rollback is not None,
        "rollback_ok": rollback is not None and rollback.ok,
    }
    if rollback is not None:
        entry["rollback"] = {
            "undone": rollback.undone,
            "errors": rollback.errors,
            "still_different": {k: {"before_run": a, "now": b} for k, (a, b) in rollback.remaining.items()},
            "unverified": rollback.unverified,
        }
    result["nics"][original.dev] = entry
    result["failed"] = True
    result["msg"] = failure_message(original, exc, rollback, earlier)
    return result


def failure_message(nic: Nic, exc: WriteFailed, rollback: Rollback | None, earlier: list[str]) -> str:
    made = ", ".join(f"{c.key} {c.before} -> {c.after}" for c in exc.done)
    parts = [
        str(exc),
        f"Writes made on {nic.dev} before it: {made}" if made else f"Nothing written on {nic.dev}",
    ]
    if rollback is None:
        if exc.done:
            parts.append(f"Not rolled back (rollback_on_failure: false): {nic.dev} is left with those writes")
    elif rollback.ok:
        undone = f"Rolled back ({', '.join(rollback.undone)})" if rollback.undone else "Nothing to roll back"
        parts.append(f"{undone}; rollback succeeded: {nic.dev} reads as before the run")
    else:
        problems = rollback.errors + [f"{k} was {a}, now {b}" for k, (a, b) in rollback.remaining.items()]
        if rollback.unverified:
            problems.append(f"cannot read it again to compare: {rollback.unverified}")
        undone = ", ".join(rollback.undone) or "nothing"
        parts.append(f"Rollback FAILED (written back: {undone}): {nic.dev} is not as before the run")
        parts.append("; ".join(problems))
    if earlier:
        parts.append(f"Configured before this NIC and kept: {', '.join(earlier)}")
    return ". ".join(parts)


def write_record(nic: Nic, change: Change, rolled_back: bool) -> dict:
    return {
        "nic": nic.dev,
        "setting": change.key,
        "before": change.before,
        "after": change.after,
        "command": change.command(),
        "rolled_back": rolled_back,
    }


# ---- reporting ------------------------------------------------------------------------------------


def state_text(nic: Nic, params: dict, changes: list[Change], after: bool) -> str:
    values = dict(nic.state)
    wanted = wanted_dscp_map(params)
    current = nic.dscp2prio
    values["dscp2prio"] = HIDDEN_MAP if current is None else map_text({d: current.get(d) for d in wanted})
    for change in changes:
        if after:
            values[change.key] = change.after if change.key != "dscp2prio" else map_text(wanted)
    return "".join(f"{key}: {values[key]}\n" for key in sorted(values))


# ---- concerns: what `--tags` selects --------------------------------------------------------------

# The concern tags of the role's NIC task; `persist` (the boot files) is handled by the module.
NIC_CONCERNS = ("pfc", "dscp", "ecn", "mtu")
PERSIST = "persist"
CONCERNS = (*NIC_CONCERNS, PERSIST)


def concern_of(key: str) -> str:
    """Which concern tag a setting belongs to: trust, the DSCP map and the ToS byte are DSCP marking."""
    if key in ("pfc", STORM_KEY):
        return "pfc"
    if key in ("trust", "dscp2prio") or key.startswith(("traffic_class/", "rdma_cm_tos/")):
        return "dscp"
    if key.startswith(("roce_np/", "roce_rp/")):
        return "ecn"
    if key == "mtu":
        return "mtu"
    raise ValueError(f"setting {key!r} belongs to no concern")


def selected_concerns(run_tags: Sequence[str], skip_tags: Sequence[str]) -> tuple[str, ...]:
    """The concerns a play run acts on: those named in --tags (every one when none is), minus --skip-tags."""
    named = [c for c in CONCERNS if c in run_tags]
    chosen = named or list(CONCERNS)
    return tuple(c for c in chosen if c not in skip_tags)


# ---- one run over every device --------------------------------------------------------------------


def converge(
    runner: Runner, params: dict, check_mode: bool = False, concerns: Sequence[str] = NIC_CONCERNS
) -> dict:
    """Read every device, plan what differs in the chosen concerns, write it (unless check_mode).

    The result is the module's: `changed`, per device `nics`, every write in `writes`, a per-NIC `diff`;
    after a failed write also `failed` and `msg` (and that NIC rolled back when rollback_on_failure).
    """
    check_params(params)
    devices = sorted(set(params["devices"])) or all_ethernet_devices()
    if not devices:
        raise NicError("no RDMA device given and none with an Ethernet port found in /sys/class/infiniband")
    nics = [read_nic(runner, dev, params) for dev in devices]
    result: dict = {"changed": False, "nics": {}, "writes": [], "diff": []}
    for nic in nics:
        changes = [c for c in plan(nic, params) if concern_of(c.key) in concerns]
        before = state_text(nic, params, changes, after=False)
        if changes and not check_mode:
            original = snapshot(nic)
            try:
                changes = apply(runner, nic, changes, params)
            except WriteFailed as exc:
                return failed_run(runner, result, original, exc, params)
            result["writes"] += [write_record(nic, c, rolled_back=False) for c in changes]
        result["changed"] |= bool(changes)
        result["nics"][nic.dev] = {
            "netdev": nic.netdev,
            "changed": [c.key for c in changes],
            "changes": {c.key: {"before": c.before, "after": c.after} for c in changes},
        }
        if changes:
            after = state_text(nic, params, changes, after=True)
            header = f"{nic.dev} ({nic.netdev})"
            result["diff"].append(
                {"before_header": header, "after_header": header, "before": before, "after": after}
            )
    return result


# ---- the boot file: the settings the role applied ---------------------------------------------------

CONFIG_FORMAT = "fabcheck-roce-nic/1"
_JSON_TYPES: dict[str, type] = {"list": list, "str": str, "int": int, "bool": bool, "dict": dict}


@dataclass(frozen=True)
class Setting:
    """One key of the settings record: its type (Ansible's names), list element type, whether null is
    allowed (the setting is then left as it is), and what it sets."""

    kind: str
    description: str
    elements: str | None = None
    nullable: bool = False

    def argument_spec(self) -> dict:
        """The sub-option of the module's `settings` argument."""
        spec: dict = {"type": self.kind, "required": not self.nullable}
        if self.elements:
            spec["elements"] = self.elements
        return spec


# Every key of the desired record (fabcheck.desired DesiredHost.roce_nic_args), declared once: the
# module's argument spec and the boot file reader follow from it.
SETTINGS: dict[str, Setting] = {
    "devices": Setting("list", "RDMA devices to configure; empty means every Ethernet RDMA device.", "str"),
    "trust": Setting("str", "Priority trust state, dscp or pcp (mlnx_qos --trust)."),
    "pfc_bitmap": Setting("list", "One 0/1 PFC flag per priority 0..7 (mlnx_qos --pfc).", "int"),
    "dscp_to_priority": Setting("dict", "DSCP (0..63, as a string) to priority (0..7), set with trust dscp."),
    "ecn_priority": Setting("int", "Priority whose ecn/roce_np and ecn/roce_rp enable files are written."),
    "cnp_dscp": Setting("int", "ecn/roce_np/cnp_dscp."),
    "cnp_priority": Setting("int", "ecn/roce_np/cnp_802p_prio."),
    "np_enable": Setting("bool", "ecn/roce_np/enable/<ecn_priority>."),
    "rp_enable": Setting("bool", "ecn/roce_rp/enable/<ecn_priority>."),
    "min_time_between_cnps": Setting(
        "int", "ecn/roce_np/min_time_between_cnps (us); null leaves it.", None, True
    ),
    "rp_params": Setting("dict", "ecn/roce_rp/<name> values to write."),
    "roce_tos": Setting("int", "tc/<port>/traffic_class and the RDMA-CM default ToS (0..255)."),
    "mtu": Setting("int", "Netdev MTU (ip link set dev IF mtu N)."),
    "pfc_storm_prevention_ms": Setting(
        "int", "ethtool tunable pfc-prevention-tout in ms (0 off); null leaves it.", None, True
    ),
}


def config_text(params: dict) -> str:
    """The boot file for these module parameters: its settings and nothing else, one stable spelling."""
    settings = {key: params[key] for key in SETTINGS}
    settings["devices"] = sorted(set(settings["devices"]))
    document = {"format": CONFIG_FORMAT, "settings": settings}
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def read_config(text: str, source: str) -> dict:
    """The settings of a boot file, typed and range-checked; NicError naming the file and key."""
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise NicError(f"{source}: not JSON ({exc})") from None
    if not isinstance(document, dict) or document.get("format") != CONFIG_FORMAT:
        raise NicError(f"{source}: format must be {CONFIG_FORMAT!r} (written by role roce_host)")
    settings = document.get("settings")
    if not isinstance(settings, dict) or set(settings) != set(SETTINGS):
        keys = sorted(settings) if isinstance(settings, dict) else settings
        raise NicError(f"{source}: settings must have exactly the keys {sorted(SETTINGS)}, not {keys}")
    for key, setting in SETTINGS.items():
        value = settings[key]
        if value is None and setting.nullable:
            continue
        wanted = _JSON_TYPES[setting.kind]
        if isinstance(value, bool) is not (wanted is bool) or not isinstance(value, wanted):
            raise NicError(f"{source}: settings.{key} = {value!r}: wrong type, must be {setting.kind}")
        if setting.elements:
            item = _JSON_TYPES[setting.elements]
            if not all(isinstance(v, item) and not isinstance(v, bool) for v in value):
                raise NicError(f"{source}: settings.{key} = {value!r}: every item must be {setting.elements}")
    try:
        check_params(settings)
    except NicError as exc:
        raise NicError(f"{source}: settings: {exc}") from None
    return settings


# ---- the applier: boot unit and udev rule ----------------------------------------------------------


def run_command(argv: list[str]) -> tuple[int, str, str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", check=False)
    except OSError as exc:
        return 127, "", f"{argv[0]}: {exc.strerror}"
    return done.returncode, done.stdout, done.stderr


def device_applies(device: str, settings: dict) -> bool:
    """Whether a device named by a udev event is one the settings configure."""
    if settings["devices"]:
        return device in settings["devices"]
    return device in all_ethernet_devices()


def apply_boot_settings(settings: dict, device: str | None, runner: Runner = run_command) -> list[str]:
    """Apply the settings to each configured device present (or only to `device`); one report line each.

    Raises NicError listing every device that failed; a configured device not present yet is reported
    and left to its udev add event.
    """
    if device is not None:
        check_name("RDMA device", device)
        if not device_applies(device, settings):
            return [f"{device}: not a configured RoCE NIC, nothing to do"]
    wanted = [device] if device is not None else sorted(set(settings["devices"])) or all_ethernet_devices()
    params = dict(settings, devices=[], rollback_on_failure=False)
    lines, failures = [], []
    for dev in wanted:
        if not os.path.isdir(os.path.join(SYS_IB, dev)):
            lines.append(f"{dev}: not present yet; its udev add event applies the settings")
            continue
        try:
            result = converge(runner, dict(params, devices=[dev]))
        except NicError as exc:
            failures.append(str(exc))
            continue
        if result.get("failed"):
            failures.append(result["msg"])
            continue
        changed = result["nics"][dev]["changed"]
        lines.append(f"{dev}: " + (f"set {', '.join(changed)}" if changed else "already as configured"))
    if failures:
        raise NicError("; ".join(failures))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="roce_nic_apply", description="Re-apply the RoCE NIC settings role roce_host wrote."
    )
    parser.add_argument("--config", required=True, help="the settings file the role wrote")
    parser.add_argument("--device", help="only this RDMA device (udev: %%k of its add event)")
    args = parser.parse_args(argv)
    try:
        with open(args.config, encoding="utf-8") as handle:
            settings = read_config(handle.read(), args.config)
        lines = apply_boot_settings(settings, args.device)
    except OSError as exc:
        sys.stderr.write(f"roce_nic_apply: cannot read {args.config}: {exc.strerror}\n")
        return 1
    except NicError as exc:
        sys.stderr.write(f"roce_nic_apply: {exc}\n")
        return 1
    # Written, not print()ed: as module_utils this file is held to Ansible's rule that modules do not
    # print; this is its boot-time command line, run by the systemd unit and the udev rule.
    sys.stdout.write("".join(f"roce_nic_apply: {line}\n" for line in lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
