"""The testinfra paramiko backend checks host keys as the inventory says: against a paramiko ssh server
on 127.0.0.1, a key known_hosts holds is accepted, an unknown key and a changed key are refused (testinfra
alone accepts both with a warning), and only the inventory's `StrictHostKeyChecking=no` accepts an
unknown one. A switch session (netmiko) whose host key is refused says so, not "no SSH answer"."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import paramiko
import pytest

from fabcheck.collect.backends import testinfra as backends
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.switch.connect import ConnectError, SwitchLogin, connect

PASSWORD = "paramiko-test-password"


class _Server(paramiko.ServerInterface):
    def check_auth_password(self, username: str, password: str) -> int:
        return paramiko.AUTH_SUCCESSFUL if password == PASSWORD else paramiko.AUTH_FAILED

    def get_allowed_auths(self, username: str) -> str:
        return "password"


@pytest.fixture
def server() -> Iterator[SimpleNamespace]:
    """An ssh server with its own host key that accepts the password (each connection one thread)."""
    host_key = paramiko.RSAKey.generate(2048)
    listener = socket.create_server(("127.0.0.1", 0))
    transports: list[paramiko.Transport] = []

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            transport = paramiko.Transport(connection)
            transport.add_server_key(host_key)
            transports.append(transport)
            try:
                transport.start_server(server=_Server())
            except (paramiko.SSHException, EOFError, OSError):
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield SimpleNamespace(port=listener.getsockname()[1], key=host_key)
    listener.close()
    for transport in transports:
        transport.close()


def known_hosts(path: Path, port: int, key: paramiko.PKey) -> Path:
    path.write_text(f"[127.0.0.1]:{port} {key.get_name()} {key.get_base64()}\n")
    return path


def client_for(port: int, options: tuple[str, ...]) -> paramiko.SSHClient:
    target = SshTarget("gpu01", "127.0.0.1", port, "root", None, options)
    url = f"paramiko://root:{PASSWORD}@127.0.0.1:{port}"
    backend = backends.host_for(url, target, TimeLimits(connect_s=20)).backend
    return backend.client  # type: ignore[no-any-return]


def test_a_known_key_is_accepted(server: SimpleNamespace, tmp_path: Path) -> None:
    kh = known_hosts(tmp_path / "known_hosts", server.port, server.key)
    client = client_for(server.port, ("-o", f"UserKnownHostsFile={kh}", "-o", "StrictHostKeyChecking=yes"))
    assert client.get_transport().is_authenticated()  # type: ignore[union-attr]
    client.close()


def test_an_unknown_key_is_refused(server: SimpleNamespace, tmp_path: Path) -> None:
    (tmp_path / "empty").write_text("")
    with pytest.raises(paramiko.SSHException, match="not found in known_hosts"):
        client_for(server.port, ("-o", f"UserKnownHostsFile={tmp_path / 'empty'}"))


def test_a_changed_key_is_refused_even_when_unknown_keys_are_accepted(
    server: SimpleNamespace, tmp_path: Path
) -> None:
    kh = known_hosts(tmp_path / "known_hosts", server.port, paramiko.RSAKey.generate(2048))
    for strict in ("yes", "no"):
        with pytest.raises(paramiko.BadHostKeyException):
            client_for(
                server.port, ("-o", f"UserKnownHostsFile={kh}", "-o", f"StrictHostKeyChecking={strict}")
            )


def test_the_inventorys_opt_out_accepts_an_unknown_key(server: SimpleNamespace, tmp_path: Path) -> None:
    (tmp_path / "empty").write_text("")
    options = ("-o", f"UserKnownHostsFile={tmp_path / 'empty'}", "-o", "StrictHostKeyChecking=no")
    client = client_for(server.port, options)
    assert client.get_transport().is_authenticated()  # type: ignore[union-attr]
    client.close()


@pytest.mark.parametrize("case", ["changed", "unknown"])
def test_a_switch_whose_key_is_refused_is_reported_so_not_as_a_timeout(
    server: SimpleNamespace, tmp_path: Path, case: str
) -> None:
    # netmiko turns paramiko's refusal into NetmikoTimeoutException: the reason must survive.
    if case == "changed":
        kh = known_hosts(tmp_path / "known_hosts", server.port, paramiko.RSAKey.generate(2048))
    else:
        kh = tmp_path / "known_hosts"
        kh.write_text("")
    login = SwitchLogin("leaf01", "linux", "127.0.0.1", server.port, "admin", PASSWORD, kh, 20.0)
    with pytest.raises(ConnectError) as refused:
        connect(login)
    said = str(refused.value)
    assert "no SSH answer" not in said and PASSWORD not in said
    if case == "changed":
        assert f"host key CHANGED: the switch offered ssh-rsa {server.key.get_fingerprint().hex()}" in said
    else:
        assert f"host key UNKNOWN: {kh} holds no key for 127.0.0.1:{server.port}; refused" in said
