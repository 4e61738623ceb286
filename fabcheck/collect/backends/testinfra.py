"""Host collection through pytest-testinfra's backends: the same one-round-trip script, one `host.run`.

`--backend ssh|paramiko|ansible|local|docker|podman|kubectl` builds each inventory host's testinfra URL
from the connection variables Ansible uses (SshTarget); `--hosts URL,...` names hosts exactly as
testinfra users write them (`ssh://user@host:port`, `paramiko://...`, `ansible://host?ansible_inventory=`,
`local://`, `docker://container`). Either way the host's collection script (fabcheck.collect.host) runs
as ONE `host.run(...)`. testinfra's `host.run` has no timeout of its own: the script bounds itself on the
host (`timeout`), and the call is bounded here too (it runs in a thread that is given up on at the
round trip's limit). The default backend, `native`, is fabcheck's own OpenSSH round trip.

Host keys are the inventory's policy, never weakened here. OpenSSH backends (ssh, safe-ssh, and
ansible:// hosts reached over ssh) get the inventory's ssh options as they are, behind
`ControlPersist=no` (no master outlives its round trip; testinfra's own default keeps one 60 s).
testinfra's paramiko backend would accept any key with a warning (WarningPolicy, and no known_hosts
loaded): here it loads the known_hosts files OpenSSH would read (the inventory's UserKnownHostsFile /
GlobalKnownHostsFile, else ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts) and refuses an unknown
key, unless the user opted out explicitly (`-o StrictHostKeyChecking=no|off|accept-new` in the
inventory's ssh options, or `StrictHostKeyChecking no` in the ssh_config testinfra reads); a changed
key is refused always.
"""

from __future__ import annotations

import os
import secrets
import shlex
import tempfile
import threading
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fabcheck.collect import host as collect
from fabcheck.collect import ssh
from fabcheck.collect.backends import native
from fabcheck.collect.host import HostCollection
from fabcheck.collect.script import split_sections
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.errors import UsageError

NATIVE = "native"
# testinfra backends whose URL fabcheck can build from an inventory host (the host part per backend).
TESTINFRA_BACKENDS = ("ssh", "paramiko", "ansible", "local", "docker", "podman", "kubectl")
BACKENDS = (NATIVE, *TESTINFRA_BACKENDS)
# Host-side `timeout` exits 124 (TERM) or 137 (KILL) when the collection ran past its limit.
HOST_TIMEOUT_RCS = (124, 137)
NO_MASTER = ["-o", "ControlPersist=no"]  # ssh keeps an option's first value: this one wins
# StrictHostKeyChecking values by which a user accepts keys not in known_hosts (ssh_config(5)).
ACCEPTS_UNKNOWN_KEYS = ("no", "off", "accept-new")
DEFAULT_USER_KNOWN_HOSTS = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
DEFAULT_GLOBAL_KNOWN_HOSTS = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")


