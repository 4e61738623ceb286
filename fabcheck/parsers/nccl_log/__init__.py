"""Streaming parser for NCCL_DEBUG=INFO logs: which network NCCL used, GDR, HCAs and failures.

Lines look like ``host:pid:tid [dev] NCCL INFO <message>`` (or ``NCCL WARN`` with a source file
before it), possibly behind timestamps, Ray/Kubernetes tags, ANSI colours or pasted-document
artifacts; bare ``NCCL version 2.x.y+cudaZ`` lines and PyTorch ``NCCL error`` reports are read too.

Rules, in priority order where several sources exist:

* nccl_version: the first version NCCL prints (``NCCL version 2.x.y``, bare or as INFO); else the
  one quoted in a PyTorch ``NCCL error ... NCCL version 2.x.y`` report.
* network: ``Using network X``; else the first channel line
  ``via NET/<X>/<n>[/GDRDMA]``; else the first ``NET/<X> : Using [..]`` device list; else the
  ``NET/<X> :`` prefix of a WARN raised inside NCCL's own transport (source ``transport/net*``).
* gdr: True if any NET channel has ``/GDRDMA`` or a ``GPU Direct RDMA Enabled`` line is printed;
  False if NET channels exist without it or ``GPU Direct RDMA Disabled`` is printed; else None.
  Per rank (RankNet) only the rank's own NET channel lines count.
* hcas / link_layers: only from ``NET/<plugin> : Using [0]mlx5_0:1/RoCE ...`` device lists.
* errors: NCCL WARN lines (except plugin-loading chatter), PyTorch ``NCCL error`` reports and
  their ``Last error:`` detail line, collective watchdog timeouts.

Speed and memory: text is handled in blocks of whole lines (``feed`` batches lines into blocks
too, so both entry points share one code path). Per block, C-level passes pick out NET channel
lines and ``Using network`` lines (split + map, keyed by line prefix) and every other marked line
(one findall); only the first sighting of each distinct key reaches Python code. Failure lines
are then visited in order, because they need line numbers and may wrap onto the next line. Each
pass owns its facts, so results never depend on where blocks start. Errors keep the first
``MAX_ERRORS`` (``error_count`` has the total), long lines, names and messages are capped and
every cache is bounded, so memory does not grow with the log.
"""

from __future__ import annotations

from fabcheck.parsers.nccl_log.failures import completion_status
from fabcheck.parsers.nccl_log.lines import BLOCK_CHARS, MAX_LINE_CHARS, clean_line
from fabcheck.parsers.nccl_log.parser import NcclLogParser, parse_nccl_log
from fabcheck.parsers.nccl_log.records import (
    MAX_ERRORS,
    MAX_MESSAGE_CHARS,
    MAX_RANKS,
    NcclError,
    NcclLogSummary,
    RankNet,
    nccl_log_facts,
)

__all__ = [
    "BLOCK_CHARS",
    "MAX_ERRORS",
    "MAX_LINE_CHARS",
    "MAX_MESSAGE_CHARS",
    "MAX_RANKS",
    "NcclError",
    "NcclLogParser",
    "NcclLogSummary",
    "RankNet",
    "clean_line",
    "completion_status",
    "nccl_log_facts",
    "parse_nccl_log",
]
