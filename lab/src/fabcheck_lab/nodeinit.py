"""PID 1 of one lab node: build the node's root file system, pivot into it, exec sshd.

Runs inside ``unshare --mount --uts --pid --fork --kill-child`` with the system interpreter
(``/usr/bin/python3 -I -S``), so it must use the standard library only and start fast. Mounts are made
with direct syscalls: one process per node instead of a dozen ``mount`` executions.

Usage: nodeinit.py NODE_ROOT HOSTNAME BIN_DIR STATE_MOUNT
"""

from __future__ import annotations

import ctypes
import os
import sys

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MNT_DETACH = 0x2
PIVOT_ROOT_SYSCALL = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
SSHD = "/usr/sbin/sshd"
# Attributes only the kernel writes (the link's trained speed, the RDMA port's rate): a write fails on
# hardware (sysfs gives them no store method), so they are read-only mounts in the node. The mock tools
# that play the kernel (`ethtool -s IF speed N` retrains the link) write them through KERNEL_SYSCLASS,
# the node's sysfs tree without those mounts (lab/src/fabcheck_lab/mockhost/tools/common.py Node.write_sys).
KERNEL_ONLY_ATTRIBUTES = frozenset({"speed", "rate"})
KERNEL_SYSCLASS = "/run/fabcheck-lab/sysclass"
# In the node's state folder (mockhost/layout.py PCI_DEVICES_DIR, CMDLINE_FILE): the PCI functions' AER
# counters, bound read-only over /sys/bus/pci/devices, and the kernel command line, over /proc/cmdline.
PCI_DEVICES_DIR = "sys_bus_pci_devices"
CMDLINE_FILE = "proc_cmdline"

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(
        _libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def set_hostname(name: str) -> None:
    """sethostname(2) directly: importing socket for it would cost more than the rest of this script."""
    encoded = name.encode()
    _check(_libc.sethostname(encoded, len(encoded)), "sethostname")


def bind(source: str, target: str, *, read_only: bool = False, recursive: bool = False) -> None:
    mount(source, target, None, MS_BIND | (MS_REC if recursive else 0))
    if read_only:
        # A bind mount only becomes read-only through a second, remounting call.
        mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY)


def pivot_into(new_root: str) -> None:
    """Make new_root the root and drop the old one (pivot onto "." keeps the overlay clean of a stash dir)."""
    number = PIVOT_ROOT_SYSCALL.get(os.uname().machine)
    if number is None:
        raise OSError(0, f"pivot_root: unsupported architecture {os.uname().machine}")
    os.chdir(new_root)
    _check(_libc.syscall(ctypes.c_long(number), b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", MNT_DETACH), "umount old root")
    os.chdir("/")


def make_sysfs_strict(top: str) -> None:
    """Bind every attribute file onto itself, then make the directory tree read-only.

    Real sysfs lets a writer change an existing attribute but never create, rename or replace a file;
    without this, Ansible's copy/template (temp file + rename) would succeed here and fail on hardware.
    A kernel-only attribute is not writable at all.
    """
    for directory, _dirs, files in os.walk(top):
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                bind(path, path, read_only=name in KERNEL_ONLY_ATTRIBUTES)
    mount(None, top, None, MS_REMOUNT | MS_BIND | MS_RDONLY)


def make_kernel_only_read_only(top: str) -> None:
    """The kernel-only attributes under `top` read-only, the rest of the tree as it is (the RDMA tree
    stays writable: host faults delete and recreate it, and a recreated attribute is writable again)."""
    for directory, _dirs, files in os.walk(top):
        for name in files:
            path = os.path.join(directory, name)
            if name in KERNEL_ONLY_ATTRIBUTES and not os.path.islink(path):
                bind(path, path, read_only=True)


def build_root(node_root: str, bin_dir: str, state_mount: str) -> str:
    merged = os.path.join(node_root, "merged")
    layers = f"lowerdir=/,upperdir={node_root}/upper,workdir={node_root}/work"
    mount("fabcheck-lab-root", merged, "overlay", 0, layers)

    bind("/dev", f"{merged}/dev", recursive=True)
    # Own /dev/shm: the controller's lab run dir (with its private key) lives in the real one.
    mount("fabcheck-lab-shm", f"{merged}/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    mount("proc", f"{merged}/proc", "proc", MS_NOSUID | MS_NODEV)
    # /proc/sys is the controller's: a role must not be able to retune it.
    bind(f"{merged}/proc/sys", f"{merged}/proc/sys", read_only=True)
    bind("/sys", f"{merged}/sys", recursive=True)
    bind(f"{node_root}/sys_class", f"{merged}/sys/class")
    # Only net/ is strict: the mock hosts' faults may delete and recreate files elsewhere in the tree
    # (no-rdma empties infiniband/), and a recreated file would sit on a read-only mount.
    if os.path.isdir(f"{node_root}/sys_class/net"):
        bind(f"{node_root}/sys_class/net", f"{merged}/sys/class/net")
        make_sysfs_strict(f"{merged}/sys/class/net")
    if os.path.isdir(f"{node_root}/sys_class/infiniband"):
        make_kernel_only_read_only(f"{merged}/sys/class/infiniband")

    bind_node_pcie(node_root, merged)

    bind(f"{node_root}/home", f"{merged}/root")
    state_target = merged + state_mount
    os.makedirs(state_target, exist_ok=True)
    bind(f"{node_root}/state", state_target)
    bind(bin_dir, f"{merged}/usr/local/bin", read_only=True)
    for scratch in ("tmp", "run"):
        mount(f"fabcheck-lab-{scratch}", f"{merged}/{scratch}", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    os.chmod(f"{merged}/run", 0o755)
    # The kernel's own view of the node's sysfs: the tree without the node's strict mounts.
    os.makedirs(merged + KERNEL_SYSCLASS, 0o700)
    bind(f"{node_root}/sys_class", merged + KERNEL_SYSCLASS)
    os.mkdir(f"{merged}/run/sshd", 0o755)  # sshd's privilege-separation directory
    return merged


def bind_node_pcie(node_root: str, merged: str) -> None:
    """The node's own PCI devices (the controller's stay hidden) and kernel command line, read-only as the
    kernel's are. A bind of a file over a file of the node's fresh proc mount masks that one file only."""
    devices, cmdline = f"{node_root}/state/{PCI_DEVICES_DIR}", f"{node_root}/state/{CMDLINE_FILE}"
    if os.path.isdir(devices) and os.path.isdir(f"{merged}/sys/bus/pci/devices"):
        bind(devices, f"{merged}/sys/bus/pci/devices", read_only=True)
    if os.path.isfile(cmdline):
        bind(cmdline, f"{merged}/proc/cmdline", read_only=True)


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    node_root, hostname, bin_dir, state_mount = argv[1:]
    try:
        set_hostname(hostname)
        pivot_into(build_root(node_root, bin_dir, state_mount))
        os.execv(SSHD, [SSHD, "-D", "-e", "-f", "/etc/ssh/sshd_config"])
    except OSError as err:
        print(f"fabcheck lab node {hostname}: {err}", file=sys.stderr)
        return 1
    return 0  # not reached: execv replaces this process


if __name__ == "__main__":
    sys.exit(main(sys.argv))
