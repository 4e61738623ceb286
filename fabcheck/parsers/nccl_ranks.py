"""Per-rank facts of an NCCL_DEBUG=INFO log (NCCL_DEBUG_SUBSYS=INIT,NET), each with the line it rests on.

A rank is one (host, pid, cudaDev) of the line prefix ``host:pid:tid [dev] NCCL INFO ...``; its rank
number, nranks and nvmlDev come from its ``ncclCommInitRank ... rank R nranks N cudaDev D nvmlDev M``
line. NCCL prints some facts once per process (the network chosen, the ``NET/<net> : Using [0]dev:1/RoCE``
HCA list, ``NCCL_X set by environment to V``); every rank of that process shares them. Channel lines
belong to the rank that prints them: ``Channel 00/0 : 7[3] -> 0[0] [receive] via NET/IB/0/GDRDMA``; every
channel line is kept with its transport (P2P, SHM, NET: fabcheck.parsers.nccl_log.channels reads the 2.4
``Ring`` and the 2.5-2.18 busId forms too), NET ones also as NetChannel with their device and GDR.
The first communicator a process starts is the one whose rank number is read (nccl-tests starts one).

Where the summary parser (fabcheck.parsers.nccl_log) answers "which network did the job use", this one keeps
every rank apart, so a verdict can name the one rank, GPU and host that took another path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypedDict

from fabcheck.parsers.nccl_log import clean_line
from fabcheck.parsers.nccl_log.channels import NET, ChannelLine, read_channel

_PREFIX = re.compile(r"([^\s\[\]:]{1,255}):(\d{1,10}):(\d{1,10}) \[(\d{1,6})\]\s*(.*)$", re.ASCII)
_INFO = re.compile(r"^NCCL INFO (.*)$")
_WARN = re.compile(r"^(?:\S+ )?NCCL WARN (.*)$")
_INIT = re.compile(
    r"ncclCommInitRank comm \S+ rank (\d+) nranks (\d+) cudaDev (\d+)(?: nvmlDev (\d+))?.* - Init (\w+)"
)
_COMM = re.compile(r"^comm \S+ rank (\d+) nRanks (\d+) nNodes (\d+)(?:.* MNNVL (\d+))?")
_USING_NETWORK = re.compile(r"^Using network (.+?)\s*$")
_DEVICE_LIST = re.compile(r"^NET/([^:]+?)\s*: Using (\[\d+\].*)$")
_HCA_ENTRY = re.compile(r"\[(\d+)\]([A-Za-z0-9_.\-]{1,64}):(\d+)/(IB|RoCE)\b")
_SOCKET_ENTRY = re.compile(r"\[(\d+)\]([^:\s]{1,64}):")
_ENV = re.compile(r"^(NCCL_[A-Z0-9_]+) set by environment to (.*?)\.?\s*$")
_NET_TAIL = re.compile(r"^(?P<net>.+?)/(?P<dev>\d+)(?:\(\d+\))?(?P<flags>(?:/[A-Za-z]+)*)\s*$")


@dataclass(frozen=True)
class Quote:
    """One log line as printed (launcher tag removed) and its 1-based number in the log read."""

    line: int
    text: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.text}"


@dataclass(frozen=True)
class NetDevice:
    index: int
    name: str
    port: int | None
    link_layer: str | None  # IB or RoCE; None for Socket devices


@dataclass(frozen=True)
class NetChannel:
    channel: int
    peer: int  # the rank on the other end
    direction: str  # send or receive
    network: str  # as in via NET/<network>/<dev>
    device: int  # index into the process's device list
    gdr: bool
    quote: Quote


@dataclass(frozen=True)
class RankChannel:
    """One channel line of the rank (any transport) and where it stands in the log."""

    line: ChannelLine
    quote: Quote


@dataclass(frozen=True)
class RankFacts:
    host: str
    pid: int
    cuda_dev: int
    rank: int | None = None
    nranks: int | None = None
    nnodes: int | None = None
    # `comm ... MNNVL 1|0` (NCCL 2.20+, src/init.cc): whether NCCL enabled multi-node NVLink, and its line
    mnnvl: tuple[bool, Quote] | None = None
    nvml_dev: int | None = None
    init_complete: bool = False
    init_quote: Quote | None = None
    network: str | None = None
    network_quote: Quote | None = None
    devices: tuple[NetDevice, ...] = ()
    devices_quote: Quote | None = None
    env: dict[str, tuple[str, Quote]] = field(default_factory=dict)
    net_channels: tuple[NetChannel, ...] = ()
    channels: tuple[RankChannel, ...] = ()  # every channel line, NET, P2P and SHM, in log order
    warnings: tuple[Quote, ...] = ()

    @property
    def gpu(self) -> int:
        """The GPU index nvidia-smi shows (nvmlDev), else the CUDA device number."""
        return self.cuda_dev if self.nvml_dev is None else self.nvml_dev

    def device(self, index: int) -> NetDevice | None:
        return next((d for d in self.devices if d.index == index), None)


@dataclass
class _Process:
    network: tuple[str, Quote] | None = None
    devices: tuple[tuple[NetDevice, ...], Quote] | None = None
    env: dict[str, tuple[str, Quote]] = field(default_factory=dict)
    warnings: list[Quote] = field(default_factory=list)


class _RankFields(TypedDict, total=False):
    """The RankFacts fields one rank's init lines give, as they are read."""

    rank: int
    nranks: int
    nnodes: int
    mnnvl: tuple[bool, Quote]
    nvml_dev: int
    init_complete: bool
    init_quote: Quote


