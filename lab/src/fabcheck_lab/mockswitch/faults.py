"""Lab-facing fault controls for a running mock switch server."""

from __future__ import annotations

from pathlib import Path

from fabcheck_lab.mockswitch.control import request
from fabcheck_lab.mockswitch.device import SWITCH_FAULTS
from fabcheck_lab.mockswitch.spec import MockSwitchError, read_spec


def _known_switch(run_dir: Path, switch: str) -> None:
    names = [s.name for s in read_spec(run_dir)]
    if switch not in names:
        raise MockSwitchError(f"no mock switch named {switch!r} (known: {', '.join(names)})")


def inject_switch_fault(run_dir: Path, switch: str, fault: str) -> None:
    """Change the switch's RUNNING config as the fault describes; the live server applies it at once."""
    if fault not in SWITCH_FAULTS:
        raise MockSwitchError(f"unknown switch fault {fault!r}; known: {', '.join(SWITCH_FAULTS)}")
    _known_switch(run_dir, switch)
    request(run_dir, {"op": "inject", "switch": switch, "fault": fault})


def heal_switch_fault(run_dir: Path, switch: str, fault: str | None = None) -> None:
    """Undo one fault (or every fault, with None), restoring exactly what the inject replaced."""
    if fault is not None and fault not in SWITCH_FAULTS:
        raise MockSwitchError(f"unknown switch fault {fault!r}; known: {', '.join(SWITCH_FAULTS)}")
    _known_switch(run_dir, switch)
    request(run_dir, {"op": "heal", "switch": switch, "fault": fault})


def arm_drop(run_dir: Path, switch: str, after_lines: int) -> None:
    """Drop the next SSH connection that sends more than after_lines further config lines.

    The dropping line itself is never executed, so a push cut there leaves a pending revision,
    an uncommitted session or an unwritten patch behind, never a half-applied running config.
    """
    if after_lines < 0:
        raise MockSwitchError(f"after_lines must be >= 0, got {after_lines}")
    _known_switch(run_dir, switch)
    request(run_dir, {"op": "arm_drop", "switch": switch, "after_lines": after_lines})


def set_timing(
    run_dir: Path,
    switch: str,
    delay_s: float = 0.0,
    chunk_bytes: int = 0,
    silent_after: int | None = None,
    pieces: int = 4,
) -> None:
    """Make the switch answer late, in pieces, or not at all after `silent_after` typed lines (0: from
    the login on); all defaults: answer normally again (mockswitch.server.Timing)."""
    _known_switch(run_dir, switch)
    request(
        run_dir,
        {
            "op": "timing",
            "switch": switch,
            "delay_s": delay_s,
            "chunk_bytes": chunk_bytes,
            "silent_after": silent_after,
            "pieces": pieces,
        },
    )


__all__ = ["SWITCH_FAULTS", "arm_drop", "heal_switch_fault", "inject_switch_fault", "set_timing"]
