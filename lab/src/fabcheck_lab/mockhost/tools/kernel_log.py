"""Mock ``dmesg``: the node's kernel log since boot, as the ring buffer holds it.

A few boot lines in the kernel's own wording (the IOMMU default domain in passthrough, as `iommu=pt`
boots print it; the NVIDIA driver loading), then what happened since: the lines the node's
``kernel.log`` holds (the xid fault appends an NVRM Xid line there). util-linux dmesg with no option
prints the buffer with `[seconds.micros]` stamps; any option this mock does not know is refused as
dmesg refuses an unknown one.
"""

from __future__ import annotations

from .common import Node, ToolError, out

KERNEL_LOG = "kernel.log"  # in the node's state folder: lines logged after boot, oldest first
# The node's /proc/cmdline in its state folder (mockhost.layout.CMDLINE_FILE: the tools ship alone in
# their zip application and import nothing beside them; tests/lab/test_mock_gpu_health.py keeps the two
# names equal).
CMDLINE_FILE = "proc_cmdline"


def iommu_line(node: Node) -> str:
    """The IOMMU default domain as the node's kernel command line (its proc_cmdline) chose it: iommu=pt
    is passthrough; without it the kernel's default, translated (lazy flush: DMA-FQ)."""
    path = node.state / CMDLINE_FILE
    if path.is_file() and "iommu=pt" not in path.read_text().split():
        return "iommu: Default domain type: Translated"
    return "iommu: Default domain type: Passthrough (set via kernel command line)"


def boot_lines(node: Node) -> list[str]:
    topo = node.topology
    lines = [
        (0.0, "Linux version 5.15.0-105-generic (buildd@lcy02-amd64-007) (gcc 11.4.0) #115-Ubuntu SMP"),
        (0.276715, iommu_line(node)),
    ]
    if node.gpus():
        lines.append((5.0, "nvidia: loading out-of-tree module taints kernel."))
        module = f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {topo['driver_version']}  Release Build"
        lines.append((5.2, module))
    return [f"[{seconds:12.6f}] {text}" for seconds, text in lines]


def logged(node: Node) -> list[str]:
    path = node.state / KERNEL_LOG
    return path.read_text().splitlines() if path.is_file() else []


def dmesg(node: Node, args: list[str]) -> int:
    if args:
        word = args[0]
        if word.startswith("--"):
            said = f"unrecognized option '{word}'"
        elif word.startswith("-"):
            said = f"invalid option -- '{word[1:2]}'"
        else:
            said = "bad usage"
        raise ToolError(f"dmesg: {said}\nTry 'dmesg --help' for more information.\n", 1)
    out("".join(line + "\n" for line in boot_lines(node) + logged(node)))
    return 0
