"""Issue 27 in the lab, over real ssh to mock hosts made hostile by the test: a host whose `nvidia-smi`
prints without end costs the controller bounded memory and time and is an error for itself only, and
after `kill -9` of `fabcheck validate` the host's collection ends soon (its stdin closed), not at its
limit. The tool swap is the bind mount of tests/lab/test_validate_lab.py's hung-tool test."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from labsupport import requires_lab, running_lab

from fabcheck_lab.state import LabPaths

pytestmark = [pytest.mark.lab, requires_lab]

HOSTILE, CALM = "gpu01", "gpu02"
MARK = "2727"  # how the swapped tool shows in the node's process list
FABCHECK = str(Path(sys.executable).parent / "fabcheck")
RSS_BOUND_MIB = 300
SLACK_S = 30  # start-up, the calm host's round trip and the report, on a loaded 2-core machine


def ssh(paths: LabPaths, node: str, command: str) -> str:
    argv = ["ssh", "-F", str(paths.ssh_config), node, command]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"{node}: {command}: {done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def lab() -> Iterator[LabPaths]:
    with running_lab(profile="roce", hosts=2, switches=0) as (paths, _state):
        yield paths


@contextlib.contextmanager
def swapped_nvidia_smi(paths: LabPaths, body: str) -> Iterator[None]:
    tool = ssh(paths, HOSTILE, "command -v nvidia-smi").strip()
    bin_dir, copy = os.path.dirname(tool), f"/root/hostile-{MARK}"
    ssh(
        paths,
        HOSTILE,
        f"mkdir {copy} && cp -a {bin_dir}/. {copy}/ && rm {copy}/nvidia-smi "
        f"&& printf '#!/bin/sh\\n{body}\\n' > {copy}/nvidia-smi "
        f"&& chmod +x {copy}/nvidia-smi && mount --bind {copy} {bin_dir}",
    )
    try:
        yield
    finally:
        ssh(paths, HOSTILE, f"umount {bin_dir} && rm -rf {copy}")


def processes(paths: LabPaths, node: str) -> list[str]:
    out = ssh(paths, node, "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done 2>/dev/null")
    return [line.strip() for line in out.splitlines() if line.strip()]


def test_a_host_printing_without_end_is_an_error_in_bounded_memory_and_time(lab: LabPaths) -> None:
    deadline = 120
    argv = [FABCHECK, "validate", "-i", str(lab.inventory.parent), "--stages", "host", "--json"]
    argv += ["--timeout", "90", "--connect-timeout", "30", "--deadline", str(deadline)]
    with swapped_nvidia_smi(lab, f"exec yes {MARK}"):
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", MEASURED, *argv],
            capture_output=True,
            text=True,
            timeout=deadline + SLACK_S + 60,
            check=False,
        )
        took = time.monotonic() - started
    rss_mib = int(done.stderr.rsplit("PEAK_RSS_KIB ", 1)[1]) / 1024
    print(f"validate: {took:.1f} s, peak RSS {rss_mib:.0f} MiB")
    assert took < deadline + SLACK_S, took
    assert rss_mib < RSS_BOUND_MIB, rss_mib
    lines = (json.loads(line) for line in done.stdout.splitlines() if line.startswith("{"))
    results = {r["host"]: r for r in lines if "host" in r}
    assert set(results) >= {HOSTILE, CALM}, done.stderr[-2000:]
    [capped] = [f for f in results[HOSTILE]["findings"] if "(the round trip cap)" in f["actual"]]
    assert capped["status"] == "error" and "section topo printed more than 4 MiB" in capped["actual"]
    assert not [f for f in results[CALM]["findings"] if "cap)" in f["actual"]]


# The command as a child, and its peak RSS (the controller's) on stderr.
MEASURED = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], check=False)\n"
    "print('PEAK_RSS_KIB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
)


def test_after_kill_9_of_validate_the_hosts_collection_ends_soon(lab: LabPaths) -> None:
    argv = [FABCHECK, "validate", "-i", str(lab.inventory.parent), "--stages", "host", "--limit", HOSTILE]
    argv += ["--timeout", "300", "--connect-timeout", "30"]
    with swapped_nvidia_smi(lab, f"exec sleep {MARK}"):
        child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            give_up = time.monotonic() + 120
            while not any(f"sleep {MARK}" in line for line in processes(lab, HOSTILE)):
                assert time.monotonic() < give_up, "the hung tool never started"
                time.sleep(0.5)
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
            killed = time.monotonic()
            left = processes(lab, HOSTILE)
            while any(f"sleep {MARK}" in line or "fabcheck-collect" in line for line in left):
                assert time.monotonic() - killed < 20, left  # the host's own limit is 300 s + 3 s
                time.sleep(0.5)
                left = processes(lab, HOSTILE)
            print(f"after kill -9: the host's collection ended within {time.monotonic() - killed:.1f} s")
        finally:
            if child.poll() is None:
                child.kill()
