"""The push algorithm against a scripted driver: stage/diff, commit or discard, verify, never half-apply."""

from __future__ import annotations

import pytest

from fabcheck.switch.driver import PushError, SwitchDriver, push
from fabcheck.switch.render import RenderedConfig

CONFIG = RenderedConfig("leaf01", "fake", "pfc 3\necn 3\n")


class FakeSwitch(SwitchDriver):
    """Running config as a set of lines; a transaction is a staged copy, as on a real platform."""

    platform = "fake"
    device_type = "fake"

    def __init__(self, running: set[str], fail_on: str | None = None, verify_drift: bool = False) -> None:
        super().__init__(connection=None)
        self.lines = set(running)
        self.staged: set[str] | None = None
        self.fail_on = fail_on
        self.verify_drift = verify_drift
        self.calls: list[str] = []
        self.saved = False

    def running(self) -> str:
        return "\n".join(sorted(self.lines))

    def stage(self, config: RenderedConfig) -> str:
        self.calls.append("stage")
        if self.fail_on == "stage":
            raise OSError("Socket is closed")
        self.staged = set(config.lines)
        return "\n".join(f"+ {line}" for line in sorted(self.staged - self.lines))

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

    def save(self) -> None:
        self.saved = True


def test_converge_commits_verifies_and_saves() -> None:
    switch = FakeSwitch(set())
    result = push(switch, CONFIG, check=False)
    assert result.changed and result.diff == "+ ecn 3\n+ pfc 3"
    assert (result.before, result.after) == ("", "ecn 3\npfc 3")
    assert switch.calls == ["stage", "commit", "stage", "discard"] and switch.saved


def test_rerun_changes_nothing() -> None:
    switch = FakeSwitch({"pfc 3", "ecn 3"})
    result = push(switch, CONFIG, check=False)
    assert not result.changed and result.diff == ""
    assert switch.calls == ["stage", "discard"] and not switch.saved


def test_check_mode_reports_the_diff_and_discards() -> None:
    switch = FakeSwitch({"pfc 3"})
    result = push(switch, CONFIG, check=True)
    assert result.changed and result.diff == "+ ecn 3" and result.after == result.before
    assert switch.lines == {"pfc 3"} and switch.calls == ["stage", "discard"]


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
