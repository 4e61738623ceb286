"""One driver class per switch platform; the push algorithm is written once against this interface.

A driver stages the rendered config in the platform's own transaction (NVUE pending revision, EOS
configure session, SONiC checkpoint + patch), shows the platform's own diff, and then either commits
it atomically or discards it. The running config changes only in `commit`, so a push that fails or
loses its connection anywhere before that leaves the switch on its previous config.

A push may be scoped to some concerns (fabcheck.switch.concerns): the driver then stages only the
operations of those concerns, so every other concern stays exactly as it runs, stale entries
included. Where the platform does not persist on commit, a push whose save was lost is finished by
the next one: running already holds the config, the startup config does not, so it saves.

A push holds a lock ON the switch for its whole run (`SwitchLock`: a directory created with
`mkdir`, atomic on the switch's own filesystem), so two pushes at one switch never interleave: the
second refuses, naming the run that holds it, and reports that failure (never success). Staged work
that is not this push's own (an operator's pending NVUE revision, EOS config session) is never
discarded: the driver stops with a message naming it.
"""

from __future__ import annotations

import abc
import contextlib
import os
import re
import secrets
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from fabcheck.errors import FabcheckError
from fabcheck.intent.platforms import UnknownPlatform, platform_named, resolve
from fabcheck.switch.concerns import ALL_CONCERNS, chosen_concerns, describe
from fabcheck.switch.render import RenderedConfig


class PushError(FabcheckError):
    """A push that did not complete. `rolled_back` says whether the switch is on its previous config;
    `unknown` that nobody knows yet (a commit still running or cut off): read the switch back."""

    def __init__(self, message: str, *, rolled_back: bool, diff: str = "", unknown: bool = False) -> None:
        self.rolled_back = rolled_back and not unknown
        self.unknown = unknown
        self.diff = diff
        super().__init__(message)


class SwitchLocked(PushError):
    """Another run holds the switch's push lock; nothing was touched."""


class ForeignWork(PushError):
    """Staged work on the switch that is not this push's (an operator's pending revision or
    session): left exactly as found, the push stops naming it and how to proceed."""


LOCK_DIR = "/tmp/fabcheck-push.lock"  # tmpfs on the switches fabcheck drives: a reboot frees it
NOTE_PREFIX = "staged-"
LOCK_TTL_S = 1800  # a lock older than this is a push that died holding it (SIGKILL, lost power)
_OWNER = re.compile(
    r"^(?P<run>[A-Za-z0-9_-]+)@(?P<host>[A-Za-z0-9_-]+)\.pid-(?P<pid>\d+)\.until-(?P<until>\d+)$"
)


