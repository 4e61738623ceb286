"""The ssh runner against stand-in hosts: an `ssh` on PATH that runs the remote command here, and an
`ib_write_bw` that behaves like perftest's (a server prints its banner and waits for its client; a
taken port fails). Servers start before clients, a taken port is retried on another, a server that never
comes up is a failed pair with the reason, and the client's table becomes the measurement."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.desired.perftest import DesiredPerftest
from fabcheck.pairs.commands import BASE_PORT, PORT_RETRY_STRIDE, HostSetup
from fabcheck.pairs.rounds import Endpoint, Pair
from fabcheck.pairs.runner import SshRunner

FAKE_SSH = """#!/bin/sh
for last; do :; done
exec sh -c "$last"
"""
# Server: port 18515 is taken; otherwise banner, then wait for the client's mark file.
# Client: waits for nothing (the server is up before any client starts) and prints a result table.
FAKE_PERFTEST = """#!/bin/sh
port=""; server=""
while [ $# -gt 0 ]; do
  case "$1" in
    -p) port="$2"; shift 2;;
    -d|-s|-n|-x) shift 2;;
    -*) shift;;
    *) server="$1"; shift;;
  esac
done
log="$FAKE_DIR/calls.log"
if [ -z "$server" ]; then
  echo "server $port" >> "$log"
  if [ "$port" = "$TAKEN_PORT" ]; then echo "Couldn't listen to port $port"; exit 1; fi
  if [ "$port" = "$SILENT_PORT" ]; then sleep 6; exit 0; fi
  echo "* Waiting for client to connect... *"
  while [ ! -e "$FAKE_DIR/client.$port" ]; do sleep 0.05; done
  exit 0
fi
echo "client $port" >> "$log"
touch "$FAKE_DIR/client.$port"
echo " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
echo " 1048576    5000             383.10            382.64		   0.045613"
echo "-----------------------------------------------------------------"
"""


@pytest.fixture
def fake_hosts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("ssh", FAKE_SSH), ("ib_write_bw", FAKE_PERFTEST)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DIR", str(tmp_path))
    monkeypatch.setenv("TAKEN_PORT", str(BASE_PORT))
    monkeypatch.setenv("SILENT_PORT", "0")
    return tmp_path


def _runner(hosts: list[str], wait_s: float = 10) -> SshRunner:
    want = {h: DesiredPerftest(h, ("mlx5_0",), 400.0, 0.9, (), None) for h in hosts}
    targets = {h: SshTarget(h, f"127.0.0.{i + 1}") for i, h in enumerate(hosts)}
    setup = {h: HostSetup(False, {}) for h in hosts}
    # A server has connect_s + per_tool_s to show its banner.
    limits = TimeLimits(connect_s=wait_s / 2, command_s=wait_s, per_tool_s=wait_s / 2)
    return SshRunner(targets, want, limits, 4, setup)


def test_a_taken_port_is_retried_and_the_client_runs_after_its_server(fake_hosts: Path) -> None:
    pair = Pair(Endpoint("a", "mlx5_0"), Endpoint("b", "mlx5_0"))
    (measured,) = _runner(["a", "b"])((pair,), 1)
    assert measured.gbps == pytest.approx(382.64), measured
    moved = BASE_PORT + PORT_RETRY_STRIDE
    calls = (fake_hosts / "calls.log").read_text().splitlines()
    assert calls == [f"server {BASE_PORT}", f"server {moved}", f"client {moved}"]


def test_a_server_that_never_comes_up_is_a_failed_pair_with_the_reason(
    fake_hosts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAKEN_PORT", "0")
    monkeypatch.setenv("SILENT_PORT", str(BASE_PORT))
    pair = Pair(Endpoint("a", "mlx5_0"), Endpoint("b", "mlx5_0"))
    (measured,) = _runner(["a", "b"], wait_s=4)((pair,), 1)
    assert measured.gbps is None and "did not start in time" in (measured.error or "")
    assert "client" not in (fake_hosts / "calls.log").read_text()
