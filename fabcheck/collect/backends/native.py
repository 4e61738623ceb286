"""The native backend: fabcheck's own OpenSSH round trip of the host collection script (the default).

One ssh connection per host (collect.ssh.round_trip), the script generated from the probe table
(collect.host.COLLECT_SCRIPT) under the launcher that bounds it on the host; what went wrong is said
in the collection's `error` and `expired` (which limit: connect or command), never raised.
"""

from __future__ import annotations

import secrets

from fabcheck.collect.host import HostCollection, remote_command, section_command
from fabcheck.collect.script import OutputCaps, Sections, watched
from fabcheck.collect.ssh import COMMAND, CONNECT, SshTarget, TimeLimits, round_trip, ssh_said


def collect_host(
    target: SshTarget, priority: int, limits: TimeLimits | None = None, caps: OutputCaps | None = None
) -> HostCollection:
    """Run the collection script on one host over ssh; never raises for an unreachable host. Output
    beyond `caps` (collect.script.OutputCaps) is not kept, and the host's error names the cap and the
    section that went over it."""
    limits = limits or TimeLimits()
    token = secrets.token_hex(8)
    remote = watched(remote_command(token, priority, limits))
    done = round_trip(target, remote, token, limits, caps, watch_stdin=True)
    parsed = done.parsed
    if done.error is not None:
        return HostCollection(target.name, {}, False, done.error, priority)
    capped = "; ".join(parsed.over_caps) or None
    if parsed.round_trip_cut:
        return HostCollection(target.name, parsed.sections, False, capped, priority)
    if done.timed_out:
        error = _joined(capped, _gave_up(parsed, done.stderr, limits))
        return HostCollection(target.name, parsed.sections, False, error, priority, COMMAND)
    if parsed.complete:
        return HostCollection(target.name, parsed.sections, not capped, capped, priority)
    error, expired_part = _failure(done.rc or 0, done.stderr, parsed, target, limits)
    return HostCollection(target.name, parsed.sections, False, _joined(capped, error), priority, expired_part)


def _joined(*reasons: str | None) -> str:
    return "; ".join(reason for reason in reasons if reason)


def _stopped_in(parsed: Sections) -> str:
    unfinished = [name for name, section in parsed.sections.items() if section.rc is None]
    if unfinished:
        return f"output stopped in section {unfinished[-1]} (`{section_command(unfinished[-1], 3)}`)"
    return "output stopped between sections" if parsed.sections else "nothing was printed"


def _gave_up(parsed: Sections, stderr: str, limits: TimeLimits) -> str:
    said = ssh_said(stderr)
    return (
        f"command timeout: no complete answer within {limits.client_s:g} s (host limit {limits.host_s} s, "
        f"ssh ConnectTimeout {limits.ssh_connect_timeout} s); {_stopped_in(parsed)}"
        + (f"; ssh said: {said}" if said else "")
    )


def _failure(
    rc: int, stderr: str, parsed: Sections, target: SshTarget, limits: TimeLimits
) -> tuple[str, str | None]:
    said = ssh_said(stderr)
    if rc == 255 and not parsed.sections:
        if "timed out" in said.lower():
            return (
                f"connect timeout (ssh ConnectTimeout {limits.ssh_connect_timeout} s) to {target.where}: "
                f"{said}",
                CONNECT,
            )
        return f"ssh to {target.where} failed: {said or 'exit 255'}", None
    if rc in (124, 137):  # the host's own `timeout` stopped the collection
        return (
            f"command timeout on the host: the collection did not finish within {limits.host_s} s and "
            f"was stopped there; {_stopped_in(parsed)}",
            COMMAND,
        )
    return f"collection on {target.where} ended early (exit {rc}); {_stopped_in(parsed)}" + (
        f": {said}" if said else ""
    ), None
