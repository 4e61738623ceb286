"""Traffic control on `lo` for lab faults: a real rate limit (slow-link) or a black hole (down).

Every lab node has its own 127.x address, so one qdisc tree on `lo` can single out a node's traffic
without touching routes or the controller's reach to the other nodes. Only htb, tbf, fifo and u32 are
assumed from the kernel (no prio, netem or gact), so both faults are htb classes:

    lo root  htb (handle fab1:, no default class: unmatched traffic takes htb's unshaped direct path)
      class fab1:<slot+1>        rate SLOW_LINK_RATE                       (slow-link)
      class fab1:<0x1000+slot>   leaf qdisc `pfifo limit 0` drops all      (down)
      u32 filters, one pref per node and fault, match the node's address as source or destination

The tree exists only while a tc fault is active; `remove_tree` deletes it (only when it is ours).
"""

from __future__ import annotations

import shutil
import subprocess

from fabcheck_lab.state import LabError

DEVICE = "lo"
ROOT_HANDLE = "fab1:"
DROP_PREF_BASE = 100  # a black hole wins over a rate limit on the same node
SLOW_PREF_BASE = 1000
DROP_CLASS_BASE = 0x1000
SLOW_LINK_RATE = "200mbit"
QUANTUM = "100000"  # explicit: htb's rate/r2q guess is out of range for both very fast and very slow classes


def _tc(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    if shutil.which("tc") is None:
        raise LabError("`tc` (iproute2) is not installed; slow-link and switch down faults need it")
    result = subprocess.run(["tc", *args], capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise LabError(f"tc {' '.join(args)} failed: {result.stderr.strip() or result.stdout.strip()}")
    return result


def root_qdisc() -> str:
    """The first line of `tc qdisc show dev lo root` ('' when lo has no root qdisc)."""
    lines = _tc("qdisc", "show", "dev", DEVICE, "root").stdout.splitlines()
    return lines[0] if lines else ""


def tree_installed() -> bool:
    if shutil.which("tc") is None:
        return False  # without tc nobody can have installed it
    return root_qdisc().startswith(f"qdisc htb {ROOT_HANDLE} ")


def ensure_tree() -> None:
    if tree_installed():
        return
    current = root_qdisc()
    if current and not current.startswith(("qdisc noqueue", "qdisc pfifo_fast")):
        raise LabError(f"`lo` already has a root qdisc that is not the lab's: {current}")
    _tc("qdisc", "add", "dev", DEVICE, "root", "handle", ROOT_HANDLE, "htb")


def remove_tree() -> bool:
    """Delete the lab's qdisc tree if present; True when something was removed."""
    if not tree_installed():
        return False
    _tc("qdisc", "del", "dev", DEVICE, "root")
    return True


def _class_id(number: int) -> str:
    return f"{ROOT_HANDLE}{number:x}"


def _add_class(number: int, rate: str) -> None:
    _tc("class", "add", "dev", DEVICE, "parent", ROOT_HANDLE, "classid", _class_id(number), "htb",
        "rate", rate, "ceil", rate, "quantum", QUANTUM)  # fmt: skip


def _steer(pref: int, address: str, number: int) -> None:
    for direction in ("src", "dst"):
        _tc("filter", "add", "dev", DEVICE, "parent", ROOT_HANDLE, "protocol", "ip", "pref", str(pref),
            "u32", "match", "ip", direction, f"{address}/32", "flowid", _class_id(number))  # fmt: skip


def _unsteer(pref: int, number: int) -> None:
    if not tree_installed():
        return
    _tc("filter", "del", "dev", DEVICE, "parent", ROOT_HANDLE, "protocol", "ip", "pref", str(pref),
        check=False)  # fmt: skip
    _tc("class", "del", "dev", DEVICE, "classid", _class_id(number), check=False)


def add_slow_link(address: str, slot: int, rate: str = SLOW_LINK_RATE) -> None:
    """Rate-limit every packet from or to address (both directions share one rate)."""
    ensure_tree()
    _add_class(slot + 1, rate)
    _steer(SLOW_PREF_BASE + slot, address, slot + 1)


def remove_slow_link(slot: int) -> None:
    _unsteer(SLOW_PREF_BASE + slot, slot + 1)


def add_blackhole(address: str, slot: int) -> None:
    """Drop every packet from or to address: connections hang as across a dead link."""
    ensure_tree()
    number = DROP_CLASS_BASE + slot
    _add_class(number, "8bit")
    _tc("qdisc", "add", "dev", DEVICE, "parent", _class_id(number), "pfifo", "limit", "0")
    _steer(DROP_PREF_BASE + slot, address, number)


def remove_blackhole(slot: int) -> None:
    _unsteer(DROP_PREF_BASE + slot, DROP_CLASS_BASE + slot)
