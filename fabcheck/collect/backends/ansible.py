"""`fabcheck validate --via ansible`: the collection script runs on every host through one Ansible play.

At fleet scale Ansible already knows how to reach every host (forks, ssh config, bastions, become):
fabcheck writes a one-task play (`ansible.builtin.raw`, so hosts need no Python), runs it with
ansible-runner against the user's inventory and ansible.cfg, and judges the bundles it brings back
centrally, with the same parsers and checks as every other backend. The script is the same one round
trip per host (fabcheck.collect.host) and bounds itself on the host; the task's `timeout` bounds it on
the controller too.

Host keys are checked as ansible-playbook checks them: ansible-runner sets
ANSIBLE_HOST_KEY_CHECKING=False unless its caller sets it, so the run passes the value the user's
environment or ansible.cfg gives (True by default). No ssh master outlives the run: the play ends with
`meta: reset_connection` on every host (in an `always`, so also after a failed or timed-out task),
which stops a ControlPersist master (`ssh -O stop`) instead of leaving it for later runs.
"""

from __future__ import annotations

import math
import os
import secrets
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from fabcheck.collect import host as collect
from fabcheck.collect import ssh
from fabcheck.collect.host import HostCollection
from fabcheck.collect.script import ROUND_TRIP_CAP_BYTES, split_sections
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.errors import UsageError

RESULT_EVENTS = ("runner_on_ok", "runner_on_failed", "runner_on_unreachable")
COLLECT_TASK = "Run the fabcheck collection script"
COMMAND_OF_HOST = "{{ fabcheck_commands[fabcheck_priority[inventory_hostname]] }}"
HOST_KEY_CHECKING = "ANSIBLE_HOST_KEY_CHECKING"
# ansible-runner's event callback replaces a task result whose text is longer than MAX_EVENT_RES characters
# (default 700000) with {} (ansible_runner/display_callback/callback/awx_display.py). The raw task's result
# holds its stdout twice (stdout, stdout_lines), so a round trip up to the cap needs several times the cap.
MAX_EVENT_RES = 4 * ROUND_TRIP_CAP_BYTES


def collection_play(client_s: float) -> list[dict[str, Any]]:
    """The play: one raw task per host, its command picked by the host's lossless priority."""
    return [
        {
            "name": "fabcheck collection, one round trip per host",
            "hosts": "all",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Collect, then close the connection",
                    "block": [
                        {
                            "name": COLLECT_TASK,
                            "ansible.builtin.raw": COMMAND_OF_HOST,
                            "changed_when": False,
                            "failed_when": False,
                            "timeout": max(1, math.ceil(client_s)),
                            # A pty would join stderr to stdout and end lines with \r\n: the markers need
                            # neither.
                            "vars": {"ansible_ssh_use_tty": False},
                        }
                    ],
                    # A ControlPersist master must not outlive the run (it would let later runs reach the
                    # host without checking its key again).
                    "always": [
                        {
                            "name": "Stop the ssh master of this run",
                            "ansible.builtin.meta": "reset_connection",
                        }
                    ],
                }
            ],
        }
    ]


def collect_via_ansible(
    inventory_source: str, priorities: Mapping[str, int], limits: TimeLimits
) -> dict[str, HostCollection]:
    """Every host's collection by one ansible-runner run, each at the lossless priority the gate's plan
    holds for it (GatePlan.host_priorities), by host name; a host the play could not reach is an error
    for that host (never raises for one host)."""
    import ansible_runner

    if not priorities:
        return {}
    token = secrets.token_hex(8)
    commands = {str(p): collect.remote_command(token, p, limits) for p in sorted(set(priorities.values()))}
    with tempfile.TemporaryDirectory(prefix="fabcheck-via-ansible-") as scratch:
        playbook = Path(scratch) / "fabcheck-collect.yml"
        playbook.write_text(yaml.safe_dump(collection_play(limits.client_s), sort_keys=False))
        try:
            runner = ansible_runner.run(
                private_data_dir=scratch,
                project_dir=os.getcwd(),  # the user's ansible.cfg and relative paths, as ansible-playbook
                playbook=str(playbook),
                inventory=os.path.abspath(inventory_source),
                limit=",".join(priorities),
                extravars={
                    "fabcheck_commands": commands,
                    "fabcheck_priority": {name: str(p) for name, p in priorities.items()},
                },
                envvars={
                    "PATH": path_with_ansible(),
                    "ANSIBLE_NOCOLOR": "1",
                    "MAX_EVENT_RES": str(MAX_EVENT_RES),
                    **host_key_checking_env(),
                },
                quiet=True,
                json_mode=False,
            )
        except Exception as err:  # ansible-runner raises its own types for a broken setup
            raise UsageError(f"--via ansible: ansible-runner could not run the play: {err}") from None
        results = results_by_host(runner.events)
        said = _runner_said(runner)
    return {
        name: bundle_of(name, results.get(name), token, priority, said)
        for name, priority in priorities.items()
    }