@dataclass
class SwitchLock:
    """The push lock on one switch: `mkdir LOCK_DIR` succeeds for exactly one caller; the owner is
    recorded as a subdirectory `<run>@<host>.pid-<shell pid>.until-<epoch>` (readable by `ls`, no
    quoting needed). A lock whose shell is gone (`ls -d /proc/PID` fails: the SSH session that held
    it dropped, so its shell was hung up) or whose time ran out is stale and taken over.

    `shell` runs one plain shell command on the switch and returns its output; `pid_command` prints
    the process id that lives as long as this login (`echo $$` in a login shell)."""

    shell: Callable[[str], str]
    switch: str
    run: str
    host: str = ""
    pid_command: str = "echo $$"
    # Notes a push left in the lock (`note`): what a dead push had staged, for the one taking over.
    inherited: tuple[str, ...] = ()

    @classmethod
    def new(cls, shell: Callable[[str], str], switch: str, pid_command: str = "echo $$") -> SwitchLock:
        host = re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())[:40] or "controller"
        return cls(shell, switch, f"{os.getpid()}-{secrets.token_hex(3)}", host, pid_command)

    def owner_entry(self, pid: str, now: float) -> str:
        return f"{self.run}@{self.host}.pid-{pid}.until-{int(now + LOCK_TTL_S)}"

    def acquire(self) -> None:
        pid = self.shell(self.pid_command).strip()
        if not pid.isdigit():
            raise PushError(
                f"{self.switch}: `{self.pid_command}` printed {pid[:80]!r}, not a process id",
                rolled_back=True,
            )
        for _attempt in range(2):
            output = self.shell(f"mkdir {LOCK_DIR}")
            if not output.strip():
                self.shell(f"mkdir {LOCK_DIR}/{self.owner_entry(pid, time.time())}")
                return
            if "File exists" not in output:
                raise PushError(
                    f"{self.switch}: could not take the push lock ({LOCK_DIR}): {output.strip()[:200]}",
                    rolled_back=True,
                )
            holder = self.holder()
            if holder is not None and holder[1] > time.time() and self._alive(holder[2]):
                run, until, _pid = holder
                raise SwitchLocked(
                    f"{self.switch}: another push ({run}) holds the switch's push lock {LOCK_DIR} until "
                    f"{time.strftime('%H:%M:%S UTC', time.gmtime(until))}; nothing was changed. Rerun "
                    f"when it has finished (if no push is running, remove the lock: rm -r {LOCK_DIR})",
                    rolled_back=True,
                )
            if holder is None and _attempt == 0:
                time.sleep(1.0)  # the owner may be between its two mkdir; look once more
                continue
            # Expired, its shell gone, or never owned: a push that died holding it.
            self.inherited = tuple(
                entry for entry in self.shell(f"ls {LOCK_DIR}").split() if entry.startswith(NOTE_PREFIX)
            )
            self.shell(f"rm -r {LOCK_DIR}")
        raise SwitchLocked(
            f"{self.switch}: the push lock {LOCK_DIR} was taken again while an expired one was cleared; "
            "another push is starting: rerun when it has finished",
            rolled_back=True,
        )

    def holder(self) -> tuple[str, float, str] | None:
        """(run, expiry epoch, shell pid) of the lock's owner; None when it is not (yet) recorded."""
        for entry in self.shell(f"ls {LOCK_DIR}").split():
            if found := _OWNER.match(entry):
                return f"{found['run']} on {found['host']}", float(found["until"]), found["pid"]
        return None

    def note(self, tag: str) -> None:
        """Record `tag` (letters, digits, dashes) in the lock: what this push has staged, so a push
        that takes the lock over after this one died knows that staged work is fabcheck's."""
        self.shell(f"mkdir {LOCK_DIR}/{NOTE_PREFIX}{tag}")

    def _alive(self, pid: str) -> bool:
        return "No such file" not in self.shell(f"ls -d /proc/{pid}")

    def release(self) -> None:
        holder = self.holder()
        if holder is None or not holder[0].startswith(f"{self.run} "):
            return  # not ours any more (expired and taken over): leave it to its owner
        self.shell(f"rm -r {LOCK_DIR}")


@dataclass(frozen=True)
class PushResult:
    switch: str
    changed: bool
    diff: str  # the platform's own diff of what the push changes (or would change, in check mode)
    before: str  # running state in the platform's terms, before
    after: str  # and after (equal to before in check mode or when nothing changed)


