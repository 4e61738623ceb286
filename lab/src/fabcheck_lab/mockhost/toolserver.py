"""The lab's mock-tool server: the state-only mock tools of every host node, in one long-lived process.

An interpreter per tool call costs about 50 ms of CPU; here a call is one Unix-socket round trip. Each
node has its own socket in its state folder (MOCK_STATE_MOUNT/.tools.sock inside the node), so the socket
a request arrives on says whose state and sysfs the call acts on. The tools are the very functions the
interpreter path runs, over the same files (the node's bind mounts are these folders), read afresh on
every call, except that sysfs texts come from a cache that a stat proves current (SysfsCache). The
client (client.c) is told to run the interpreter path itself (reply "D") whenever only
the node can behave exactly: the real `ip`, a write to a sysfs file that does not exist (the node's
strict mount refuses it), a locale that is not UTF-8, or a crash before anything was written.

Request: NUL-terminated fields MAGIC, pid, n_env, n_env × "NAME=value", argc, argv[0] (the tool name),
argv[1:]; then the client shuts its write side. Reply: "CODE OUTLEN ERRLEN\\n", stdout bytes, stderr bytes.

Usage: python -m fabcheck_lab.mockhost.toolserver --run-dir RUN_DIR
       python -m fabcheck_lab.mockhost.toolserver --node NAME=NODE_ROOT... --ready FILE
           [--settle-ms MS | --no-sysfs-cache]
       (tests: --settle-ms lets them see cached texts served without waiting SETTLE_NS; bench/lab.py:
       --no-sysfs-cache is the server as it was before the cache, every attribute read on every call)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import io
import locale
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .layout import MockNodePaths
from .tools import SERVED_TOOLS, SOCKET_NAME
from .tools.common import SETTLE_NS, Delegate, Node, SysfsCache, ToolError
from .tools.dispatch import state_tools

MAGIC = "fabcheck-mock/1"
FORWARDED_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "COLUMNS", "POSIXLY_CORRECT")
MAX_REQUEST = 1 << 20  # argv of a real tool call is far smaller; anything bigger is not a client of ours
DELEGATE = b"D 0 0\n"
READY_FILE = "toolserver.ready"
Handler = Callable[[Node, list[str]], int]


@dataclass(frozen=True)
class Request:
    pid: int
    env: dict[str, str]
    tool: str
    args: list[str]


def parse_request(raw: bytes) -> Request:
    """Decode one request; ValueError when it is not one (the client then takes the interpreter path)."""
    fields = raw.split(b"\0")
    if len(fields) < 5 or fields[-1] != b"" or fields[0].decode("ascii", "replace") != MAGIC:
        raise ValueError("not a fabcheck-mock/1 request")
    pid, n_env = int(fields[1]), int(fields[2])
    env_fields = fields[3 : 3 + n_env]
    argc = int(fields[3 + n_env])
    argv = [os.fsdecode(field) for field in fields[4 + n_env : -1]]  # exactly as the interpreter decodes
    if len(env_fields) != n_env or len(argv) != argc or argc < 1:
        raise ValueError("field counts do not match")
    env = dict(os.fsdecode(field).partition("=")[::2] for field in env_fields)
    unknown = set(env) - set(FORWARDED_ENV)
    if unknown:
        raise ValueError(f"unexpected environment variables {sorted(unknown)}")
    return Request(pid=pid, env=env, tool=argv[0], args=argv[1:])


@functools.cache
def stdout_errors(ctype: str) -> str | None:
    """The error handler Python's stdout gets under this LC_CTYPE (None: not UTF-8, delegate).

    The interpreter runs with -I: a C/POSIX or unusable locale turns on UTF-8 mode (surrogateescape);
    an installed UTF-8 locale gives strict. stderr is always backslashreplace.
    """
    if ctype in ("", "C", "POSIX"):
        return "surrogateescape"
    previous = locale.setlocale(locale.LC_CTYPE)
    try:
        locale.setlocale(locale.LC_CTYPE, ctype)
    except locale.Error:
        return "surrogateescape"
    try:
        codeset = locale.nl_langinfo(locale.CODESET)
    finally:
        locale.setlocale(locale.LC_CTYPE, previous)
    return "strict" if codeset.replace("-", "").upper() == "UTF8" else None


class CallEnvironment:
    """Makes os.environ carry the caller's values of FORWARDED_ENV for the length of one call."""

    def __init__(self) -> None:
        self.tz = os.environ.get("TZ")

    def apply(self, env: Mapping[str, str]) -> None:
        for name in FORWARDED_ENV:
            if name in env:
                os.environ[name] = env[name]
            else:
                os.environ.pop(name, None)
        if env.get("TZ") != self.tz:
            self.tz = env.get("TZ")
            time.tzset()


def ctype_of(env: Mapping[str, str]) -> str:
    return env.get("LC_ALL") or env.get("LC_CTYPE") or env.get("LANG") or ""


def reply(code: int, stdout: bytes, stderr: bytes) -> bytes:
    return f"{code} {len(stdout)} {len(stderr)}\n".encode() + stdout + stderr