@dataclass
class _Rank:
    facts: _RankFields = field(default_factory=_RankFields)
    channels: list[NetChannel] = field(default_factory=list)
    all_channels: list[RankChannel] = field(default_factory=list)
    started: bool = False


def parse_nccl_ranks(lines: Iterable[str] | str) -> tuple[RankFacts, ...]:
    """Every rank the log shows, sorted by rank number (ranks whose init line is missing last)."""
    text_lines = lines.splitlines() if isinstance(lines, str) else lines
    processes: dict[tuple[str, int], _Process] = {}
    ranks: dict[tuple[str, int, int], _Rank] = {}
    for number, raw in enumerate(text_lines, 1):
        cleaned = clean_line(raw)
        prefix = _PREFIX.search(cleaned)
        if prefix is None:
            continue
        host, pid, dev, message = prefix.group(1), int(prefix.group(2)), int(prefix.group(4)), prefix.group(5)
        quote = Quote(number, cleaned[prefix.start() :].strip())
        process = processes.setdefault((host, pid), _Process())
        rank = ranks.setdefault((host, pid, dev), _Rank())
        info = _INFO.match(message)
        if info is not None:
            _read_info(info.group(1), quote, process, rank)
        elif (warn := _WARN.match(message)) is not None and warn.group(1):
            process.warnings.append(quote)
    numbered = {key[:2] for key, rank in ranks.items() if "rank" in rank.facts}
    # A process's lines printed under a device with no rank of its own (its main thread) are not a rank.
    kept = {key: rank for key, rank in ranks.items() if "rank" in rank.facts or key[:2] not in numbered}
    facts = [_freeze(key, rank, processes[key[:2]]) for key, rank in kept.items()]
    return tuple(sorted(facts, key=lambda r: (r.rank is None, r.rank or 0, r.host, r.pid, r.cuda_dev)))


def _read_info(message: str, quote: Quote, process: _Process, rank: _Rank) -> None:
    if (init := _INIT.search(message)) is not None:
        _read_init(init, quote, rank)
    elif (comm := _COMM.match(message)) is not None:
        rank.facts.setdefault("nnodes", int(comm.group(3)))
        if comm.group(4) is not None:
            rank.facts.setdefault("mnnvl", (comm.group(4) != "0", quote))
    elif (network := _USING_NETWORK.match(message)) is not None:
        process.network = process.network or (network.group(1), quote)
    elif (listed := _DEVICE_LIST.match(message)) is not None:
        if process.devices is None:
            process.devices = (_devices(listed.group(1), listed.group(2)), quote)
    elif (env := _ENV.match(message)) is not None:
        process.env.setdefault(env.group(1), (env.group(2).strip(), quote))
    elif (channel := read_channel(message)) is not None:
        # NCCL 2.22+ connects lazily: channel lines may come after Init COMPLETE, so all are read.
        rank.all_channels.append(RankChannel(channel, quote))
        found = _net_channel(channel, quote) if channel.transport == NET else None
        if found is not None:
            rank.channels.append(found)


def _read_init(init: re.Match[str], quote: Quote, rank: _Rank) -> None:
    if rank.started and rank.facts.get("rank") != int(init.group(1)):
        return  # a second communicator of the same process: only the first is read
    rank.started = True
    rank.facts.update({"rank": int(init.group(1)), "nranks": int(init.group(2))})
    if init.group(4) is not None:
        rank.facts["nvml_dev"] = int(init.group(4))
    if init.group(5) == "COMPLETE":
        rank.facts.update({"init_complete": True, "init_quote": quote})
    else:
        rank.facts.setdefault("init_quote", quote)


def _devices(network: str, listing: str) -> tuple[NetDevice, ...]:
    hcas = _HCA_ENTRY.findall(listing)
    if hcas:
        return tuple(NetDevice(int(i), name, int(port), layer) for i, name, port, layer in hcas)
    return tuple(NetDevice(int(i), name, None, None) for i, name in _SOCKET_ENTRY.findall(listing))


def _net_channel(channel: ChannelLine, quote: Quote) -> NetChannel | None:
    tail = _NET_TAIL.match(channel.path[4:])
    if tail is None:
        return None
    flags = tail.group("flags").split("/")
    return NetChannel(
        channel=channel.channel,
        peer=channel.peer,
        direction=channel.direction or "send",
        network=tail.group("net"),
        device=int(tail.group("dev")),
        gdr="GDRDMA" in flags,
        quote=quote,
    )


def _freeze(key: tuple[str, int, int], rank: _Rank, process: _Process) -> RankFacts:
    host, pid, dev = key
    network = process.network
    devices = process.devices
    return RankFacts(
        host=host,
        pid=pid,
        cuda_dev=dev,
        network=network[0] if network else None,
        network_quote=network[1] if network else None,
        devices=devices[0] if devices else (),
        devices_quote=devices[1] if devices else None,
        env=dict(process.env),
        net_channels=tuple(rank.channels),
        channels=tuple(rank.all_channels),
        warnings=tuple(process.warnings),
        **rank.facts,
    )
