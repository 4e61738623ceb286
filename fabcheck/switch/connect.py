"""Open a netmiko session to a switch: the platform's real device_type, host keys verified, bounded.

Host-key checking is never turned off: keys come from the user's known_hosts, or from a known_hosts
file named in the inventory (`switch_known_hosts`, which the lab writes). The password is passed to
netmiko only; no message of this module contains it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabcheck.errors import FabcheckError

CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0  # one command; `nv config apply` on a busy switch takes tens of seconds


class ConnectError(FabcheckError):
    """The switch could not be reached or refused the login; names the switch, never the secret."""


@dataclass(frozen=True)
class SwitchLogin:
    name: str
    device_type: str
    address: str
    port: int
    username: str
    password: str = field(repr=False)
    known_hosts: Path | None = None
    connect_timeout_s: float = CONNECT_TIMEOUT_S
    read_timeout_s: float = READ_TIMEOUT_S
    # netmiko's fast_cli (its own default) cuts its fixed delays about 5x: 0.45 s -> 0.09 s per show
    # command on the lab's NVUE. Pushes keep the conservative timing; the gate's read-only probes use it.
    fast_cli: bool = False

    def netmiko_args(self) -> dict[str, Any]:
        args: dict[str, Any] = {
            "device_type": self.device_type,
            "host": self.address,
            "port": self.port,
            "username": self.username,
            "password": self.password,
            "ssh_strict": True,  # an unknown or changed host key is refused
            "allow_agent": False,
            "use_keys": False,
            "conn_timeout": self.connect_timeout_s,
            "banner_timeout": self.connect_timeout_s,
            "auth_timeout": self.connect_timeout_s,
            "read_timeout_override": self.read_timeout_s,
            "fast_cli": self.fast_cli,
        }
        if self.known_hosts is not None:
            args |= {"system_host_keys": False, "alt_host_keys": True, "alt_key_file": str(self.known_hosts)}
        else:
            args |= {"system_host_keys": True}
        return args


def connect(login: SwitchLogin) -> Any:
    """A connected netmiko session, or ConnectError saying what failed (timeout, key, credentials)."""
    from netmiko import ConnectHandler
    from netmiko.exceptions import (
        NetmikoAuthenticationException,
        NetmikoBaseException,
        NetmikoTimeoutException,
    )
    from paramiko.ssh_exception import SSHException

    where = f"switch {login.name} ({login.address}:{login.port}, {login.device_type})"
    if login.known_hosts is not None and not login.known_hosts.is_file():
        raise ConnectError(f"{where}: known_hosts file {login.known_hosts} does not exist")
    try:
        return ConnectHandler(**login.netmiko_args())
    except NetmikoAuthenticationException:
        raise ConnectError(
            f"{where}: login refused for user {login.username!r} (wrong credentials)"
        ) from None
    except NetmikoTimeoutException as err:
        refused = host_key_refusal(err, login)  # netmiko reports a refused host key as a timeout
        if refused:
            raise ConnectError(f"{where}: {refused}") from None
        raise ConnectError(f"{where}: no SSH answer within {login.connect_timeout_s:g} s") from None
    except (NetmikoBaseException, ValueError) as err:
        # Logged in, then no usable prompt: a switch that went silent, or one too slow to answer in
        # time (netmiko's ReadTimeout, or "Unable to find prompt").
        said = _scrub(
            str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__, login.password
        )
        raise ConnectError(
            f"{where}: logged in, but no prompt within {login.read_timeout_s:g} s ({said[:200]})"
        ) from None
    except SSHException as err:
        # paramiko says "Server '[127.0.3.1]:2201' not found in known_hosts" for an unknown key.
        raise ConnectError(f"{where}: SSH refused: {_scrub(str(err), login.password)}") from None
    except (OSError, EOFError) as err:
        raise ConnectError(f"{where}: connection failed: {_scrub(str(err), login.password)}") from None


def host_key_refusal(err: BaseException, login: SwitchLogin) -> str | None:
    """Why paramiko refused the switch's host key, from the exception netmiko turned into a timeout
    (its __context__): a changed key, or a key known_hosts does not hold; None for anything else."""
    from paramiko.ssh_exception import BadHostKeyException, SSHException

    cause = err.__cause__ or err.__context__
    keys = str(login.known_hosts) if login.known_hosts is not None else "the user's known_hosts"
    if isinstance(cause, BadHostKeyException):
        return (
            f"host key CHANGED: the switch offered {cause.key.get_name()} "
            f"{cause.key.get_fingerprint().hex()}, {keys} holds another key for it; refused "
            "(a replaced switch, or a man in the middle: check, then update known_hosts)"
        )
    if isinstance(cause, SSHException) and "not found in known_hosts" in str(cause):
        return f"host key UNKNOWN: {keys} holds no key for {login.address}:{login.port}; refused"
    return None


def _scrub(text: str, secret: str) -> str:
    return text.replace(secret, "<redacted>") if secret else text
