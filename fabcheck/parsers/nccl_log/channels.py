"""One NCCL channel line: which two ranks it connects and over which transport.

Every NCCL release prints one INFO line per connection it sets up; the forms, from NVIDIA/nccl's
transport sources (tests/data/real/nccl/INDEX.tsv cites each):

* 2.4 (src/transport/*.cc@v2.4.8-1): ``Ring 00 : 3 -> 4 [send] via NET/IB/0/GDRDMA`` (NET: ranks
  alone), ``Ring 00 : 0[0] -> 1[1] via P2P/IPC`` (P2P: rank[cudaDev]), ``... via direct shared memory``.
* 2.5-2.6: ``Ring 00 : 155[3d000] -> 157[b2000] via P2P/IPC``: the brackets hold the GPU's PCI busId (hex).
* 2.7-2.18: ``Channel 01 : 2[c7000] -> 0[87000] [receive] via NET/IB/5/GDRDMA`` (busId), then
  ``Channel 00/0 : ...`` (channel/connection).
* 2.19+: ``Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read`` (nvmlDev), between the trays of one NVLink
  domain ``via P2P/MNNVL``, across domains ``[send] via NET/IB/0/GDRDMA``, ``via SHM/direct/direct``.

The sender prints a P2P or SHM line; both ends print a NET line, ``[send]`` and ``[receive]``, always
written sender -> receiver. A NET/Socket line is TCP on the data path; the ``NET/Socket : Using [0]eth0``
and ``Bootstrap : Using`` lines printed at start-up are not channels and never read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NET = "NET"  # a NIC: NET/<network>/<dev>[/GDRDMA]; NET/Socket is TCP
P2P = "P2P"  # GPU to GPU over NVLink or PCIe: P2P/CUMEM, P2P/IPC, P2P/direct pointer, P2P/MNNVL
SHM = "SHM"  # host shared memory between two GPUs of one host
TRANSPORTS = (NET, P2P, SHM)

# ` : ` then sender[dev] -> receiver[dev]: the bracket holds a device number or a hex busId (2.5-2.18),
# and is absent on 2.4's NET lines.
CHANNEL_LINE = re.compile(
    r"(?:Channel|Ring) (?P<channel>\d{1,4})(?:/\d{1,4})? ?: (?P<sender>\d{1,9})(?:\[[0-9a-fA-F]{1,16}\])?"
    r" -> (?P<receiver>\d{1,9})(?:\[[0-9a-fA-F]{1,16}\])?(?: \[(?P<direction>send|receive)\])?"
    r" via (?P<path>\S[^\n]{0,200}?)\s*$",
    re.ASCII,
)
# NET/<network>/<dev>[(<port>)][/GDRDMA][/Shared]: the network is what precedes /<dev>
_NET_NAME = re.compile(r"(.+?)/\d+(?:\(\d+\))?(?:/[A-Za-z]+)*$")
_SOCKET = re.compile(r"socket|tcp", re.IGNORECASE)


@dataclass(frozen=True)
class ChannelLine:
    """What one channel line says. ``rank`` printed it; ``peer`` is the rank on the other end."""

    channel: int
    sender: int
    receiver: int
    direction: str | None  # send / receive on NET lines; None on P2P and SHM lines (the sender's)
    transport: str  # NET, P2P or SHM
    path: str  # the text after "via": NET/IB/0/GDRDMA, P2P/MNNVL/read, SHM/direct/direct

    @property
    def rank(self) -> int:
        return self.receiver if self.direction == "receive" else self.sender

    @property
    def peer(self) -> int:
        return self.sender if self.direction == "receive" else self.receiver

    @property
    def network(self) -> str | None:
        """NET's network name (IB, Socket, a plugin's name); None for P2P and SHM."""
        if self.transport != NET:
            return None
        match = _NET_NAME.match(self.path[4:])
        return match.group(1) if match else self.path[4:]

    @property
    def tcp(self) -> bool:
        """NET over TCP: NCCL's Socket transport or a TCP plugin."""
        return self.transport == NET and _SOCKET.search(self.network or "") is not None


def read_channel(message: str) -> ChannelLine | None:
    """The channel line in `message` (the text after ``NCCL INFO``), or None."""
    match = CHANNEL_LINE.match(message)
    if match is None:
        return None
    path = match.group("path")
    transport = transport_of(path)
    if transport is None:
        return None
    return ChannelLine(
        channel=int(match.group("channel")),
        sender=int(match.group("sender")),
        receiver=int(match.group("receiver")),
        direction=match.group("direction"),
        transport=transport,
        path=path,
    )


def transport_of(path: str) -> str | None:
    """NET, P2P or SHM from the text after "via"; None for anything else (CollNet, unknown)."""
    head = path.split("/", 1)[0]
    if head in TRANSPORTS:
        return head
    if path.startswith("direct shared memory"):  # 2.4-2.6 SHM
        return SHM
    return None
