"""What decides the GPUDirect RDMA mechanism a host can use (host.gpudirect, role gpu_rdma): the running
kernel's release (`uname -r`) and the flavour of the installed NVIDIA GPU kernel module
(`modinfo -F license nvidia`). Pure: text in, a typed value out, ParseError naming the source otherwise.

dma-buf needs Linux 5.12 or later and NVIDIA's open GPU kernel module; the legacy nvidia_peermem works
with either flavour ("Common Prerequisites" of
NVIDIA/cloud-native-docs:gpu-operator/gpu-operator-rdma.rst@52dcb7b8d956784344e241df476de17094a4574c).
The open module declares MODULE_LICENSE("Dual MIT/GPL") in
NVIDIA/open-gpu-kernel-modules:kernel-open/nvidia/nv.c@df1c9a3de2be4b130f4fc7680f7198193d8ac6ad;
NVIDIA's driver README names "NVIDIA" as the proprietary flavour's license:
https://us.download.nvidia.com/XFree86/Linux-x86_64/515.43.04/README/kernel_open.html. kmod's modinfo
prints only the value with -F, and "modinfo: ERROR: Module nvidia not found." (exit 1) when no such
module is installed: kmod-project/kmod:tools/modinfo.c@84fa569b2eb3230284168d59863330bafb07bc52.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fabcheck.errors import ParseError

# The GPU Operator's minimum kernel for dma-buf GPUDirect RDMA (gpu-operator-rdma.rst above).
DMABUF_MIN_KERNEL = (5, 12)
OPEN_MODULE_LICENSE = "Dual MIT/GPL"
PROPRIETARY_MODULE_LICENSE = "NVIDIA"
NVIDIA_MODULE = "nvidia"
_NOT_FOUND = f"Module {NVIDIA_MODULE} not found."
_RELEASE = re.compile(r"^(?P<major>[0-9]{1,4})\.(?P<minor>[0-9]{1,4})(?:[.\-+_~][\x21-\x7e]*)?$")
_LICENSE_CHARS = 100


@dataclass(frozen=True)
class KernelRelease:
    """`uname -r`: the whole release string and its major.minor."""

    text: str
    major: int
    minor: int

    @property
    def can_dmabuf(self) -> bool:
        return (self.major, self.minor) >= DMABUF_MIN_KERNEL


@dataclass(frozen=True)
class NvidiaModule:
    """The installed `nvidia` kernel module's license; None when modinfo found no such module."""

    license: str | None

    @property
    def installed(self) -> bool:
        return self.license is not None

    @property
    def is_open(self) -> bool:
        return self.license == OPEN_MODULE_LICENSE

    @property
    def flavour(self) -> str:
        """How a finding names it: the open or the proprietary module, or none installed."""
        if self.license is None:
            return "no nvidia kernel module installed"
        if self.is_open:
            return f"open GPU kernel module (license {OPEN_MODULE_LICENSE})"
        if self.license == PROPRIETARY_MODULE_LICENSE:
            return f"proprietary GPU kernel module (license {PROPRIETARY_MODULE_LICENSE})"
        return f"nvidia kernel module with license {self.license!r}"


def parse_kernel_release(text: str, source: str) -> KernelRelease:
    """`uname -r`: one line such as 5.15.0-102-generic or 3.10.0-1062.12.1.el7.x86_64."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) != 1:
        raise ParseError(f"expected one line with the kernel release, got {len(lines)}", source=source)
    match = _RELEASE.match(lines[0])
    if match is None:
        raise ParseError(f"not a kernel release: {lines[0][:80]!r}", source=source)
    return KernelRelease(lines[0], int(match["major"]), int(match["minor"]))


def parse_module_license(rc: int, stdout: str, stderr: str, source: str) -> NvidiaModule:
    """`modinfo -F license nvidia` read as an answer: the license line, or no module installed."""
    if rc != 0:
        if _NOT_FOUND in stderr:
            return NvidiaModule(None)
        detail = (stderr.strip() or stdout.strip() or f"exit {rc}").splitlines()[-1]
        raise ParseError(f"modinfo failed (exit {rc}: {detail[:200]})", source=source)
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if len(lines) != 1:
        # A module declares one MODULE_LICENSE; none printed means it declares none, two are not one answer.
        raise ParseError(f"expected one license line, got {len(lines)}", source=source)
    if len(lines[0]) > _LICENSE_CHARS or not lines[0].isprintable():
        raise ParseError(f"not a module license: {lines[0][:40]!r}...", source=source)
    return NvidiaModule(lines[0])
