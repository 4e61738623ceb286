"""The local backend: the host collection script run on this node itself, for `fabcheck node-check`.

The same script, launcher and bounds as a native round trip (fabcheck.collect.backends.native), with
`sh` in place of ssh: the launcher's `timeout` bounds the whole collection and each tool on this node,
the client stops reading at the same limit plus a grace period, and the stdin watcher stops the script
when node-check itself is killed. What went wrong is said in the collection's `error`, never raised.
"""

from __future__ import annotations

import secrets
import socket
from dataclasses import dataclass

from fabcheck.collect.host import HostCollection, remote_command, section_command
from fabcheck.collect.script import OutputCaps, Sections, watched
from fabcheck.collect.ssh import COMMAND, TimeLimits, round_trip

SHELL = "/bin/sh"


@dataclass(frozen=True)
class LocalTarget:
    """This node, as round_trip's target: the launcher line runs under `sh -c`, no ssh."""

    name: str

    def argv(self, remote_command: str, connect_timeout_s: int, *, stdin: bool = False) -> list[str]:
        del connect_timeout_s, stdin  # nothing to connect to; the watcher reads the pipe round_trip holds
        return [SHELL, "-c", remote_command]

    @property
    def where(self) -> str:
        return f"this node ({socket.gethostname()})"


def collect_local(
    host: str, priority: int, limits: TimeLimits | None = None, caps: OutputCaps | None = None
) -> HostCollection:
    """Run the collection script here, bounded like a native round trip; `host` names the collection
    (the desired record's host). Output beyond `caps` is not kept and the error names the cap."""
    limits = limits or TimeLimits()
    token = secrets.token_hex(8)
    target = LocalTarget(host)
    done = round_trip(
        target, watched(remote_command(token, priority, limits)), token, limits, caps, watch_stdin=True
    )
    parsed = done.parsed
    if done.error is not None:
        return HostCollection(host, {}, False, done.error.replace("ssh", SHELL), priority)
    capped = "; ".join(parsed.over_caps) or None
    if parsed.round_trip_cut:
        return HostCollection(host, parsed.sections, False, capped, priority)
    if done.timed_out:
        error = f"no complete answer within {limits.client_s:g} s; {_stopped_in(parsed, priority)}"
        return HostCollection(host, parsed.sections, False, _joined(capped, error), priority, COMMAND)
    if parsed.complete:
        return HostCollection(host, parsed.sections, not capped, capped, priority)
    if done.rc in (124, 137):  # the launcher's own `timeout` stopped the collection
        stopped = _stopped_in(parsed, priority)
        error = f"the collection did not finish within {limits.host_s} s and was stopped; {stopped}"
        return HostCollection(host, parsed.sections, False, _joined(capped, error), priority, COMMAND)
    said = done.stderr.strip().splitlines()[-1:] if done.stderr.strip() else []
    error = (
        f"the collection on {target.where} ended early (exit {done.rc}); {_stopped_in(parsed, priority)}"
        + (f": {said[0][:300]}" if said else "")
    )
    return HostCollection(host, parsed.sections, False, _joined(capped, error), priority)


def _joined(*reasons: str | None) -> str:
    return "; ".join(reason for reason in reasons if reason)


def _stopped_in(parsed: Sections, priority: int) -> str:
    unfinished = [name for name, section in parsed.sections.items() if section.rc is None]
    if unfinished:
        return f"output stopped in section {unfinished[-1]} (`{section_command(unfinished[-1], priority)}`)"
    return "output stopped between sections" if parsed.sections else "nothing was printed"
