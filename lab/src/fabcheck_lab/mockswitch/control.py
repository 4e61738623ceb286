"""The server's UNIX control socket: one JSON request line in, one JSON reply line out."""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fabcheck_lab.mockswitch.spec import MockSwitchError, control_socket_path

SUN_PATH_MAX = 100  # sockaddr_un holds 108 bytes; keep a margin


@contextlib.contextmanager
def reachable_path(path: Path) -> Iterator[str]:
    """A path short enough for bind/connect: long ones go through /proc/self/fd/<dir fd>/name."""
    if len(os.fsencode(str(path))) < SUN_PATH_MAX:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def request(run_dir: Path, payload: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
    """Send one request to the running server and return its reply (MockSwitchError on failure)."""
    path = control_socket_path(run_dir)
    if not path.exists():
        raise MockSwitchError(f"mock switch server is not running ({path} missing)")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            with reachable_path(path) as address:
                sock.connect(address)
            sock.sendall(json.dumps(payload).encode() + b"\n")
            reply = _read_line(sock)
        except OSError as exc:
            raise MockSwitchError(f"mock switch server at {path} did not answer: {exc}") from exc
    try:
        answer = json.loads(reply)
    except ValueError as exc:
        raise MockSwitchError(f"mock switch server sent a malformed reply: {reply[:200]!r}") from exc
    if not answer.get("ok"):
        raise MockSwitchError(str(answer.get("error", "mock switch server refused the request")))
    return answer


def _read_line(sock: socket.socket) -> str:
    chunks = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    return b"".join(chunks).decode()


def switch_counters(run_dir: Path, switch: str) -> dict[str, Any]:
    """The switch's counters once the server added every spooled host traffic record:
    {"ports": {port: {kind: [8 values]}}}, pfc_* per priority, the other kinds per queue."""
    return dict(request(run_dir, {"op": "counters", "switch": switch})["counters"])