class SwitchDriver(abc.ABC):
    """The platform-specific half of a push. `connection` is a netmiko connection (or a test fake)."""

    platform: ClassVar[str]  # the name of its record in fabcheck.intent.platforms
    locks: ClassVar[bool] = False  # takes the push lock on the switch (`lock_shell`); fakes do not
    lock_pid_command: ClassVar[str] = "echo $$"  # prints the pid that lives as long as the login

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        # Progress of a long step (SONiC's per-change apply); push() points it at its on_step.
        self.on_progress: Callable[[str], None] = lambda _step: None
        self.lock: SwitchLock | None = None  # the push lock while push() holds it

    @abc.abstractmethod
    def running(self) -> str:
        """The running state of what fabcheck manages, in the platform's own terms (for --diff)."""

    @abc.abstractmethod
    def stage(self, config: RenderedConfig, concerns: frozenset[str] = ALL_CONCERNS) -> str:
        """Open a transaction that takes the `concerns` of the running state to `config`; return the
        platform's diff against running ('' = none).

        Only operations of `concerns` are staged: the stale fabcheck-owned entries of the other
        concerns are not removed and their settings are not written (the driver classifies its own
        operations, since only it knows the platform's objects)."""

    @abc.abstractmethod
    def commit(self) -> None:
        """Apply the staged transaction atomically; raise on any error (the platform rolls it back)."""

    @abc.abstractmethod
    def discard(self) -> None:
        """Drop the staged transaction; the running config is untouched."""

    def save(self) -> None:  # noqa: B027 - platforms that persist on commit need nothing here
        """Persist the running config across reboots where the platform does not do it on commit."""

    def needs_save(self) -> bool:
        """Whether a commit leaves the startup config behind until `save` (known after `stage`)."""
        return False

    def startup_lag(self, config: RenderedConfig, concerns: frozenset[str] = ALL_CONCERNS) -> str:
        """'' when the startup config holds what running holds of `concerns`; else what lags, as a
        diff line for the report. Asked only when running already matches `config` and
        `needs_save()`: then a previous push committed and lost its save. The gate may ask it too
        (read-only): a switch whose startup lags would revert on reboot."""
        return ""

    def lock_shell(self, command: str) -> str:
        """Run one plain shell command on the switch for the push lock (only where `locks`)."""
        raise NotImplementedError(f"{type(self).__name__} takes no push lock")


def driver_for(platform: str) -> type[SwitchDriver]:
    """The driver class its platform record names (imported now: only the drivers used are loaded)."""
    try:
        driver = resolve(platform_named(platform).driver)
    except UnknownPlatform as err:
        raise PushError(f"no driver for platform {platform!r}: {err}", rolled_back=True) from None
    if not (isinstance(driver, type) and issubclass(driver, SwitchDriver)) or driver.platform != platform:
        raise PushError(
            f"platform {platform!r}: {platform_named(platform).driver} is not the SwitchDriver of {platform}",
            rolled_back=True,
        )
    return driver


def push(
    driver: SwitchDriver,
    config: RenderedConfig,
    *,
    check: bool,
    concerns: Iterable[str] = ALL_CONCERNS,
    on_step: Callable[[str], None] = lambda _step: None,
) -> PushResult:
    """Stage `concerns`, diff, then commit (or discard in check mode / when nothing differs); verify;
    persist. Nothing differs but the startup config lags (a lost save): save, `changed`.

    Any failure before commit discards the transaction; a failed commit is rolled back by the
    platform's transaction; a failure after it says the running config changed (rolled_back=False)
    and whether startup was saved. `changed` is true when the running or startup config changed.
    """
    chosen = chosen_concerns(concerns)  # a bad name fails before the switch is touched
    lock = _take_lock(driver, config.switch, on_step)
    unknown = False
    try:
        return _push_locked(driver, config, check=check, chosen=chosen, on_step=on_step)
    except PushError as err:
        unknown = err.unknown
        raise
    finally:
        # An outcome still unknown (a commit that may still run on the switch) keeps the lock until
        # it expires, so no other push starts over it.
        if lock is not None and not unknown:
            with contextlib.suppress(Exception):
                lock.release()


def _take_lock(driver: SwitchDriver, switch: str, on_step: Callable[[str], None]) -> SwitchLock | None:
    if not driver.locks:
        return None
    on_step("lock")
    lock = SwitchLock.new(driver.lock_shell, switch, driver.lock_pid_command)
    driver.lock = lock
    try:
        lock.acquire()
    except PushError:
        raise
    except Exception as err:
        raise PushError(f"{switch}: could not take the push lock: {_reason(err)}", rolled_back=True) from err
    return lock


