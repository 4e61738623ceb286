"""--via ansible: one play (a raw task, no pty) brings back every host's bundle through ansible-runner;
a reachable host's bundle equals the script run directly, an unreachable one is an error for it alone;
task results of every kind turn into collections as the other backends give them."""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import pytest

from fabcheck.collect import host as collect
from fabcheck.collect import ssh
from fabcheck.collect.backends import ansible as via_ansible
from fabcheck.collect.script import split_sections
from fabcheck.collect.ssh import TimeLimits

INVENTORY = """
all:
  hosts:
    here:
      ansible_connection: local
    gone:
      ansible_host: 127.0.0.1
      ansible_port: 1
      ansible_ssh_common_args: -F /dev/null
"""


def test_the_play_brings_back_each_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "hosts.yml").write_text(INVENTORY)
    monkeypatch.chdir(tmp_path)  # the user's ansible.cfg would be read from here, as ansible-playbook does
    limits = TimeLimits(connect_s=2, command_s=60)
    bundles = via_ansible.collect_via_ansible("hosts.yml", {"here": 4, "gone": 3}, limits)
    here, gone = bundles["here"], bundles["gone"]
    assert here.complete and here.error is None and here.priority == 4
    token = secrets.token_hex(8)
    direct = subprocess.run(
        ["sh", "-c", collect.remote_command(token, 4, limits)], capture_output=True, text=True, timeout=120
    )
    assert {k: v.rc for k, v in here.sections.items()} == {
        k: v.rc for k, v in split_sections(direct.stdout, token).sections.items()
    }
    assert not gone.complete and gone.sections == {}
    assert (gone.error or "").startswith("--via ansible: unreachable") and "port 1" in (gone.error or "")


def test_the_play_is_one_raw_task_without_a_pty_and_bounded() -> None:
    (play,) = via_ansible.collection_play(12.5)
    (block,) = play["tasks"]
    (task,) = block["block"]
    assert (
        "ansible.builtin.raw" in task
        and task["timeout"] == 13
        and task["vars"] == {"ansible_ssh_use_tty": False}
    )
    assert block["always"] == [
        {"name": "Stop the ssh master of this run", "ansible.builtin.meta": "reset_connection"}
    ]
    assert play["gather_facts"] is False


# A stand-in for ssh: logs its options (up to the host), answers `-O check|stop`, runs the command here.
FAKE_SSH = """#!/bin/sh
for arg; do last=$arg; done
printf '%s\\n' "$*" | head -c 600 | head -n 1 >> "$(dirname "$0")/ssh.log"
case " $* " in *" -O "*) exit 0 ;; esac
exec /bin/sh -c "$last"
"""


