"""Slurm's `srun`: one step over the hosts' Slurm node names, env through srun's own environment."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from fabcheck.launch.config import LauncherConfig
from fabcheck.launch.model import LaunchRequest, LaunchResult, run_process, split_tagged

# `--label` prefixes each line with the task id, right-aligned: " 3: text".
TAG = re.compile(r"^\s*(?P<rank>\d+): (?P<line>.*)$")


class SrunLauncher:
    name = "srun"

    def __init__(self, config: LauncherConfig) -> None:
        self.config = config

    def argv(self, request: LaunchRequest) -> list[str]:
        time_limit_min = max(1, -(-int(request.timeout_s) // 60))
        return [
            self.config.binary,
            f"--nodes={len(request.hosts)}",
            f"--ntasks={request.nranks}",
            f"--ntasks-per-node={request.ranks_per_host}",
            f"--nodelist={','.join(host.name for host in request.hosts)}",
            "--label",
            # NCCL values hold commas (NCCL_DEBUG_SUBSYS=INIT,NET) that --export=VAR=value would split:
            # srun passes its own environment instead, which run() extends with request.env.
            "--export=ALL",
            "--kill-on-bad-exit=1",
            f"--time={time_limit_min}",
            *self.config.extra_args,
            request.program,
            *request.args,
        ]

    def environment(self, request: LaunchRequest, environ: Mapping[str, str]) -> dict[str, str]:
        return {**environ, **request.env}

    def run(self, request: LaunchRequest, environ: Mapping[str, str] | None = None) -> LaunchResult:
        argv = self.argv(request)
        env = self.environment(request, os.environ if environ is None else environ)
        done = run_process(argv, env, request.timeout_s)
        ranks, merged = split_tagged(done.stdout, TAG)
        return LaunchResult(tuple(argv), done.rc, ranks, merged, done.stderr, done.seconds)
