"""The push algorithm against a scripted driver: stage/diff, commit or discard, verify, never half-apply."""

from __future__ import annotations

import pytest

from fabcheck.switch.concerns import ALL_CONCERNS, ConcernError
from fabcheck.switch.driver import PushError, SwitchDriver, push
from fabcheck.switch.render import RenderedConfig

CONFIG = RenderedConfig("leaf01", "fake", "pfc 3\necn 3\n")


class FakeSwitch(SwitchDriver):
    """Running config as a set of `<concern> <value>` lines; a transaction is a staged copy, as on a
    real platform; commit changes running only, save copies it to startup."""

    platform = "fake"

    def __init__(
        self,
        running: set[str],
        fail_on: str | None = None,
        verify_drift: bool = False,
        startup: set[str] | None = None,
    ) -> None:
        super().__init__(connection=None)
        self.lines = set(running)
        self.startup = set(running) if startup is None else set(startup)
        self.staged: set[str] | None = None
        self.fail_on = fail_on
        self.verify_drift = verify_drift
        self.calls: list[str] = []
        self.saved = False

    def running(self) -> str:
        if self.fail_on == "verify" and "commit" in self.calls:
            raise OSError("Socket is closed")
        return "\n".join(sorted(self.lines))

    def stage(self, config: RenderedConfig, concerns: frozenset[str] = ALL_CONCERNS) -> str:
        self.calls.append("stage")
        if self.fail_on == "stage":
            raise OSError("Socket is closed")
        kept = {line for line in self.lines if line.split()[0] not in concerns}
        self.staged = kept | {line for line in config.lines if line.split()[0] in concerns}
        return "\n".join(
            [f"+ {line}" for line in sorted(self.staged - self.lines)]
            + [f"- {line}" for line in sorted(self.lines - self.staged)]
        )

    def commit(self) -> None:
        self.calls.append("commit")
        if self.fail_on == "commit":
            raise RuntimeError("commit refused: % Invalid input")
        assert self.staged is not None
        self.lines = set(self.staged) if not self.verify_drift else set()
        self.staged = None

    def discard(self) -> None:
        self.calls.append("discard")
        self.staged = None

    def needs_save(self) -> bool:
        return True

    def startup_lag(self, config: RenderedConfig, concerns: frozenset[str] = ALL_CONCERNS) -> str:
        self.calls.append("startup_lag")
        lagging = {line for line in self.lines ^ self.startup if line.split()[0] in concerns}
        return "save: " + ", ".join(sorted(lagging)) if lagging else ""

    def save(self) -> None:
        self.calls.append("save")
        if self.fail_on == "save":
            raise RuntimeError("copy running-config startup-config: % Error writing flash")
        self.startup = set(self.lines)
        self.saved = True


def test_converge_commits_verifies_and_saves() -> None:
    switch = FakeSwitch(set())
    result = push(switch, CONFIG, check=False)
    assert result.changed and result.diff == "+ ecn 3\n+ pfc 3"
    assert (result.before, result.after) == ("", "ecn 3\npfc 3")
    assert switch.calls == ["stage", "commit", "stage", "discard", "save"] and switch.saved
    assert switch.startup == {"pfc 3", "ecn 3"}


def test_rerun_changes_nothing() -> None:
    switch = FakeSwitch({"pfc 3", "ecn 3"})
    result = push(switch, CONFIG, check=False)
    assert not result.changed and result.diff == ""
    assert switch.calls == ["stage", "discard", "startup_lag"] and not switch.saved


def test_check_mode_reports_the_diff_and_discards() -> None:
    switch = FakeSwitch({"pfc 3"})
    result = push(switch, CONFIG, check=True)
    assert result.changed and result.diff == "+ ecn 3" and result.after == result.before
    assert switch.lines == {"pfc 3"} and switch.calls == ["stage", "discard"] and not switch.saved


@pytest.mark.parametrize("step", ["stage", "commit"])
def test_failure_leaves_the_previous_config(step: str) -> None:
    switch = FakeSwitch({"pfc 3"}, fail_on=step)
    with pytest.raises(PushError) as err:
        push(switch, CONFIG, check=False)
    assert err.value.rolled_back is True
    assert switch.lines == {"pfc 3"} and switch.staged is None
    assert "running config unchanged" in str(err.value) or "rolled back" in str(err.value)