def _push_locked(
    driver: SwitchDriver,
    config: RenderedConfig,
    *,
    check: bool,
    chosen: frozenset[str],
    on_step: Callable[[str], None],
) -> PushResult:
    driver.on_progress = on_step
    before = driver.running()
    on_step("stage")
    try:
        diff = driver.stage(config, chosen)
    except ForeignWork:
        raise  # the driver never staged anything of its own: nothing to discard, theirs stays
    except Exception as err:
        _discard_quietly(driver)
        raise PushError(
            f"{config.switch}: staging failed, running config unchanged: {_reason(err)}", rolled_back=True
        ) from err
    if not diff.strip():
        on_step("discard")
        driver.discard()
        return _save_if_startup_lags(driver, config, chosen, check=check, before=before, on_step=on_step)
    if check:
        on_step("discard")
        driver.discard()
        return PushResult(config.switch, True, diff, before, before)
    on_step("commit")
    try:
        driver.commit()
    except PushError as err:
        # The driver knows better than a generic message whether its rollback held. An unknown
        # outcome keeps everything (SONiC's checkpoint) until the switch is read back.
        if not err.unknown:
            _discard_quietly(driver)
        raise
    except Exception as err:
        _discard_quietly(driver)
        raise PushError(
            f"{config.switch}: commit failed and was rolled back by the platform: {_reason(err)}",
            rolled_back=True,
            diff=diff,
        ) from err
    on_step("verify")
    try:
        after = driver.running()
        remaining = driver.stage(config, chosen)
        driver.discard()
    except Exception as err:
        raise _committed_but(driver, config, "verifying it", err, diff) from err
    if remaining.strip():
        raise PushError(
            f"{config.switch}: committed, but the switch still differs from the rendered config "
            f"({describe(chosen)}):\n" + remaining,
            rolled_back=False,
            diff=diff,
        )
    on_step("save")
    try:
        driver.save()
    except Exception as err:
        raise _committed_but(driver, config, "saving it", err, diff) from err
    return PushResult(config.switch, True, diff, before, after)


def _save_if_startup_lags(
    driver: SwitchDriver,
    config: RenderedConfig,
    chosen: frozenset[str],
    *,
    check: bool,
    before: str,
    on_step: Callable[[str], None],
) -> PushResult:
    """Running holds the config; a save that an earlier push lost is done now (reported as a change)."""
    if not driver.needs_save():
        return PushResult(config.switch, False, "", before, before)
    try:
        lag = driver.startup_lag(config, chosen)
    except Exception as err:
        raise PushError(
            f"{config.switch}: running config unchanged (it already matches), but the startup config "
            f"could not be compared with it: {_reason(err)}",
            rolled_back=True,
        ) from err
    if not lag.strip() or check:
        return PushResult(config.switch, bool(lag.strip()), lag, before, before)
    on_step("save")
    try:
        driver.save()
    except Exception as err:
        raise PushError(
            f"{config.switch}: running config unchanged (it already matches), but the startup config "
            f"that lags it could not be saved: {_reason(err)}",
            rolled_back=True,
            diff=lag,
        ) from err
    return PushResult(config.switch, True, lag, before, before)


def _committed_but(
    driver: SwitchDriver, config: RenderedConfig, step: str, err: BaseException, diff: str
) -> PushError:
    if driver.needs_save():
        persisted = "the startup config was NOT saved (the next push saves it)"
    else:
        persisted = "the platform saved it with the commit"
    return PushError(
        f"{config.switch}: committed, so the running config changed, but {step} failed: {_reason(err)}; "
        + persisted,
        rolled_back=False,
        diff=diff,
    )


def _discard_quietly(driver: SwitchDriver) -> None:
    # The connection may be gone: then the uncommitted transaction dies with the session.
    with contextlib.suppress(Exception):
        driver.discard()


def _reason(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[-1] if len(text) > 2000 else text
