"""One driver class per switch platform; the push algorithm is written once against this interface.

A driver stages the rendered config in the platform's own transaction (NVUE pending revision, EOS
configure session, SONiC checkpoint + patch), shows the platform's own diff, and then either commits
it atomically or discards it. The running config changes only in `commit`, so a push that fails or
loses its connection anywhere before that leaves the switch on its previous config.

A push may be scoped to some concerns (fabcheck.switch.concerns): the driver then stages only the
operations of those concerns, so every other concern stays exactly as it runs, stale entries
included. Where the platform does not persist on commit, a push whose save was lost is finished by
the next one: running already holds the config, the startup config does not, so it saves.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from fabcheck.errors import FabcheckError
from fabcheck.intent.platforms import UnknownPlatform, platform_named, resolve
from fabcheck.switch.concerns import ALL_CONCERNS, chosen_concerns, describe
from fabcheck.switch.render import RenderedConfig


class PushError(FabcheckError):
    """A push that did not complete. `rolled_back` says whether the switch is on its previous config."""

    def __init__(self, message: str, *, rolled_back: bool, diff: str = "") -> None:
        self.rolled_back = rolled_back
        self.diff = diff
        super().__init__(message)


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

    def __init__(self, connection: Any) -> None:
        self.connection = connection

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
        `needs_save()`: then a previous push committed and lost its save."""
        return ""


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
    before = driver.running()
    on_step("stage")
    try:
        diff = driver.stage(config, chosen)
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
    except PushError:
        # The driver knows better than a generic message whether its rollback held.
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
