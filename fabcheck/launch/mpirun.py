"""Open MPI's `mpirun`: hostfile and ssh config from the inventory, env with `-x`, output tagged per rank."""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from fabcheck.launch.config import LauncherConfig
from fabcheck.launch.model import (
    LaunchError,
    LaunchHost,
    LaunchRequest,
    LaunchResult,
    run_process,
    split_tagged,
)

# `--tag-output` prefixes each line with [jobid,rank]<stdout>: (Open MPI 4 and 5).
TAG = re.compile(r"^\[\d+,(?P<rank>\d+)\]<stdout>:(?P<line>.*)$")
INNER_TAG = re.compile(r"\[\d+,(?P<rank>\d+)\]<stdout>:")
# ssh flags that have an ssh_config form; anything else in ansible_ssh_common_args cannot be carried.
_FLAG_OPTIONS = {"-p": "Port", "-l": "User", "-i": "IdentityFile", "-J": "ProxyJump", "-F": None}


def ssh_config_text(hosts: Sequence[LaunchHost]) -> str:
    """An ssh_config that reaches each host by its inventory name the way the inventory says."""
    lines = ["# Written by fabcheck for one mpirun launch, from the inventory's connection variables."]
    for host in hosts:
        target = host.ssh
        lines += [f"Host {host.name}", f"    HostName {target.address}"]
        if target.port:
            lines.append(f"    Port {target.port}")
        if target.user:
            lines.append(f"    User {target.user}")
        if target.private_key:
            lines.append(f"    IdentityFile {target.private_key}")
        lines += [f"    {option}" for option in _config_options(host)]
    lines += ["Host *", "    BatchMode yes", ""]
    return "\n".join(lines)


def _config_options(host: LaunchHost) -> list[str]:
    options, words, i = [], list(host.ssh.extra_options), 0
    while i < len(words):
        word = words[i]
        value = words[i + 1] if i + 1 < len(words) else None
        if word == "-o" and value is not None:
            key, _, setting = value.partition("=")
            options.append(f"{key} {setting}" if _ else value)
            i += 2
        elif word.startswith("-o") and len(word) > 2:
            key, _, setting = word[2:].partition("=")
            options.append(f"{key} {setting}")
            i += 1
        elif word in _FLAG_OPTIONS and _FLAG_OPTIONS[word] and value is not None:
            options.append(f"{_FLAG_OPTIONS[word]} {value}")
            i += 2
        else:
            raise LaunchError(
                f"host {host.name}: ssh option {word!r} of ansible_ssh_common_args/ansible_ssh_extra_args "
                "has no ssh_config form for mpirun's daemons; write it as -o Key=Value or set "
                "fabric_launcher.ssh_config"
            )
    return options


class MpirunLauncher:
    name = "mpirun"

    def __init__(self, config: LauncherConfig) -> None:
        self.config = config

    def argv(self, request: LaunchRequest, hostfile: Path, ssh_config: Path, as_root: bool) -> list[str]:
        agent = shlex.join(["ssh", "-F", str(ssh_config), "-o", "BatchMode=yes"])
        argv = [self.config.binary]
        if as_root:
            argv.append("--allow-run-as-root")  # mpirun refuses root without it
        argv += [
            "--hostfile",
            str(hostfile),
            "-np",
            str(request.nranks),
            "--map-by",
            f"ppr:{request.ranks_per_host}:node",
            "--tag-output",
            "--mca",
            "plm_rsh_agent",
            agent,
            # Every daemon is started from here: the hosts need no ssh keys for each other.
            "--mca",
            "plm_rsh_no_tree_spawn",
            "1",
        ]
        for name, value in request.env.items():
            argv += ["-x", f"{name}={value}"]
        return [*argv, *self.config.extra_args, request.program, *request.args]

    @staticmethod
    def hostfile_text(request: LaunchRequest) -> str:
        return "".join(f"{host.name} slots={request.ranks_per_host}\n" for host in request.hosts)

    def run(self, request: LaunchRequest, environ: Mapping[str, str] | None = None) -> LaunchResult:
        with tempfile.TemporaryDirectory(prefix="fabcheck-mpirun-") as scratch:
            hostfile = Path(scratch, "hostfile")
            hostfile.write_text(self.hostfile_text(request))
            if self.config.ssh_config:
                ssh_config = Path(os.path.expanduser(self.config.ssh_config))
                if not ssh_config.is_file():
                    raise LaunchError(f"fabric_launcher.ssh_config: no such file {ssh_config}")
            else:
                ssh_config = Path(scratch, "ssh_config")
                ssh_config.write_text(ssh_config_text(request.hosts))
                ssh_config.chmod(0o600)  # ssh refuses a config others can write
            argv = self.argv(request, hostfile, ssh_config, as_root=os.geteuid() == 0)
            env = dict(os.environ if environ is None else environ)
            done = run_process(argv, env, request.timeout_s, scratch)
        ranks, merged = split_tagged(done.stdout, TAG, INNER_TAG)
        return LaunchResult(tuple(argv), done.rc, ranks, merged, done.stderr, done.seconds)
