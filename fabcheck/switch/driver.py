"""One driver class per switch platform; the push algorithm is written once against this interface.

A driver stages the rendered config in the platform's own transaction (NVUE pending revision, EOS
configure session, SONiC checkpoint + patch), shows the platform's own diff, and then either commits
it atomically or discards it. The running config changes only in `commit`, so a push that fails or
loses its connection anywhere before that leaves the switch on its previous config.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from fabcheck.errors import FabcheckError
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

    platform: ClassVar[str]
    device_type: ClassVar[str]  # netmiko device_type

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    @abc.abstractmethod
    def running(self) -> str:
        """The running state of what fabcheck manages, in the platform's own terms (for --diff)."""

    @abc.abstractmethod
    def stage(self, config: RenderedConfig) -> str:
        """Open a transaction holding `config` and return the platform's diff against running ('' = none)."""

    @abc.abstractmethod
    def commit(self) -> None:
        """Apply the staged transaction atomically; raise on any error (the platform rolls it back)."""

    @abc.abstractmethod
    def discard(self) -> None:
        """Drop the staged transaction; the running config is untouched."""

    def save(self) -> None:  # noqa: B027 - platforms that persist on commit need nothing here
        """Persist the running config across reboots where the platform does not do it on commit."""


DRIVERS: dict[str, type[SwitchDriver]] = {}


def register(driver: type[SwitchDriver]) -> type[SwitchDriver]:
    """Class decorator: a platform is pushable once its driver is registered (and it has templates)."""
    DRIVERS[driver.platform] = driver
    return driver


def driver_for(platform: str) -> type[SwitchDriver]:
    from fabcheck.switch import platforms  # noqa: F401 - registers the built-in drivers

    try:
        return DRIVERS[platform]
    except KeyError:
        known = ", ".join(sorted(DRIVERS)) or "none"
        raise PushError(f"no driver for platform {platform!r} (have: {known})", rolled_back=True) from None


def push(
    driver: SwitchDriver,
    config: RenderedConfig,
    *,
    check: bool,
    on_step: Callable[[str], None] = lambda _step: None,
) -> PushResult:
    """Stage, diff, then commit (or discard in check mode / when nothing differs); verify; persist.

    Any failure before commit discards the transaction; a failed commit is rolled back by the
    platform's transaction. The result's `changed` is true only when the running config changed.
    """
    before = driver.running()
    on_step("stage")
    try:
        diff = driver.stage(config)
    except Exception as err:
        _discard_quietly(driver)
        raise PushError(
            f"{config.switch}: staging failed, running config unchanged: {_reason(err)}", rolled_back=True
        ) from err
    if not diff.strip() or check:
        on_step("discard")
        driver.discard()
        return PushResult(config.switch, bool(diff.strip()), diff, before, before)
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
    after = driver.running()
    remaining = driver.stage(config)
    driver.discard()
    if remaining.strip():
        raise PushError(
            f"{config.switch}: committed, but the switch still differs from the rendered config:\n"
            + remaining,
            rolled_back=False,
            diff=diff,
        )
    on_step("save")
    driver.save()
    return PushResult(config.switch, True, diff, before, after)


def _discard_quietly(driver: SwitchDriver) -> None:
    # The connection may be gone: then the uncommitted transaction dies with the session.
    with contextlib.suppress(Exception):
        driver.discard()


def _reason(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[-1] if len(text) > 2000 else text
