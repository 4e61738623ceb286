"""Transports: local runs, timeouts, missing programs, ssh quoting (snapshots: tests/gate)."""

from __future__ import annotations

import shlex
from pathlib import Path

from fabcheck.collect.transport import LocalTransport, SshTransport


def test_local_runs_argv_without_a_shell() -> None:
    result = LocalTransport().run(["printf", "%s|", "a b", "$(id)"])
    assert result.ok and result.stdout == "a b|$(id)|"


def test_local_timeout_and_missing_program_are_failures() -> None:
    slow = LocalTransport().run(["sleep", "5"], timeout=0.2)
    assert (slow.rc, slow.ok) == (124, False) and "timed out" in slow.stderr
    missing = LocalTransport().run(["fabcheck-no-such-tool"])
    assert missing.rc == 127 and "cannot run" in missing.stderr


def test_ssh_quotes_every_argument(tmp_path: Path, monkeypatch) -> None:
    seen: list[list[str]] = []

    def fake_run(argv, **_kwargs):
        seen.append(argv)
        raise FileNotFoundError(2, "No such file")

    monkeypatch.setattr("fabcheck.collect.transport.subprocess.run", fake_run)
    result = SshTransport("node1", ssh_config=tmp_path / "cfg").run(["cat", "/etc/x; rm -rf /"])
    assert result.rc == 127
    argv = seen[0]
    assert argv[:5] == ["ssh", "-o", "BatchMode=yes", "-F", str(tmp_path / "cfg")]
    assert shlex.split(argv[-1]) == ["cat", "/etc/x; rm -rf /"]
