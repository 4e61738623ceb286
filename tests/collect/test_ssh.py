"""fabcheck.collect.ssh: the ssh argv built from Ansible host variables (host key checking kept, no
master outliving the round trip), and the time limits of one round trip."""

from __future__ import annotations

import shlex

import pytest

from fabcheck.collect.host import (
    remote_command,
)
from fabcheck.collect.ssh import SshTarget, TimeLimits, fast_kex_known
from tests.checks.host.hostdata import TOKEN


def test_ssh_argv_from_ansible_host_vars_keeps_host_key_checking() -> None:
    fast_kex_known.cache_clear()  # another test of this worker may have asked a fake `ssh` on its PATH
    target = SshTarget.from_host_vars(
        "gpu01",
        {
            "ansible_host": "10.0.0.1",
            "ansible_port": 2222,
            "ansible_user": "root",
            "ansible_ssh_private_key_file": "/keys/id",
            "ansible_ssh_common_args": "-o UserKnownHostsFile='/k h/known' -o StrictHostKeyChecking=yes",
        },
    )
    argv = target.argv("true", 10)
    assert argv[:4] == ["ssh", "-n", "-o", "BatchMode=yes"]
    assert argv[-3:] == ["--", "10.0.0.1", "true"]
    assert argv[4:6] == ["-p", "2222"] and argv[6:8] == ["-l", "root"] and argv[8:10] == ["-i", "/keys/id"]
    assert "UserKnownHostsFile=/k h/known" in argv
    assert not any("StrictHostKeyChecking=no" in a for a in argv)
    bare = SshTarget.from_host_vars("gpu02", {}).argv("true", 5)
    assert bare == [
        "ssh", "-n", "-o", "BatchMode=yes", "-o", "ControlPersist=no", "-o", "ConnectTimeout=5",
        "-o", "KexAlgorithms=^curve25519-sha256", "--", "gpu02", "true",
    ]  # fmt: skip


def test_no_ssh_master_outlives_the_round_trip_whatever_the_inventory_persists() -> None:
    # ssh keeps an option's first value: ours comes before the inventory's ControlPersist=60s, so a
    # master this round trip opens closes with it (open connections stay within --concurrency).
    options = "-o ControlMaster=auto -o ControlPersist=60s -o ControlPath=/run/cm/%C"
    argv = SshTarget.from_host_vars("gpu01", {"ansible_ssh_common_args": options}).argv("true", 5)
    persist = [argv[i + 1] for i, word in enumerate(argv) if word == "-o" and "ControlPersist" in argv[i + 1]]
    assert persist == ["ControlPersist=no", "ControlPersist=60s"]
    assert "ControlMaster=auto" in argv  # an open master (Ansible's) is still used


def test_good_connection_variables_in_every_form_ansible_allows() -> None:
    target = SshTarget.from_host_vars("gpu01", {"ansible_port": "2222", "ansible_ssh_user": "ops"})
    assert (target.port, target.user, target.address) == (2222, "ops", "gpu01")
    assert SshTarget.from_host_vars("gpu01", {"ansible_ssh_port": 22}).port == 22
    assert (
        SshTarget.from_host_vars("gpu01", {"ansible_port": None, "ansible_ssh_common_args": ""}).port is None
    )


def test_time_limits_split_connect_host_tool_and_client() -> None:
    limits = TimeLimits(connect_s=10, command_s=30)
    assert (limits.ssh_connect_timeout, limits.host_s, limits.tool_s) == (10, 30, 10)
    assert limits.client_s == 10 + 30 + 5  # the host's own limit fires before the client gives up
    cut = limits.within(12.5)
    assert cut.client_s == 12.5 and cut.host_s == 13 and cut.ssh_connect_timeout == 10
    assert limits.within(100) is limits
    assert TimeLimits(command_s=300, per_tool_s=2).tool_s == 2
    assert TimeLimits(command_s=3, per_tool_s=60).tool_s == 3  # never longer than the host's own limit
    assert TimeLimits(command_s=300, per_tool_s=2).within(10).tool_s == 2
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            TimeLimits(connect_s=bad)
    command = shlex.split(remote_command(TOKEN, 3, limits))
    assert command[:2] == ["sh", "-c"] and command[3:5] == ["fabcheck-collect", "30"]
    assert command[-4:] == [TOKEN, "3", "10", "0"]  # token, lossless priority, seconds per tool, window


def test_the_counter_window_grows_the_host_limit_not_a_tool_limit() -> None:
    limits = TimeLimits(connect_s=10, command_s=30).with_window(5)
    assert (limits.host_s, limits.tool_s, limits.counter_window_s) == (35, 10, 5)
    assert limits.client_s == 10 + 35 + 5
    command = shlex.split(remote_command(TOKEN, 3, limits))
    assert command[3:5] == ["fabcheck-collect", "35"] and command[-4:] == [TOKEN, "3", "10", "5"]
    # Cut to a deadline, the window keeps at most half of what is left; the readings get the rest.
    cut = limits.within(8)
    assert (cut.counter_window_s, cut.command_s, cut.client_s) == (4, 4, 8)
    assert limits.within(100) is limits
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError):
            TimeLimits(counter_window_s=bad)  # type: ignore[arg-type]
