"""Collection through testinfra backends: URLs built from the inventory's connection variables, URLs
named as testinfra users write them, the one round trip as one `host.run` (local:// here, judged the
same as the script run directly), and the bound on a `host.run` that never returns."""

from __future__ import annotations

import secrets
import subprocess
import threading
import time
from pathlib import Path

import hostgate
import pytest

from fabcheck.collect import host as collect
from fabcheck.collect import ssh
from fabcheck.collect.backends import native
from fabcheck.collect.backends import testinfra as backends
from fabcheck.collect.script import split_sections
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.errors import UsageError
from fabcheck.intent.model import FabricIntent

LAB_LIKE = SshTarget(
    "gpu01",
    "10.99.0.2",
    2222,
    "root",
    "/keys/id ed",
    ("-o", "UserKnownHostsFile=/kh", "-o", "ControlPath=/c/%C"),
)
GPU02 = SshTarget("gpu02", "10.99.0.3", 22)


@pytest.mark.parametrize(
    ("backend", "url"),
    [
        ("ssh", "ssh://root@10.99.0.2:2222?ssh_identity_file=%2Fkeys%2Fid+ed"),
        ("paramiko", "paramiko://root@10.99.0.2:2222?ssh_identity_file=%2Fkeys%2Fid+ed"),
        ("ansible", "ansible://gpu01?ansible_inventory=inventory%2Flab"),
        ("local", "local://"),
        ("docker", "docker://gpu01"),
        ("podman", "podman://gpu01"),
        ("kubectl", "kubectl://gpu01"),
    ],
)
def test_urls_from_the_inventory(backend: str, url: str) -> None:
    assert backends.url_for(backend, LAB_LIKE, "inventory/lab") == url


def test_the_ssh_backend_keeps_the_inventory_options_and_no_master() -> None:
    host = backends.host_for("ssh://root@10.99.0.2:2222", LAB_LIKE, TimeLimits(connect_s=4))
    command, args = host.backend._build_ssh_command("true")
    line = " ".join(command) % tuple(args)
    # ssh keeps an option's first value: no master outlives the round trip, whatever follows.
    assert "-o ControlPersist=no -o BatchMode=yes -o UserKnownHostsFile=/kh -o ControlPath=/c/%C" in line
    assert "ConnectTimeout=4" in line
    plain = backends.host_for("ssh://10.99.0.3", GPU02, TimeLimits())
    command, args = plain.backend._build_ssh_command("true")
    line = " ".join(command) % tuple(args)
    assert "ControlPersist=60s" not in line and line.index("ControlPersist=no") < line.index("10.99.0.3")
    assert "StrictHostKeyChecking" not in line  # the user's ssh_config decides, as for ssh itself


def test_host_key_options_are_read_as_ssh_reads_them() -> None:
    options = (
        "-o",
        "StrictHostKeyChecking=No",
        "-oUserKnownHostsFile=/a /b",
        "-o",
        "StrictHostKeyChecking yes",
    )
    assert backends.host_key_options(options) == ("no", ("/a", "/b"), ())
    assert backends.host_key_options(("-o", "GlobalKnownHostsFile /g", "-p", "22")) == (None, (), ("/g",))


def test_named_urls_find_their_hosts() -> None:
    targets = [LAB_LIKE, GPU02]
    urls = backends.parse_urls("ssh://root@gpu01, paramiko://10.99.0.3:22")
    assert backends.assign_urls(urls, targets) == {
        "gpu01": "ssh://root@gpu01",
        "gpu02": "paramiko://10.99.0.3:22",
    }
    assert backends.assign_urls(("local://",), [GPU02]) == {"gpu02": "local://"}
    assert backends.assign_urls(("docker://gpu02",), targets) == {"gpu02": "docker://gpu02"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "--hosts is empty"),
        ("gpu01", "expected a testinfra URL"),
        ("winrm://gpu01", "expected a testinfra URL"),
        ("ssh://gpu09", "matches no GPU host"),
        ("local://", "names no host and this run has 2"),
        ("ssh://gpu01,paramiko://gpu01", "names gpu01 twice"),
    ],
)
def test_bad_urls_are_usage_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        backends.assign_urls(backends.parse_urls(text), [LAB_LIKE, GPU02])


def test_local_backend_is_one_host_run_judged_as_the_script_run_directly() -> None:
    target = SshTarget("gpu01", "localhost")
    limits = TimeLimits(command_s=60)
    via_testinfra = backends.collect_via_testinfra("local://", target, 3, limits)
    assert via_testinfra.complete and via_testinfra.error is None
    token = secrets.token_hex(8)
    direct = subprocess.run(
        ["sh", "-c", collect.remote_command(token, 3, limits)], capture_output=True, text=True, timeout=120
    )
    sections = split_sections(direct.stdout, token)
    assert sections.complete
    assert {k: v.rc for k, v in sections.sections.items()} == {
        k: v.rc for k, v in via_testinfra.sections.items()
    }
    intent = FabricIntent.model_validate({})
    judged = hostgate.judge(via_testinfra, intent)
    again = hostgate.judge(collect.HostCollection("gpu01", sections.sections, True), intent)
    assert [(f.check, f.subject, f.status) for f in judged.findings] == [
        (f.check, f.subject, f.status) for f in again.findings
    ]


def test_a_tool_that_hangs_is_stopped_on_the_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lsmod").write_text("#!/bin/sh\nexec sleep 300\n")
    (tmp_path / "lsmod").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    limits = TimeLimits(command_s=30, per_tool_s=1)
    collection = backends.collect_via_testinfra("local://", SshTarget("gpu01", "localhost"), 3, limits)
    assert collection.sections["lsmod"].rc == 124
    assert "stopped after 1 s" in collection.sections["lsmod"].stderr


def test_a_host_run_that_never_returns_is_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    released = threading.Event()

    class Hung:
        def run(self, _command: str) -> None:
            released.wait(30)

    monkeypatch.setattr(backends, "host_for", lambda *_: Hung())
    start = time.monotonic()
    collection = backends.collect_via_testinfra(
        "paramiko://gpu01", SshTarget("gpu01", "gpu01"), 3, TimeLimits(cap_s=0.2)
    )
    released.set()
    assert collection.expired == ssh.COMMAND and "gave no answer within 0.2 s" in (collection.error or "")
    assert time.monotonic() - start < 25  # bounded by the cap, not by the stuck call


def test_a_backend_that_cannot_connect_is_an_error_for_that_host() -> None:
    target = SshTarget("gpu01", "127.0.0.1", 1)
    for scheme in ("ssh", "paramiko"):
        collection = backends.collect_via_testinfra(
            f"{scheme}://root@127.0.0.1:1", target, 3, TimeLimits(connect_s=2)
        )
        assert not collection.complete and collection.sections == {}
        assert f"testinfra {scheme} backend could not run the collection" in (collection.error or "")
        assert hostgate.judge(collection, FabricIntent.model_validate({})).verdict.value == "error"


def test_native_stays_the_default_and_named_hosts_use_testinfra(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(native, "collect_host", lambda target, *_: calls.append(f"native {target.name}"))
    monkeypatch.setattr(
        backends, "collect_via_testinfra", lambda url, target, *_: calls.append(f"{url} {target.name}")
    )
    collector = backends.TestinfraCollector(urls={"gpu01": "local://"})
    collector(LAB_LIKE, 3, TimeLimits())
    collector(GPU02, 3, TimeLimits())
    backends.TestinfraCollector("paramiko")(GPU02, 3, TimeLimits())
    assert calls == ["local:// gpu01", "native gpu02", "paramiko://10.99.0.3:22 gpu02"]