def test_a_commit_that_does_not_stick_is_a_failure() -> None:
    switch = FakeSwitch(set(), verify_drift=True)
    with pytest.raises(PushError, match="still differs") as err:
        push(switch, CONFIG, check=False)
    assert err.value.rolled_back is False and not switch.saved


def test_a_driver_push_error_from_commit_is_kept_as_it_is() -> None:
    class RollbackFailed(FakeSwitch):
        def commit(self) -> None:
            raise PushError("leaf01: apply failed and the rollback failed too", rolled_back=False)

    with pytest.raises(PushError, match="rollback failed too") as err:
        push(RollbackFailed(set()), CONFIG, check=False)
    assert err.value.rolled_back is False


# -- scoped pushes ------------------------------------------------------------------------------------


def test_a_scoped_push_stages_only_its_concerns() -> None:
    switch = FakeSwitch({"pfc 4", "ecn off", "dscp 26"})
    result = push(switch, CONFIG, check=False, concerns=["pfc"])
    assert result.changed and result.diff == "+ pfc 3\n- pfc 4"
    assert switch.lines == {"pfc 3", "ecn off", "dscp 26"}  # the ECN drift and the unrendered dscp stay


def test_an_unknown_concern_fails_before_the_switch_is_touched() -> None:
    switch = FakeSwitch({"pfc 4"})
    with pytest.raises(ConcernError, match=r"unknown concern\(s\) pfcx; known: dscp, pfc, ecn"):
        push(switch, CONFIG, check=False, concerns=["pfcx"])
    assert switch.calls == []


# -- startup left behind ------------------------------------------------------------------------------


@pytest.mark.parametrize(("step", "said"), [("save", "saving it"), ("verify", "verifying it")])
def test_a_lost_save_fails_saying_running_changed_and_the_next_push_saves(step: str, said: str) -> None:
    switch = FakeSwitch({"pfc 4", "ecn 3"}, fail_on=step)
    with pytest.raises(PushError) as err:
        push(switch, CONFIG, check=False)
    assert err.value.rolled_back is False
    message = str(err.value)
    assert f"committed, so the running config changed, but {said} failed" in message
    assert "the startup config was NOT saved" in message
    assert switch.lines == {"pfc 3", "ecn 3"} and switch.startup == {"pfc 4", "ecn 3"}

    switch.fail_on = None
    check = push(switch, CONFIG, check=True)  # running already matches: only startup lags
    assert check.changed and check.diff == "save: pfc 3, pfc 4" and switch.startup == {"pfc 4", "ecn 3"}
    result = push(switch, CONFIG, check=False)
    assert result.changed and result.diff == "save: pfc 3, pfc 4"
    assert switch.startup == switch.lines and result.before == result.after
    assert not push(switch, CONFIG, check=False).changed


def test_a_startup_lag_outside_the_scope_is_left_alone() -> None:
    switch = FakeSwitch({"pfc 3", "ecn 3"}, startup={"pfc 3", "ecn 1"})
    assert not push(switch, CONFIG, check=False, concerns=["pfc"]).changed and not switch.saved
    assert push(switch, CONFIG, check=False).changed and switch.startup == {"pfc 3", "ecn 3"}


def test_a_failed_save_of_a_lagging_startup_says_running_is_unchanged() -> None:
    switch = FakeSwitch({"pfc 3", "ecn 3"}, startup=set(), fail_on="save")
    with pytest.raises(PushError, match=r"running config unchanged .* could not be saved") as err:
        push(switch, CONFIG, check=False)
    assert err.value.rolled_back is True


def test_a_platform_that_saves_on_commit_is_never_asked_about_startup() -> None:
    class AutoSaving(FakeSwitch):
        def needs_save(self) -> bool:
            return False

    switch = AutoSaving({"pfc 3", "ecn 3"}, startup=set())
    assert not push(switch, CONFIG, check=False).changed and "startup_lag" not in switch.calls
    switch = AutoSaving({"pfc 4"}, fail_on="verify")
    with pytest.raises(PushError, match="the platform saved it with the commit") as err:
        push(switch, CONFIG, check=False)
    assert err.value.rolled_back is False