def ssh_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> list[str]:
    """What ansible passed to ssh for one --via ansible run of one host (no ansible.cfg here)."""
    fake = tmp_path / "ssh"
    fake.write_text(FAKE_SSH)
    fake.chmod(0o755)
    (tmp_path / "hosts.yml").write_text(
        f"all:\n  hosts:\n    viafake:\n      ansible_host: 192.0.2.1\n      ansible_ssh_executable: {fake}\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANSIBLE_HOST_KEY_CHECKING", raising=False)
    monkeypatch.delenv("ANSIBLE_CONFIG", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    bundles = via_ansible.collect_via_ansible("hosts.yml", {"viafake": 3}, TimeLimits(2, 60))
    assert bundles["viafake"].complete, bundles["viafake"].error
    return (tmp_path / "ssh.log").read_text().splitlines()


def test_host_keys_are_checked_and_no_master_outlives_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ansible-runner alone would set ANSIBLE_HOST_KEY_CHECKING=False: ssh got StrictHostKeyChecking=no.
    calls = ssh_calls(tmp_path, monkeypatch, {})
    assert calls and not any("StrictHostKeyChecking=no" in call for call in calls), calls
    assert any(" -O stop " in f" {call} " for call in calls), calls  # meta: reset_connection


def test_the_users_own_host_key_setting_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = ssh_calls(tmp_path, monkeypatch, {"ANSIBLE_HOST_KEY_CHECKING": "False"})
    assert all("StrictHostKeyChecking=no" in call for call in calls), calls
    monkeypatch.setenv("ANSIBLE_HOST_KEY_CHECKING", "True")
    assert via_ansible.host_key_checking_env() == {}
    monkeypatch.delenv("ANSIBLE_HOST_KEY_CHECKING")
    assert via_ansible.host_key_checking_env() == {"ANSIBLE_HOST_KEY_CHECKING": "True"}


TOKEN = "0123456789abcdef"
COMPLETE = "".join(
    [
        f"<<<fabcheck {TOKEN} begin lsmod>>>\nx\n",
        f"<<<fabcheck {TOKEN} stderr lsmod>>>\n\n",
        f"<<<fabcheck {TOKEN} end lsmod rc=0>>>\n",
        f"<<<fabcheck {TOKEN} complete>>>\n",
    ]
)


@pytest.mark.parametrize(
    ("result", "complete", "error", "expired"),
    [
        (("runner_on_ok", {"stdout": COMPLETE, "rc": 0}), True, None, None),
        (
            ("runner_on_unreachable", {"msg": "ssh: no route"}),
            False,
            "--via ansible: unreachable: ssh: no route",
            None,
        ),
        (
            ("runner_on_ok", {}),  # ansible-runner's callback emptied a result over MAX_EVENT_RES
            False,
            f"--via ansible: ansible-runner dropped the task's result (over MAX_EVENT_RES, "
            f"{via_ansible.MAX_EVENT_RES})",
            None,
        ),
        (
            ("runner_on_failed", {"msg": "The raw action failed to execute in the expected time frame (5)"}),
            False,
            "--via ansible: the task printed nothing: The raw action failed to execute in the expected time "
            "frame (5)",
            ssh.COMMAND,
        ),
        (
            ("runner_on_ok", {"stdout": COMPLETE.rsplit("<<<", 1)[0], "rc": 124}),
            False,
            "--via ansible: command timeout on the host (the collection was stopped there)",
            ssh.COMMAND,
        ),
        (
            ("runner_on_ok", {"stdout": "", "stderr": "sh: 1: bad\n", "rc": 2}),
            False,
            "--via ansible: the collection ended early (exit 2): sh: 1: bad",
            None,
        ),
        (None, False, "--via ansible: the play gave no result for this host (ansible-playbook exit 4)", None),
    ],
)
def test_task_results_become_collections(
    result, complete: bool, error: str | None, expired: str | None
) -> None:
    bundle = via_ansible.bundle_of("gpu01", result, TOKEN, 3, "ansible-playbook exit 4")
    assert (bundle.complete, bundle.error, bundle.expired) == (complete, error, expired)
    if complete:
        assert bundle.sections["lsmod"].stdout == "x"


def test_events_of_other_tasks_and_hosts_are_not_mixed() -> None:
    events = [
        {"event": "playbook_on_start"},
        {"event": "runner_on_ok", "event_data": {"host": "gpu01", "res": {"stdout": "a"}}},
        {"event": "runner_on_unreachable", "event_data": {"host": "gpu02", "res": {"msg": "down"}}},
        {"event": "runner_on_ok", "event_data": {"res": {"stdout": "no host"}}},
    ]
    assert via_ansible.results_by_host(events) == {
        "gpu01": ("runner_on_ok", {"stdout": "a"}),
        "gpu02": ("runner_on_unreachable", {"msg": "down"}),
    }


def test_a_round_trip_up_to_the_cap_survives_ansible_runners_event_limit() -> None:
    """awx_display empties a result whose str() exceeds MAX_EVENT_RES; the raw task's result holds the
    output as stdout and again as stdout_lines (each line quoted), so the limit is set well above twice
    the round trip's cap."""
    from fabcheck.collect.script import ROUND_TRIP_CAP_BYTES

    line = "x" * 70
    stdout = (line + "\n") * (ROUND_TRIP_CAP_BYTES // (len(line) + 1))
    result = {"stdout": stdout, "stdout_lines": stdout.splitlines(), "stderr": "", "rc": 0}
    assert len(str(result)) <= via_ansible.MAX_EVENT_RES