def host_key_checking_env() -> dict[str, str]:
    """ANSIBLE_HOST_KEY_CHECKING as ansible-playbook would see it here (the environment's, else
    ansible.cfg's, else True): ansible-runner would set False when it is not set."""
    if HOST_KEY_CHECKING in os.environ:
        return {}  # ansible-runner passes the caller's environment on
    from ansible import constants

    checking = constants.config.get_config_value("HOST_KEY_CHECKING")
    return {HOST_KEY_CHECKING: "True" if checking else "False"}


def path_with_ansible() -> str:
    """PATH with the ansible-playbook of fabcheck's own environment first (a venv's bin need not be on
    PATH)."""
    own, path = str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)
    return path if path.split(os.pathsep)[0] == own else os.pathsep.join([own, path])


def results_by_host(events: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, Mapping[str, Any]]]:
    """(event, task result) of each host's raw task, from ansible-runner's events."""
    results: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for event in events:
        if event.get("event") not in RESULT_EVENTS:
            continue
        data = event.get("event_data") or {}
        if data.get("task", COLLECT_TASK) != COLLECT_TASK:
            continue  # the reset_connection after it
        host = data.get("host")
        if isinstance(host, str):
            results[host] = (str(event["event"]), data.get("res") or {})
    return results


def bundle_of(
    host: str, result: tuple[str, Mapping[str, Any]] | None, token: str, priority: int, said: str
) -> HostCollection:
    """Pure: one host's task result -> its collection, as the other backends give it."""
    if result is None:
        why = f"the play gave no result for this host{f' ({said})' if said else ''}"
        return HostCollection(host, {}, False, f"--via ansible: {why}", priority)
    event, res = result
    message = str(res.get("msg") or "").strip()
    if event == "runner_on_unreachable":
        return HostCollection(host, {}, False, f"--via ansible: unreachable: {message[:300]}", priority)
    stdout = res.get("stdout")
    if not res:
        error = (
            f"--via ansible: ansible-runner dropped the task's result (over MAX_EVENT_RES, {MAX_EVENT_RES})"
        )
        return HostCollection(host, {}, False, error, priority)
    if not isinstance(stdout, str):
        error = f"--via ansible: the task printed nothing{f': {message[:300]}' if message else ''}"
        expired = ssh.COMMAND if "expected time frame" in message else None
        return HostCollection(host, {}, False, error, priority, expired)
    parsed = split_sections(stdout, token)
    if parsed.complete:
        return HostCollection(host, parsed.sections, True, None, priority)
    rc = res.get("rc")
    stderr = ssh.ssh_said(str(res.get("stderr") or ""))
    if rc in (124, 137):
        error = "--via ansible: command timeout on the host (the collection was stopped there)"
        return HostCollection(host, parsed.sections, False, error, priority, ssh.COMMAND)
    error = f"--via ansible: the collection ended early (exit {rc})" + (f": {stderr}" if stderr else "")
    return HostCollection(host, parsed.sections, False, error, priority)


def _runner_said(runner: Any) -> str:
    if runner.rc == 0:
        return ""
    try:
        lines = [line.strip() for line in runner.stdout.read().splitlines() if line.strip()]
    except Exception:  # the output file is a courtesy for the message
        lines = []
    tail = "; ".join(lines[-2:])
    return f"ansible-playbook exit {runner.rc}" + (f": {tail[:300]}" if tail else "")


class AnsiblePlay:
    """A collect.backends.BatchCollector: `start` runs the one play for every host; each call serves
    its host's bundle from it."""

    def __init__(self, inventory_source: str) -> None:
        self.inventory_source = inventory_source
        self.bundles: Mapping[str, HostCollection] = {}

    def start(self, priorities: Mapping[str, int], limits: TimeLimits) -> None:
        self.bundles = collect_via_ansible(self.inventory_source, priorities, limits)

    def __call__(self, target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        bundle = self.bundles.get(target.name)
        if bundle is None:
            return HostCollection(target.name, {}, False, "--via ansible: host not in the play", priority)
        return bundle
