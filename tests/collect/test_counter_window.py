"""The collection script's counter window: every counter probe read once, the window waited out (a TERM
stops the wait at once), then read again, each reading a section of its own; the window is a validated
argument. Run under the local /bin/sh with fake tools: `rdma` lists one port with its netdev, `counter`
prints how many times it has run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from fabcheck.collect import host as collect
from fabcheck.collect.host import collection_script
from fabcheck.collect.script import COUNTER_WINDOW, HostProbe, split_sections

TOKEN = "0123456789abcdef"
TOOLS = ("timeout", "mktemp", "cat", "rm", "grep", "expr", "date")
NETDEV = "ens1np0"
COUNTER = HostProbe("ctr", "netdev", ("counter", "{netdev}"), str, counter=True)
ONCE = HostProbe("once", "netdev", ("counter", "{netdev}"), str)


def _bin(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    rdma = f"#!/bin/sh\necho 'link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev {NETDEV}'\n"
    state = tmp_path / "runs"
    counter = (
        f'#!/bin/sh\nn=$(cat {state} 2>/dev/null || echo 0)\nn=$(expr "$n" + 1)\necho "$n" >{state}\n'
        'echo "$1 $n"\n'
    )
    # The window's sleep says its pid, so a test can see it gone after a TERM.
    sleeper = f'#!/bin/sh\necho $$ >{tmp_path / "sleep.pid"}\necho "$@" >>{tmp_path / "sleep.args"}\n'
    sleeper += f'exec {shutil.which("sleep")} "$@"\n'
    slow = f"#!/bin/sh\nexec {shutil.which('sleep')} 3\n"  # a probe read once that takes 3 s
    for name, text in (("rdma", rdma), ("counter", counter), ("sleep", sleeper), ("slow", slow)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    return bin_dir


def _run(
    bin_dir: Path, window: str, probes: tuple[HostProbe, ...] = (ONCE, COUNTER)
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", "-c", collection_script(probes), "fabcheck-collect", TOKEN, "3", "10", window],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": str(bin_dir)},
    )


def test_each_counter_probe_is_read_before_and_after_the_window(tmp_path: Path) -> None:
    started = time.monotonic()
    done = _run(_bin(tmp_path), "1")
    assert time.monotonic() - started >= 1
    parsed = split_sections(done.stdout, TOKEN)
    assert parsed.complete, done.stderr
    names = list(parsed.sections)
    assert names.index("ctr.before:ens1np0") < names.index(COUNTER_WINDOW) < names.index("ctr:ens1np0")
    # The first reading comes first, the probe read once runs inside the window, then the second: 1, 2, 3.
    assert parsed.sections["ctr.before:ens1np0"].stdout.strip() == "ens1np0 1"
    assert parsed.sections["once:ens1np0"].stdout.strip() == "ens1np0 2"
    assert parsed.sections["ctr:ens1np0"].stdout.strip() == "ens1np0 3"
    assert parsed.sections[COUNTER_WINDOW].stdout.strip() == "1"


def test_the_work_read_once_counts_towards_the_window(tmp_path: Path) -> None:
    """A probe read once that takes 3 s inside a 4 s window leaves at most 2 s to wait (`date +%s`
    counts whole seconds, and the time spent is taken 1 s short, so the window is never cut short)."""
    slow = HostProbe("slow", "netdev", ("slow",), str)
    parsed = split_sections(_run(_bin(tmp_path), "4", (slow, COUNTER)).stdout, TOKEN)
    assert parsed.complete and parsed.sections[COUNTER_WINDOW].stdout.strip() == "4"
    names = list(parsed.sections)
    assert names.index("ctr.before:ens1np0") < names.index("slow:ens1np0") < names.index("ctr:ens1np0")
    [waited] = (tmp_path / "sleep.args").read_text().split()
    assert 0 <= int(waited) <= 2


def test_a_zero_window_reads_the_counters_once(tmp_path: Path) -> None:
    started = time.monotonic()
    parsed = split_sections(_run(_bin(tmp_path), "0").stdout, TOKEN)
    assert parsed.complete and time.monotonic() - started < 5
    assert "ctr.before:ens1np0" not in parsed.sections
    assert parsed.sections["ctr:ens1np0"].stdout.strip() == "ens1np0 2"
    assert parsed.sections[COUNTER_WINDOW].stdout.strip() == "0"


def test_without_counter_probes_the_script_neither_waits_nor_says_a_window(tmp_path: Path) -> None:
    started = time.monotonic()
    parsed = split_sections(_run(_bin(tmp_path), "30", (ONCE,)).stdout, TOKEN)
    assert parsed.complete and time.monotonic() - started < 10
    assert COUNTER_WINDOW not in parsed.sections


def test_a_term_inside_the_window_stops_the_wait_at_once(tmp_path: Path) -> None:
    bin_dir = _bin(tmp_path)
    process = subprocess.Popen(
        ["/bin/sh", "-c", collection_script((COUNTER,)), "fabcheck-collect", TOKEN, "3", "10", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={"PATH": str(bin_dir)},
    )
    pid_file = tmp_path / "sleep.pid"
    deadline = time.monotonic() + 20
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    sleeper = int(pid_file.read_text())
    stopped_at = time.monotonic()
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=10)
    assert process.returncode == 143 and time.monotonic() - stopped_at < 5
    parsed = split_sections(out.decode(), TOKEN)
    assert "ctr.before:ens1np0" in parsed.sections and COUNTER_WINDOW not in parsed.sections
    assert not parsed.complete
    with pytest.raises(ProcessLookupError):
        for _ in range(50):  # the sleep is gone (its reaping may take a moment)
            os.kill(sleeper, 0)
            time.sleep(0.05)


@pytest.mark.parametrize("window", ["", "-1", "05", "1.5", "5s", "601", "99999", "$(id)"])
def test_a_bad_window_is_refused_before_anything_runs(tmp_path: Path, window: str) -> None:
    done = _run(_bin(tmp_path), window)
    assert done.returncode == 2 and "fabcheck: bad counter window" in done.stderr
    assert "begin" not in done.stdout


def test_the_real_table_reads_the_wire_counters_twice_and_the_module_once() -> None:
    script = collect.COLLECT_SCRIPT
    for name in (collect.LINK_STATS, collect.FEC):
        assert (
            script.count(f'section "{name}.before:$netdev"') == script.count(f'section "{name}:$netdev"') == 1
        )
    assert script.count('section "mlxlink.before:$dev/$port"') == 1
    assert script.count('section "module:$netdev"') == 1 and "module.before" not in script


def test_a_window_that_could_not_be_waited_is_said_and_its_counters_are_unreadable(tmp_path: Path) -> None:
    bin_dir = _bin(tmp_path)
    (bin_dir / "sleep").unlink()  # a host without sleep: the second reading would come at once
    parsed = split_sections(_run(bin_dir, "1").stdout, TOKEN)
    assert parsed.complete
    said = parsed.sections[COUNTER_WINDOW]
    assert said.rc == 127 and "the window was not waited" in said.stderr
    read = collect.read_section(collect.PROBES_BY_NAME[COUNTER_WINDOW], parsed.sections, "", 3)
    assert isinstance(read, collect.Unreadable) and read.reason.startswith("exit 127")
