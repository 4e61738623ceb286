"""The perftest command lines of one pair: port, size, GID index, GPUDirect buffer, NUMA pinning and a
time limit on the host itself. Pure: the runner only ships these argv lists over ssh."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fabcheck.desired.perftest import DesiredPerftest
from fabcheck.pairs.rounds import Endpoint, Pair, Round

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
    if gpu is not None:
        argv.append(f"--use_cuda={gpu}")
    host = setup.get(end.host, HostSetup(False, {}))
    return (*host.pinning(end.nic), *argv)


# One round trip per host before its tests: numactl present, and each NIC's NUMA node. The NIC's
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
"""


def setup_command(nics: tuple[str, ...]) -> tuple[str, ...]:
    return ("sh", "-c", SETUP_SCRIPT, "fabcheck-perftest-setup", *nics)


def parse_setup(text: str) -> HostSetup:
    """The setup script's answer -> HostSetup; a line it did not print is ignored, a bad node is -1."""
    numactl = False
    nodes: dict[str, int] = {}
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["numactl"] and len(words) == 2:
            numactl = words[1] == "yes"
        elif words[:1] == ["nic"] and len(words) == 3:
            value = words[2]
            nodes[words[1]] = int(value) if value.lstrip("-").isdigit() else NUMA_UNKNOWN
    return HostSetup(numactl, nodes)