def exit_code(exc: SystemExit, stderr: io.StringIO) -> int:
    """What the interpreter makes of sys.exit(value)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    stderr.write(f"{exc.code}\n")
    return 1


def run_call(
    paths: MockNodePaths,
    handlers: Mapping[str, Handler],
    request: Request,
    sysfs_cache: SysfsCache | None = None,
) -> bytes:
    """Run one tool call in this process, its stdout and stderr captured; the encoded reply."""
    handler = handlers.get(request.tool)
    errors = stdout_errors(ctype_of(request.env))
    if handler is None or errors is None:
        return DELEGATE
    node = Node(
        paths.state, paths.sys_class, paths.etc, served=True, pid=request.pid, sysfs_cache=sysfs_cache
    )
    stdout, stderr = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = stdout, stderr
    try:
        code = handler(node, request.args)
    except ToolError as exc:
        (stdout if exc.stdout else stderr).write(exc.message)
        code = exc.code
    except SystemExit as exc:  # optparse's --help
        code = exit_code(exc, stderr)
    except Delegate:
        return DELEGATE
    except Exception:
        if not node.wrote:
            return DELEGATE  # the interpreter path shows the same failure, traceback and all
        stderr.write(traceback.format_exc())
        code = 1
    finally:
        sys.stdout, sys.stderr = saved
    try:
        out_bytes = stdout.getvalue().encode("utf-8", errors)
    except UnicodeEncodeError:
        if not node.wrote:
            return DELEGATE
        out_bytes = stdout.getvalue().encode("utf-8", "surrogateescape")
    return reply(code & 0xFF, out_bytes, stderr.getvalue().encode("utf-8", "backslashreplace"))


class ToolServer:
    """One listening socket per node, every call handled in turn (calls are short and CPU-bound)."""

    def __init__(self, nodes: Mapping[str, MockNodePaths], sysfs_cache: SysfsCache | None) -> None:
        self.nodes = dict(nodes)
        self.sysfs_cache = sysfs_cache  # keyed by full path: one serves every node (None: no cache)
        self.handlers = {name: handler for name, handler in state_tools().items() if name in SERVED_TOOLS}
        self.environment = CallEnvironment()
        self.servers: list[asyncio.AbstractServer] = []

    def socket_of(self, name: str) -> Path:
        return self.nodes[name].state / SOCKET_NAME

    def answer(self, name: str, raw: bytes) -> bytes:
        try:
            request = parse_request(raw)
        except (ValueError, IndexError):
            return DELEGATE
        self.environment.apply(request.env)
        return run_call(self.nodes[name], self.handlers, request, self.sysfs_cache)

    async def serve_connection(
        self, name: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            raw = b""
            while len(raw) <= MAX_REQUEST and (chunk := await reader.read(65536)):
                raw += chunk
            writer.write(DELEGATE if len(raw) > MAX_REQUEST else self.answer(name, raw))
            await writer.drain()
        except (ConnectionError, OSError):
            pass  # the caller went away (killed, timed out): nothing to answer
        finally:
            writer.close()

    async def start(self) -> None:
        for name in self.nodes:
            path = self.socket_of(name)
            path.unlink(missing_ok=True)
            handler = functools.partial(self.serve_connection, name)
            self.servers.append(await asyncio.start_unix_server(handler, path=str(path), backlog=512))
            path.chmod(0o600)

    def close(self) -> None:
        for server in self.servers:
            server.close()
        for name in self.nodes:
            with contextlib.suppress(OSError):
                self.socket_of(name).unlink()


async def serve(nodes: Mapping[str, MockNodePaths], ready: Path, sysfs_cache: SysfsCache | None) -> None:
    server = ToolServer(nodes, sysfs_cache)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await server.start()
    ready.write_text(f"{os.getpid()}\n")
    try:
        await stop.wait()
    finally:
        server.close()


def host_nodes(run_dir: Path) -> dict[str, MockNodePaths]:
    """Host nodes of the lab in run_dir, read from lab.json without importing the controller's lab code."""
    import json

    state = json.loads((run_dir / "lab.json").read_text())
    return {
        node["name"]: MockNodePaths.under(run_dir / "nodes" / node["name"])
        for node in state["nodes"]
        if node["kind"] == "host"
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fabcheck_lab.mockhost.toolserver")
    parser.add_argument("--run-dir", type=Path, help="serve every host node of this lab")
    parser.add_argument("--node", action="append", default=[], metavar="NAME=ROOT", help="serve this node")
    parser.add_argument("--ready", type=Path, help="file written once every socket listens")
    caching = parser.add_mutually_exclusive_group()
    settle_help = "cache a sysfs text only once its file is this much older than the clock"
    caching.add_argument("--settle-ms", type=int, default=SETTLE_NS // 1_000_000, help=settle_help)
    caching.add_argument("--no-sysfs-cache", action="store_true", help="read every attribute on every call")
    args = parser.parse_args(argv)
    nodes = host_nodes(args.run_dir) if args.run_dir else {}
    for item in args.node:
        name, _, root = item.partition("=")
        if not name or not root:
            parser.error(f"--node {item!r}: expected NAME=NODE_ROOT")
        nodes[name] = MockNodePaths.under(Path(root))
    ready = args.ready or (args.run_dir / READY_FILE if args.run_dir else None)
    if not nodes or ready is None:
        parser.error("give --run-dir, or --node and --ready")
    if args.settle_ms < 0:
        parser.error(f"--settle-ms {args.settle_ms}: expected 0 or more")
    sysfs_cache = None if args.no_sysfs_cache else SysfsCache(args.settle_ms * 1_000_000)
    asyncio.run(serve(nodes, ready, sysfs_cache))
    return 0


if __name__ == "__main__":
    sys.exit(main())
