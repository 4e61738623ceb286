"""A real round-trip delay between the controller and the host nodes (`fabcheck lab up --rtt-ms N`).

The lab's kernel may lack netem (only htb, tbf, fifo and u32 are assumed, see net.py), so the delay is
made in user space, on the lab's own addresses only: with a delay each host's sshd listens on
BEHIND_PROXY_PORT and this process on the node's address:HOST_PORT. It opens the connection to sshd one
RTT after accepting (a TCP handshake costs one round trip) and hands every chunk on rtt/2 after it
arrived, in each direction, in order. Every request/response exchange of ssh thus costs at least the
RTT; bandwidth is not limited (that is `slow-link`). The `down` and `slow-link` faults still act: they
match the node's address, which both listeners use.

Usage: python -m fabcheck_lab.delay --run-dir RUN_DIR
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import signal
import sys
from pathlib import Path

BEHIND_PROXY_PORT = 2322  # sshd of a delayed host node; HOST_PORT (2222) is the proxy
CHUNK = 65536
READY_FILE = "delay.ready"


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, one_way_s: float) -> None:
    """Forward reader to writer, each chunk one_way_s after it was read; EOF is forwarded the same way."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        while True:
            due, data = await queue.get()
            await asyncio.sleep(max(0.0, due - loop.time()))
            if not data:
                with contextlib.suppress(OSError):
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    delivering = asyncio.create_task(deliver())
    try:
        while True:
            data = await reader.read(CHUNK)
            queue.put_nowait((loop.time() + one_way_s, data))
            if not data:
                break
        await delivering
    finally:
        delivering.cancel()


async def _relay(
    upstream: tuple[str, int], rtt_s: float, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        await asyncio.sleep(rtt_s)  # the handshake's round trip
        up_reader, up_writer = await asyncio.open_connection(*upstream)
    except OSError:
        writer.close()
        return
    try:
        await asyncio.gather(_pump(reader, up_writer, rtt_s / 2), _pump(up_reader, writer, rtt_s / 2))
    except (OSError, ConnectionError):
        pass  # either side went away: close both
    finally:
        for side in (writer, up_writer):
            side.close()


async def serve(listeners: list[tuple[str, int]], rtt_s: float, ready: Path) -> None:
    servers = []
    for address, port in listeners:
        handler = functools.partial(_relay, (address, BEHIND_PROXY_PORT), rtt_s)
        servers.append(await asyncio.start_server(handler, address, port, backlog=512, reuse_address=True))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    ready.write_text("ready\n")
    await stop.wait()
    for server in servers:
        server.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fabcheck_lab.delay")
    parser.add_argument("--run-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    state = json.loads((args.run_dir / "lab.json").read_text())
    listeners = [(n["address"], n["port"]) for n in state["nodes"] if n["kind"] == "host"]
    asyncio.run(serve(listeners, float(state["rtt_ms"]) / 1000.0, args.run_dir / READY_FILE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
