"""Node state as the mock tools see it: JSON state files plus the mock /sys/class tree.

Runs inside a lab node under the system Python (stdlib only, never imports fabcheck). Every value a
role can change through sysfs is read from the file on each call, so a plain
``echo 106 > .../traffic_class`` is seen by the next tool call. The one exception is the lab's tool
server, a long-lived process: it keeps the texts it read in a SysfsCache and serves one again only
while a stat proves the file unchanged since.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STATE_ENV = "FABCHECK_MOCK_STATE"
SYSCLASS_ENV = "FABCHECK_MOCK_SYSCLASS"
ETC_ENV = "FABCHECK_MOCK_ETC"
DEFAULT_STATE = "/var/lib/fabcheck-mock"
DEFAULT_SYSCLASS = "/sys/class"
DEFAULT_ETC = "/etc"
KERNEL_SYSCLASS = "/run/fabcheck-lab/sysclass"  # a lab node's sysfs as the kernel writes it

# RoCE MTU = largest IB MTU that fits in the netdev MTU minus the RoCEv2 headers (GRH, UDP, BTH,
# extended headers and ICRC), as the kernel's iboe_get_mtu() computes it.
ROCE_HEADER_BYTES = 96
IB_MTUS = ((4096, 5), (2048, 4), (1024, 3), (512, 2), (256, 1))


class ToolError(Exception):
    """A failure the real tool reports with a message and an exit code."""

    def __init__(self, message: str, code: int = 1, *, stdout: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.stdout = stdout


class Delegate(Exception):
    """Raised under the tool server: this call must run as its own process in the node to behave exactly
    as it does there (the client then runs the interpreter path). Only raised before anything is written."""


def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_attribute(path: str) -> str | None:
    """The stripped text of one sysfs attribute; None when there is no such file."""
    # A plain string path: `ibv_devinfo -v` reads ~170 attributes, and pathlib doubles their cost.
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


# How far a file's ctime may lag behind the clock: a jiffy for the kernel's coarse timestamps, up to a
# second on filesystems with second timestamps (ext4 with small inodes); twice that, to be sure.
SETTLE_NS = 2_000_000_000
FileKey = tuple[int, int, int, int, int]


class SysfsCache:
    """Attribute texts of a long-lived reader, each served again only while the file is provably unchanged.

    A stat costs about a sixth of open + read + close, and `ibv_devinfo -v` reads ~170 attributes. A
    cached text is keyed by its file's (device, inode, size, mtime, ctime) from a stat taken before the
    read. Every write to a file, and every rename onto its path, gives that path a new inode or a new
    ctime, and no call can set a ctime back. A ctime can lag the clock by the filesystem's granularity,
    so a text is kept only when its file's ctime is settle_ns older than the clock was before that stat:
    then any later write carries a later ctime than the key, and the next stat sees it. A file changed
    more recently than that is simply read again on every call until it has settled.
    """

    def __init__(self, settle_ns: int = SETTLE_NS, clock: Callable[[], int] = time.time_ns) -> None:
        self.settle_ns = settle_ns
        self.clock = clock
        self.entries: dict[str, tuple[FileKey, str]] = {}

    def read(self, path: str) -> str | None:
        began = self.clock()
        try:
            info = os.stat(path)
        except OSError:
            self.entries.pop(path, None)
            return read_attribute(path)  # a missing file reads None, any other error is raised as before
        if not stat.S_ISREG(info.st_mode):
            return read_attribute(path)
        key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        entry = self.entries.get(path)
        if entry is not None and entry[0] == key:
            return entry[1]
        text = read_attribute(path)
        if text is not None and began - info.st_ctime_ns >= self.settle_ns:
            self.entries[path] = (key, text)
        else:
            self.entries.pop(path, None)
        return text


class Node:
    """One mock node: its state folder, its /sys/class tree and its /etc."""

    def __init__(
        self,
        state: Path,
        sys_class: Path,
        etc: Path,
        *,
        served: bool = False,
        pid: int | None = None,
        sysfs_cache: SysfsCache | None = None,
    ) -> None:
        self.state = state
        self.sys_class = sys_class
        self.etc = etc
        self.sysfs_cache = sysfs_cache  # the tool server's, kept across calls; None: read every file
        self.served = served  # run by the tool server on the controller, for a client in the node
        self.pid = pid  # the calling process's pid in the node (the server's own pid means nothing there)
        self.wrote = False  # state or sysfs changed: from here on the call can no longer be delegated
        self._info: dict[str, Any] | None = None
        self._topology: dict[str, Any] | None = None

    @classmethod
    def from_env(cls) -> Node:
        return cls(
            Path(os.environ.get(STATE_ENV, DEFAULT_STATE)),
            Path(os.environ.get(SYSCLASS_ENV, DEFAULT_SYSCLASS)),
            Path(os.environ.get(ETC_ENV, DEFAULT_ETC)),
        )

    # --- JSON state -------------------------------------------------------------------------
    def load(self, name: str, default: Any = None) -> Any:
        path = self.state / name
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            return default

    def save(self, name: str, data: Any) -> None:
        self.wrote = True
        write_atomic(self.state / name, json.dumps(data, indent=1, sort_keys=True) + "\n")

    @property
    def info(self) -> dict[str, Any]:
        if self._info is None:
            self._info = self.load("node.json")
            if self._info is None:
                raise ToolError(f"mock node state missing: {self.state / 'node.json'}", 1)
        return self._info

    @property
    def topology(self) -> dict[str, Any]:
        if self._topology is None:
            self._topology = self.load("topology.json", {"gpus": [], "nics": []})
        return self._topology

    @property
    def hostname(self) -> str:
        return str(self.info["name"])

    @property
    def address(self) -> str:
        return str(self.info["address"])

    # --- sysfs ------------------------------------------------------------------------------
    def read_sys(self, rel: str) -> str | None:
        path = f"{self.sys_class}/{rel}"
        return read_attribute(path) if self.sysfs_cache is None else self.sysfs_cache.read(path)

    def read_sys_int(self, rel: str, default: int = 0) -> int:
        text = self.read_sys(rel)
        try:
            return int(text.split()[-1].split("=")[-1]) if text else default
        except ValueError:
            return default

    def write_sys(self, rel: str, value: str) -> None:
        path = self.sys_class / rel
        if self.served and not path.is_file():
            # In the node a missing attribute fails the way the strict sysfs mount makes it fail; on the
            # controller the same write would create a file, so the node itself must run this call.
            raise Delegate
        self.wrote = True
        try:
            path.write_text(value + "\n")
        except OSError as err:
            # A kernel-only attribute (speed, rate) is read-only in the node; the tool playing the kernel
            # writes it through the node's kernel view (lab/src/fabcheck_lab/nodeinit.py KERNEL_SYSCLASS).
            kernel = Path(KERNEL_SYSCLASS) / rel
            if self.served or err.errno != errno.EROFS or not kernel.is_file():
                raise
            kernel.write_text(value + "\n")

    def process_id(self) -> int:
        """The pid the tool reports as its own (tools such as ibstat print it in their messages)."""
        return self.pid if self.pid is not None else os.getpid()

    # --- hardware views ---------------------------------------------------------------------
    def gpus(self) -> list[dict[str, Any]]:
        return list(self.topology.get("gpus", []))

    def all_nics(self) -> list[dict[str, Any]]:
        return list(self.topology.get("nics", []))

    def rdma_nics(self) -> list[dict[str, Any]]:
        """NICs whose RDMA device is present (the no-rdma fault empties /sys/class/infiniband)."""
        present = [n for n in self.all_nics() if (self.sys_class / "infiniband" / n["name"]).is_dir()]
        return sorted(present, key=lambda n: n["name"])

    def nic_by_name(self, name: str) -> dict[str, Any] | None:
        return next((n for n in self.rdma_nics() if n["name"] == name), None)

    def nic_by_netdev(self, netdev: str) -> dict[str, Any] | None:
        return next((n for n in self.all_nics() if n["netdev"] == netdev), None)

    def netdevs(self) -> list[str]:
        net = self.sys_class / "net"
        return sorted(p.name for p in net.iterdir() if p.is_dir()) if net.is_dir() else []

    def netdev_mtu(self, netdev: str) -> int:
        return self.read_sys_int(f"net/{netdev}/mtu", 1500)

    def port_dir(self, nic: dict[str, Any]) -> str:
        return f"infiniband/{nic['name']}/ports/1"

    def port_value(self, nic: dict[str, Any], attr: str) -> str:
        return self.read_sys(f"{self.port_dir(nic)}/{attr}") or ""

    def link_layer(self, nic: dict[str, Any]) -> str:
        return self.port_value(nic, "link_layer") or nic["link_layer"]

    def active_mtu(self, nic: dict[str, Any]) -> tuple[int, int]:
        """(bytes, enum) of the port's active MTU: RoCE follows the netdev MTU, IB is fixed."""
        if self.link_layer(nic) != "Ethernet":
            return IB_MTUS[0]
        room = self.netdev_mtu(nic["netdev"]) - ROCE_HEADER_BYTES
        return next(((size, enum) for size, enum in IB_MTUS if size <= room), IB_MTUS[-1])

    def traffic_class(self, nic: dict[str, Any]) -> int:
        """Default RoCE TClass written to tc/1/traffic_class (reads back 'Global tclass=N')."""
        return self.read_sys_int(f"infiniband/{nic['name']}/tc/1/traffic_class", 0)

    def peermem_loaded(self) -> bool:
        return bool(self.load("modules.json", {}).get("nvidia_peermem", False))

    def dmabuf_ready(self) -> bool:
        """dma-buf GPUDirect: the open GPU kernel module (the dmabuf-host variant) loaded on a kernel
        >= 5.12; the node's kernel is the machine's own."""
        release = re.match(r"([0-9]+)\.([0-9]+)", os.uname().release)
        kernel = (int(release[1]), int(release[2])) if release else (0, 0)
        modules = self.load("modules.json", {})
        flavour = self.load("gpu_module.json", {}).get("flavour", "proprietary")
        return bool(modules.get("nvidia")) and flavour == "open" and kernel >= (5, 12)

    def gdr_ready(self) -> bool:
        """NCCL's GPUDirect RDMA: nvidia_peermem loaded, or dma-buf."""
        return self.peermem_loaded() or self.dmabuf_ready()


def out(text: str) -> None:
    sys.stdout.write(text)


def err(text: str) -> None:
    sys.stderr.write(text)


def getopt_message(prog: str, exc: Exception) -> str:
    """glibc getopt's wording for a bad option, from Python's getopt error."""
    opt = str(getattr(exc, "opt", "") or "")
    text = str(exc)
    if "requires argument" in text:
        return (
            f"{prog}: option requires an argument -- '{opt}'"
            if len(opt) == 1
            else f"{prog}: option '--{opt}' requires an argument"
        )
    if len(opt) > 1:
        return f"{prog}: unrecognized option '--{opt}'"
    return f"{prog}: invalid option -- '{opt}'"
