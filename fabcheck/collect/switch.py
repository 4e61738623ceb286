"""One read-only session to a switch: connect, prepare, the probes over the ports, disconnect.

The gate's switch stage (fabcheck.gate.switch_stage) and the incast captures both read switches
through `collect_switch`: the platform's probes (fabcheck.collect.switch_probes), each bounded by the
login's read timeout; after a timeout or a lost channel no further command is sent. Logins come from
the inventory as the switch_qos role gets them (switch_password from ansible-vault or a lookup, else
FABCHECK_SWITCH_PASSWORD); the password appears in no message. Nothing here judges what it reads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fabcheck.collect.probes import Collected, Probe, collect
from fabcheck.errors import FabcheckError, IntentError
from fabcheck.intent import ansible_session
from fabcheck.intent.fabric import Fabric, Switch
from fabcheck.intent.platforms import platform_named
from fabcheck.switch.connect import ConnectError, SwitchLogin

PASSWORD_ENV = "FABCHECK_SWITCH_PASSWORD"  # the switch_qos role's fallback, read the same way here
GATE_CONNECT_TIMEOUT_S = 10.0
GATE_READ_TIMEOUT_S = 20.0  # one show command; a healthy switch answers in well under a second


class SessionLost(FabcheckError):
    """A show command timed out or the channel closed; the session's remaining probes are not sent."""


Connect = Callable[[SwitchLogin], Any]


def collect_switch(
    login: SwitchLogin, platform: str, probes: Sequence[Probe], ports: Sequence[str], connect: Connect
) -> Collected | str:
    """One read-only session: connect, prepare, the probes over the ports, disconnect. A str says why
    the switch could not be read at all (unreachable, or the session died before any probe)."""
    try:
        connection = connect(login)
    except ConnectError as err:
        return str(err)
    try:
        runner = _Runner(connection, login)
        try:
            runner.prepare(platform_named(platform).needs_enable)
        except SessionLost as err:
            return str(err)
        return collect(runner.run, probes, ports, f"switch {login.name}")
    finally:
        _disconnect(connection)


class _Runner:
    """Sends one show command at a time on the session; after a timeout or a lost channel, no more."""

    def __init__(self, connection: Any, login: SwitchLogin) -> None:
        self.connection = connection
        self.login = login
        self.lost: str | None = None

    def prepare(self, needs_enable: bool) -> None:
        """Privileged mode first where the platform's shows need it (its record's needs_enable)."""
        if needs_enable:
            self._guard("enable", self.connection.enable)

    def run(self, command: str) -> str:
        if self.lost is not None:
            raise SessionLost(f"not sent: the session was lost earlier ({self.lost})")
        timeout = self.login.read_timeout_s
        output = self._guard(command, lambda: self.connection.send_command(command, read_timeout=timeout))
        return str(output)

    def _guard(self, what: str, call: Callable[[], Any]) -> Any:
        from netmiko.exceptions import NetmikoBaseException
        from paramiko.ssh_exception import SSHException

        try:
            return call()
        except (NetmikoBaseException, SSHException, OSError, EOFError) as err:
            reason = _scrub(
                str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__, self.login
            )
            self.lost = f"`{what}`: {reason[:200]}"
            raise SessionLost(f"switch {self.login.name}: {self.lost}") from None


def _scrub(text: str, login: SwitchLogin) -> str:
    return text.replace(login.password, "<redacted>") if login.password else text


def _disconnect(connection: Any) -> None:
    try:
        connection.disconnect()
    except Exception:  # a session that is already gone needs no closing
        return


# -- credentials, as the switch_qos role reads them -------------------------------------------------


def switch_login(
    switch: Switch,
    variables: Mapping[str, Any],
    *,
    connect_timeout_s: float = GATE_CONNECT_TIMEOUT_S,
    read_timeout_s: float = GATE_READ_TIMEOUT_S,
    environ: Mapping[str, str] | None = None,
) -> SwitchLogin:
    """The login of one switch from its inventory variables (the password resolved, never shown)."""
    password = _password(
        switch.name, variables.get("switch_password"), variables, os.environ if environ is None else environ
    )
    known_hosts = variables.get("switch_known_hosts")
    return SwitchLogin(
        name=switch.name,
        device_type=switch.device_type,
        address=switch.address,
        port=switch.ssh_port,
        username=switch.username,
        password=password,
        known_hosts=Path(str(known_hosts)) if known_hosts else None,
        connect_timeout_s=connect_timeout_s,
        read_timeout_s=read_timeout_s,
        fast_cli=True,  # read-only show commands: netmiko's default timing is safe and 5x faster here
    )


def _password(name: str, raw: Any, variables: Mapping[str, Any], environ: Mapping[str, str]) -> str:
    if raw is None:
        value = environ.get(PASSWORD_ENV, "")
        if not value:
            raise IntentError([f"{name}: switch_password is not set and {PASSWORD_ENV} is empty"])
        return value
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    ansible_session.init_collection_loader()  # lookups by full name, as in ansible-playbook
    try:
        value = Templar(loader=DataLoader(), variables=dict(variables)).template(raw)
    except Exception:  # ansible raises many types; its message may quote the secret
        raise IntentError(
            [f"{name}: switch_password: cannot resolve the value (vault password or lookup)"]
        ) from None
    text = str(value)
    if not text:
        raise IntentError([f"{name}: switch_password resolves to an empty string"])
    return text


def logins_from_inventory(fabric: Fabric, hosts: Sequence[Any], **timeouts: float) -> dict[str, SwitchLogin]:
    """Logins for every switch of `fabric` from the loader's HostEntry records (`inventory.hosts`)."""
    by_name = {entry.name: entry for entry in hosts}
    return {
        switch.name: switch_login(switch, by_name[switch.name].variables, **timeouts)
        for switch in fabric.switches
    }
