"""What the NCCL log has shown so far, for the whole log and per rank, and the summary it makes."""

from __future__ import annotations

import re

from fabcheck.parsers.nccl_log.records import MAX_RANKS, NcclError, NcclLogSummary, RankNet

MAX_NAME_CHARS = 200  # network and HCA names longer than this are not names
_MAX_HCAS = 4096
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)", re.ASCII)
_LISTED_DEVICE = re.compile(r"\[\d+\]\S", re.ASCII)
_HCA_ENTRY = re.compile(r"\]\s*([A-Za-z0-9_.\-]{1,64}):\d+/(IB|RoCE)\b", re.ASCII)
_GDR_LINE = re.compile(r"GPU Direct RDMA (?:\([^)]{1,40}\) )?(enabled|disabled)", re.IGNORECASE)
SOCKET_NAME = re.compile(r"socket", re.IGNORECASE)
RDMA_NAME = re.compile(r"IB|RDMA|RoCE|verbs", re.ASCII)
_OFI_NAME = re.compile(r"Libfabric|OFI", re.IGNORECASE)


def _rdma_from_name(name: str, ofi_provider: str | None) -> bool | None:
    """Whether a NET plugin name means RDMA (IB verbs) or TCP sockets; None when unknown."""
    if SOCKET_NAME.search(name):
        return False
    if RDMA_NAME.search(name):
        return True
    if _OFI_NAME.search(name) and ofi_provider:
        provider = ofi_provider.lower()
        if "efa" in provider or "verbs" in provider or "cxi" in provider:
            return True
        if "tcp" in provider or "sockets" in provider:
            return False
    return None


class _RankState:
    __slots__ = ("channel_network", "gdr_off", "gdr_on", "receive_gdr_off", "using_network")

    def __init__(self) -> None:
        self.using_network: str | None = None
        self.channel_network: str | None = None
        self.gdr_on = False
        self.gdr_off = False
        self.receive_gdr_off = False

    def rank_net(self, host: str, rank: int) -> RankNet:
        # A receive channel without GDRDMA means host-staged traffic for that rank (e.g. a far NIC),
        # even when other channels use GDR. Send channels may legitimately lack it (GDR read off).
        if self.receive_gdr_off:
            gdr: bool | None = False
        else:
            gdr = True if self.gdr_on else (False if self.gdr_off else None)
        return RankNet(host, rank, self.using_network or self.channel_network, gdr)


class Facts:
    """What the log has shown so far. Every note is idempotent, so repeated lines may be skipped."""

    def __init__(self) -> None:
        self.seen_nccl = False
        self.version: str | None = None
        self.reported_version: str | None = None
        self.using_network: str | None = None
        self.channel_network: str | None = None
        self.device_network: str | None = None
        # 'NET/Socket : Using [0]eth0:...': NCCL 2.4 prints it at start-up beside the IB list it then
        # uses, so a Socket list names the network only when nothing else does.
        self.socket_device_network: str | None = None
        self.warn_network: str | None = None
        self.ofi_provider: str | None = None
        self.hcas: set[str] = set()
        self.link_layers: set[str] = set()
        self.gdr_on = False
        self.gdr_off = False
        self.verbs_evidence = False
        self.ib_sought = False
        self.socket_chosen = False
        self.init_complete = False
        self.failed_plugins: list[str] = []
        self.ib_missing = False
        self.ranks: dict[tuple[str, int], _RankState] = {}

    def rank(self, host: str | None, rank: int | None) -> _RankState | None:
        if host is None or rank is None:
            return None
        state = self.ranks.get((host, rank))
        if state is None and len(self.ranks) < MAX_RANKS:
            state = self.ranks[(host, rank)] = _RankState()
        return state

    def note_version(self, text: str, reported: bool) -> None:
        """A version NCCL printed, or (``reported``) one quoted in a PyTorch error report."""
        match = _VERSION.search(text)
        if match is None:
            return
        self.seen_nccl = True
        if reported:
            self.reported_version = self.reported_version or match.group(1)
        else:
            self.version = self.version or match.group(1)

    def note_using(self, name: str, rank: _RankState | None) -> None:
        self.using_network = self.using_network or name
        if rank is not None:
            rank.using_network = rank.using_network or name

    def note_channel(self, name: str, gdr: bool, rank: _RankState | None, sending: bool = False) -> None:
        self.seen_nccl = True
        if rank is not None and not gdr and not sending:
            rank.receive_gdr_off = True
        self.channel_network = self.channel_network or name
        for state in (self, rank):
            if state is None:
                continue
            if gdr:
                state.gdr_on = True
            else:
                state.gdr_off = True
        if rank is not None:
            rank.channel_network = rank.channel_network or name

    def note_devices(self, name: str, devices: str) -> None:
        entries = _HCA_ENTRY.findall(devices)
        for hca, link_layer in entries:
            if len(self.hcas) < _MAX_HCAS:
                self.hcas.add(hca)
            self.link_layers.add(link_layer)
        if entries:
            self.verbs_evidence = self.ib_sought = True
        if (entries or _LISTED_DEVICE.search(devices)) and SOCKET_NAME.search(name):
            self.socket_device_network = self.socket_device_network or name
        elif entries or _LISTED_DEVICE.search(devices):
            self.device_network = self.device_network or name
        elif RDMA_NAME.search(name):
            # An empty list ('NET/IB : Using [RO]; OOB ...') names no device: it is no network choice.
            self.ib_sought = True

    def note_gdr_line(self, message: str) -> None:
        """'GPU Direct RDMA Enabled/Disabled', '(DMABUF) enabled', '(nvidia-peermem) enabled', any case."""
        match = _GDR_LINE.search(message)
        if match is None:
            return
        if match.group(1).lower() == "enabled":
            self.gdr_on = True
        else:
            self.gdr_off = True

    def summary(self, lines: int, errors: list[NcclError], error_count: int) -> NcclLogSummary:
        network = (
            self.using_network
            or self.channel_network
            or self.device_network
            or self.socket_device_network
            or self.warn_network
        )
        rdma = _rdma_from_name(network, self.ofi_provider) if network else None
        if rdma is None and self.verbs_evidence:
            rdma = True
        if rdma is None and network and _OFI_NAME.search(network) and self.gdr_on:
            # A libfabric channel with GDRDMA (CXI, EFA without a provider line): NCCL's TCP transport
            # never registers GPU memory, so GDR on a Libfabric channel is RDMA.
            rdma = True
        if rdma is None and self.ib_missing and not self.verbs_evidence:
            rdma = False  # 'NET/IB : No device found.': NCCL falls back to sockets
        socket_like = network is not None and SOCKET_NAME.search(network) is not None
        return NcclLogSummary(
            nccl_version=self.version or self.reported_version,
            network=network,
            rdma=rdma,
            link_layers=tuple(sorted(self.link_layers)),
            hcas=tuple(sorted(self.hcas)),
            gdr=True if self.gdr_on else (False if self.gdr_off else None),
            errors=tuple(errors),
            ranks=tuple(state.rank_net(*key) for key, state in sorted(self.ranks.items())),
            socket_fallback=socket_like and self.ib_sought and not self.socket_chosen,
            lines=lines,
            error_count=error_count,
            init_complete=self.init_complete,
            failed_plugins=tuple(self.failed_plugins),
            ib_missing=self.ib_missing,
        )
