"""The perftest command lines of one pair: port, size, GID index, GPUDirect buffer, NUMA pinning and a
time limit on the host itself. Pure: the runner only ships these argv lists over ssh."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fabcheck.desired.perftest import DesiredPerftest
from fabcheck.errors import ParseError
from fabcheck.pairs.rounds import Endpoint, Pair, Round
from fabcheck.parsers.gpudirect import OPEN_MODULE_LICENSE, parse_kernel_release

TEST = "ib_write_bw"
BASE_PORT = 18515  # perftest's default; each test a host serves in one round gets its own port
PORT_RETRY_STRIDE = 100  # a retry after a port collision moves every port of the test this far
PORT_RETRIES = 3
MESSAGE_BYTES = 1 << 20  # wire-bound: perftest's bandwidth plateau starts well below 1 MiB
ITERATIONS = 5000
DEFAULT_TIMEOUT_S = 30.0
NUMA_UNKNOWN = -1  # what sysfs numa_node shows when the firmware gives no node


@dataclass(frozen=True)
class HostSetup:
    """What the runner learnt from a host before its tests: whether numactl is there, and the NUMA
    node of each NIC (sysfs numa_node)."""

    numactl: bool
    numa_nodes: Mapping[str, int]
    # GPUDirect by dma-buf: no nvidia_peermem loaded, a kernel >= 5.12 and the open GPU kernel module.
    # perftest then registers the GPU buffer with --use_cuda_dmabuf (plain --use_cuda needs peermem):
    # `ib_write_bw --use_cuda=0 --use_cuda_dmabuf` in
    # NVIDIA/cloud-native-docs:gpu-operator/gpu-operator-rdma.rst@52dcb7b8d956784344e241df476de17094a4574c.
    cuda_dmabuf: bool = False

    def pinning(self, nic: str) -> tuple[str, ...]:
        """numactl prefix that keeps the process and its buffers on the NIC's NUMA node."""
        node = self.numa_nodes.get(nic, NUMA_UNKNOWN)
        if not self.numactl or node < 0:
            return ()
        return ("numactl", f"--cpunodebind={node}", f"--membind={node}")


@dataclass(frozen=True)
class PairCommand:
    pair: Pair
    port: int
    server: tuple[str, ...]
    client: tuple[str, ...]


def ports_of(round_: Round, attempt: int = 0) -> dict[Pair, int]:
    """A port per pair, distinct among the tests each server host runs in the round."""
    served: dict[str, int] = {}
    ports = {}
    for pair in round_:
        slot = served.get(pair.server.host, 0)
        served[pair.server.host] = slot + 1
        ports[pair] = BASE_PORT + slot + attempt * PORT_RETRY_STRIDE
    return ports


def pair_command(
    pair: Pair,
    port: int,
    server_address: str,
    desired: Mapping[str, DesiredPerftest],
    setup: Mapping[str, HostSetup],
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> PairCommand:
    """Server and client argv of one pair. The server outlives the client's limit a little, so a
    client that gives up never leaves a listener behind for the next round's port."""
    server = _side(pair.server, port, desired, setup)
    client = _side(pair.client, port, desired, setup)
    return PairCommand(
        pair,
        port,
        ("timeout", f"{timeout_s + 5:g}", *server),
        ("timeout", f"{timeout_s:g}", *client, server_address),
    )


def _side(
    end: Endpoint, port: int, desired: Mapping[str, DesiredPerftest], setup: Mapping[str, HostSetup]
) -> tuple[str, ...]:
    want = desired[end.host]
    argv = [TEST, "-d", end.nic, "-p", str(port), "-s", str(MESSAGE_BYTES), "-n", str(ITERATIONS)]
    argv += ["-F", "--report_gbits"]
    if want.gid_index is not None:
        argv += ["-x", str(want.gid_index)]
    gpu = want.cuda_device.get(end.nic)
    host = setup.get(end.host, HostSetup(False, {}))
    if gpu is not None:
        argv.append(f"--use_cuda={gpu}")
        if host.cuda_dmabuf:
            argv.append("--use_cuda_dmabuf")
    return (*host.pinning(end.nic), *argv)


# One round trip per host before its tests: numactl present, each NIC's NUMA node, and whether the GPU
# buffer goes through dma-buf (peermem not loaded, the kernel release, the GPU module's license). The NIC's
# PCI function holds numa_node; an InfiniBand class entry links to it as device/, and its netdev's
# device/ is the same function (the lab's mock sysfs has only the latter).
SETUP_SCRIPT = r"""
if command -v numactl >/dev/null 2>&1; then echo numactl yes; else echo numactl no; fi
for nic in "$@"; do
  node=$(cat "/sys/class/infiniband/$nic/device/numa_node" 2>/dev/null)
  if [ -z "$node" ]; then
    for net in /sys/class/infiniband/"$nic"/device/net/*; do
      node=$(cat "/sys/class/net/${net##*/}/device/numa_node" 2>/dev/null) && break
    done
  fi
  echo "nic $nic ${node:--1}"
done
if lsmod 2>/dev/null | grep -q '^nvidia_peermem '; then echo peermem yes; else echo peermem no; fi
echo "kernel $(uname -r 2>/dev/null)"
echo "gpu_module_license $(modinfo -F license nvidia 2>/dev/null | head -n 1)"
"""


def setup_command(nics: tuple[str, ...]) -> tuple[str, ...]:
    return ("sh", "-c", SETUP_SCRIPT, "fabcheck-perftest-setup", *nics)


def parse_setup(text: str) -> HostSetup:
    """The setup script's answer -> HostSetup; a line it did not print is ignored, a bad node is -1."""
    numactl = False
    nodes: dict[str, int] = {}
    said: dict[str, str] = {}
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["numactl"] and len(words) == 2:
            numactl = words[1] == "yes"
        elif words[:1] == ["nic"] and len(words) == 3:
            value = words[2]
            nodes[words[1]] = int(value) if value.lstrip("-").isdigit() else NUMA_UNKNOWN
        elif words[:1] in (["peermem"], ["kernel"], ["gpu_module_license"]):
            said[words[0]] = line.partition(" ")[2].strip()
    return HostSetup(numactl, nodes, _dmabuf_only(said))


def _dmabuf_only(said: Mapping[str, str]) -> bool:
    """GPUDirect by dma-buf and not by nvidia_peermem (the rule of host.gpudirect); unsure: False, and
    perftest asks for peermem as before."""
    if said.get("peermem") != "no" or said.get("gpu_module_license") != OPEN_MODULE_LICENSE:
        return False
    try:
        return parse_kernel_release(said.get("kernel", ""), "uname -r").can_dmabuf
    except ParseError:
        return False