def control_dir() -> str:
    """A private directory for ssh connection sharing (ControlPath), one per user."""
    path = os.path.join(tempfile.gettempdir(), f"fabcheck-cp-{os.getuid()}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def url_for(backend: str, target: SshTarget, inventory_source: str | None = None) -> str:
    """The testinfra URL that reaches `target` with `backend`, from the inventory's connection settings."""
    if backend not in TESTINFRA_BACKENDS:
        raise UsageError(f"--backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    if backend in ("docker", "podman", "kubectl"):
        return f"{backend}://{urllib.parse.quote(target.name, safe='')}"
    if backend == "local":
        return "local://"
    if backend == "ansible":
        query = {"ansible_inventory": inventory_source} if inventory_source else {}
        return f"ansible://{target.name}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    user = f"{urllib.parse.quote(target.user, safe='')}@" if target.user else ""
    port = f":{target.port}" if target.port else ""
    query = {"ssh_identity_file": target.private_key} if target.private_key else {}
    tail = f"?{urllib.parse.urlencode(query)}" if query else ""
    return f"{backend}://{user}{target.address}{port}{tail}"


def url_host(url: str) -> str:
    """The host part of a testinfra URL: 'gpu01' of 'ssh://root@gpu01:22', '' of 'local://'."""
    netloc = urllib.parse.urlparse(url).netloc
    return netloc.rpartition("@")[2]


def parse_urls(text: str) -> tuple[str, ...]:
    """A comma list of testinfra URLs; UsageError naming the first one testinfra cannot take."""
    urls = tuple(part.strip() for part in text.split(",") if part.strip())
    if not urls:
        raise UsageError("--hosts is empty: give testinfra URLs such as ssh://root@gpu01,paramiko://gpu02")
    for url in urls:
        scheme = urllib.parse.urlparse(url).scheme if "://" in url else ""
        if scheme not in TESTINFRA_BACKENDS and scheme != "safe-ssh":
            raise UsageError(
                f"--hosts {url!r}: expected a testinfra URL, BACKEND://HOST, with BACKEND one of "
                f"{', '.join(TESTINFRA_BACKENDS)}"
            )
    return urls


def assign_urls(urls: Sequence[str], targets: Sequence[SshTarget]) -> dict[str, str]:
    """Which inventory host each URL reaches: its host part names the host, its ansible_host, or its
    ansible_host:port. `local://` (no host) stands for the only host of the run. UsageError otherwise."""
    assigned: dict[str, str] = {}
    for url in urls:
        wanted = url_host(url)
        if not wanted:
            if len(targets) != 1:
                raise UsageError(
                    f"--hosts {url!r} names no host and this run has {len(targets)}: write local://NAME"
                )
            matches = [targets[0]]
        else:
            matches = [t for t in targets if wanted in (t.name, t.where)]
            matches = matches or [t for t in targets if t.address == wanted]
        if len(matches) != 1:
            known = ", ".join(t.name for t in targets) or "none"
            why = "matches no" if not matches else "matches more than one"
            raise UsageError(f"--hosts {url!r} {why} GPU host of this run (hosts: {known})")
        name = matches[0].name
        if name in assigned:
            raise UsageError(f"--hosts names {name} twice ({assigned[name]!r} and {url!r})")
        assigned[name] = url
    return assigned


@dataclass
class TestinfraCollector:
    """A Collector: each host through its testinfra URL (named, or built for `backend`), hosts without one
    through the native ssh round trip."""

    backend: str = NATIVE
    urls: Mapping[str, str] = field(default_factory=dict)  # inventory host -> testinfra URL
    inventory_source: str | None = None  # for ansible:// URLs built from the inventory

    __test__ = False  # not a pytest test class, whatever its name says

    def url_of(self, target: SshTarget) -> str | None:
        if target.name in self.urls:
            return self.urls[target.name]
        if self.backend == NATIVE:
            return None
        return url_for(self.backend, target, self.inventory_source)

    def __call__(self, target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
        url = self.url_of(target)
        if url is None:
            return native.collect_host(target, priority, limits)
        return collect_via_testinfra(url, target, priority, limits)


def host_for(url: str, target: SshTarget, limits: TimeLimits) -> Any:
    """The testinfra host of a URL, with the inventory's ssh options and connection sharing for ssh."""
    import testinfra

    scheme = urllib.parse.urlparse(url).scheme
    options: dict[str, Any] = {}
    if scheme in ("ssh", "safe-ssh"):
        options["timeout"] = limits.ssh_connect_timeout
        # testinfra %-formats its ssh command line and escapes ssh_extra_args only: hence "%%C".
        options["controlpath"] = os.path.join(control_dir(), "%%C")
        options["ssh_extra_args"] = shlex.join([*NO_MASTER, "-o", "BatchMode=yes", *target.extra_options])
        options["controlpersist"] = 0
    elif scheme == "paramiko":
        options["timeout"] = limits.ssh_connect_timeout
    elif scheme == "ansible":
        ansible_tools_on_path()
    query = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
    options = {key: value for key, value in options.items() if key not in query}
    host = testinfra.get_host(url, **options)
    keep_host_key_policy(host, target)
    return host


def keep_host_key_policy(host: Any, target: SshTarget) -> None:
    """Make the host's transport check host keys as the inventory says, and keep no ssh master."""
    from testinfra.backend.ansible import AnsibleBackend
    from testinfra.backend.paramiko import ParamikoBackend
    from testinfra.backend.ssh import SshBackend

    backend = host.backend
    if isinstance(backend, AnsibleBackend):
        if backend.force_ansible:
            return  # runs ansible itself: ansible's own host_key_checking applies
        # The host testinfra reaches the ansible:// host through (cached: run() gets this one).
        inner = backend.ansible_runner.get_host(
            backend.host, ssh_config=backend.ssh_config, ssh_identity_file=backend.ssh_identity_file
        )
        if inner is not None:
            keep_host_key_policy(inner, target)
    elif isinstance(backend, ParamikoBackend):
        # testinfra builds its client on first use (a cached property): this one is used instead.
        backend.__dict__["client"] = checked_paramiko_client(backend, target)
    elif isinstance(backend, SshBackend):
        backend.controlpersist = 0
        backend.ssh_extra_args = " ".join([*NO_MASTER, backend.ssh_extra_args or ""]).strip()


def host_key_options(options: Sequence[str]) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """Pure: StrictHostKeyChecking, UserKnownHostsFile and GlobalKnownHostsFile from ssh `-o` options,
    each the first value given (as ssh takes them)."""
    found: dict[str, str] = {}
    words = list(options)
    for index, word in enumerate(words):
        if word == "-o" and index + 1 < len(words):
            setting = words[index + 1]
        elif word.startswith("-o") and len(word) > 2:
            setting = word[2:]
        else:
            continue
        key, _, value = setting.replace("=", " ", 1).partition(" ")
        found.setdefault(key.strip().lower(), value.strip())
    strict = found.get("stricthostkeychecking")
    return (
        strict.lower() if strict else None,
        tuple(shlex.split(found.get("userknownhostsfile", ""))),
        tuple(shlex.split(found.get("globalknownhostsfile", ""))),
    )


def checked_paramiko_client(backend: Any, target: SshTarget) -> Any:
    """A connected paramiko client for testinfra's paramiko backend that checks host keys (module
    docstring); raises what paramiko raises (BadHostKeyException, SSHException: not in known_hosts)."""
    import paramiko
    from testinfra.backend.paramiko import IgnorePolicy

    strict, user_files, global_files = host_key_options(target.extra_options)
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    settings: dict[str, Any] = {
        "hostname": backend.host.name,
        "port": int(backend.host.port) if backend.host.port else 22,
        "username": backend.host.user,
        "password": backend.host.password,
        "timeout": backend.timeout,
    }
    config_file = backend.ssh_config or os.path.expanduser("~/.ssh/config")
    if os.path.isfile(config_file):
        config = paramiko.SSHConfig.from_path(config_file)
        # testinfra's reading of ssh_config (host, user, port, key, proxy; `StrictHostKeyChecking no`
        # sets its IgnorePolicy, the user's own opt-out).
        backend._load_ssh_config(client, settings, config, os.path.dirname(config_file))
        user_files = user_files or tuple(
            shlex.split(config.lookup(backend.host.name).get("userknownhostsfile", ""))
        )
    # paramiko has no getter for the policy it keeps in SSHClient._policy, and its stubs do not declare it.
    ignored = isinstance(client._policy, IgnorePolicy)  # type: ignore[attr-defined]
    if not ignored and strict in ACCEPTS_UNKNOWN_KEYS:
        client.set_missing_host_key_policy(paramiko.WarningPolicy())
    for known in (*(user_files or DEFAULT_USER_KNOWN_HOSTS), *(global_files or DEFAULT_GLOBAL_KNOWN_HOSTS)):
        path = os.path.expanduser(known)
        if os.path.isfile(path):
            client.load_system_host_keys(path)  # read only: paramiko never writes system host keys
    if backend.ssh_identity_file:
        settings["key_filename"] = backend.ssh_identity_file
    client.connect(**settings)
    return client


def ansible_tools_on_path() -> None:
    """testinfra's ansible backend runs `ansible-inventory` through a shell: find fabcheck's own (a
    virtualenv's bin need not be on PATH)."""
    from fabcheck.collect.backends.ansible import path_with_ansible

    with _PATH_LOCK:
        os.environ["PATH"] = path_with_ansible()


_PATH_LOCK = threading.Lock()


def collect_via_testinfra(url: str, target: SshTarget, priority: int, limits: TimeLimits) -> HostCollection:
    """One `host.run` of the collection script; never raises for a host that cannot be reached."""
    token = secrets.token_hex(8)
    command = collect.remote_command(token, priority, limits)
    answer: dict[str, Any] = {}

    def run() -> None:
        try:
            answer["result"] = host_for(url, target, limits).run(command)
        except Exception as err:  # testinfra backends raise their transport's own types
            answer["error"] = err

    worker = threading.Thread(target=run, name=f"fabcheck-testinfra-{target.name}", daemon=True)
    worker.start()
    worker.join(limits.client_s)
    scheme = urllib.parse.urlparse(url).scheme
    if worker.is_alive():
        # The host's own `timeout` ends the script there; this thread's call ends with it.
        error = (
            f"command timeout: `host.run` through testinfra {scheme} gave no answer within "
            f"{limits.client_s:g} s (host limit {limits.host_s} s)"
        )
        return HostCollection(target.name, {}, False, error, priority, ssh.COMMAND)
    if "error" in answer:
        return HostCollection(target.name, {}, False, _backend_said(scheme, answer["error"]), priority)
    result = answer["result"]
    stdout = result.stdout_bytes.decode("utf-8", "replace")
    stderr = result.stderr_bytes.decode("utf-8", "replace")
    parsed = split_sections(stdout, token)
    if parsed.complete:
        return HostCollection(target.name, parsed.sections, True, None, priority)
    said = ssh.ssh_said(stderr)
    if result.rc in HOST_TIMEOUT_RCS:
        error = f"command timeout on the host: the collection did not finish within {limits.host_s} s"
        return HostCollection(target.name, parsed.sections, False, error, priority, ssh.COMMAND)
    error = f"collection through testinfra {scheme} ended early (exit {result.rc})" + (
        f": {said}" if said else ""
    )
    return HostCollection(target.name, parsed.sections, False, error, priority)


def _backend_said(scheme: str, err: Exception) -> str:
    text = str(err).strip() or type(err).__name__
    # testinfra's ssh backend raises RuntimeError(CommandResult) on exit 255: its stderr is the reason.
    stderr = getattr(err.args[0], "stderr", None) if err.args else None
    if isinstance(stderr, str) and stderr.strip():
        text = ssh.ssh_said(stderr)
    text = text if len(text) <= 300 else text[:300] + "..."
    return f"testinfra {scheme} backend could not run the collection: {type(err).__name__}: {text}"
