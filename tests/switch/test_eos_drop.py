"""A push whose SSH connection drops anywhere leaves EOS on its previous running config, and the
next push still converges: leftover fabcheck sessions are aborted, other sessions are left alone.

The mock cuts the connection before the (N+1)-th config line it receives (arm_drop), so the line
at index N is never executed; the trials put N on every part of a push, the commit line included.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from mockswitches import MockSwitches, mock_switches
from test_eos_templates import NON_DEFAULT, eos_desired

from fabcheck.parsers.eos_config import format_config, parse_config
from fabcheck.switch.connect import connect
from fabcheck.switch.driver import ForeignWork, PushError, push
from fabcheck.switch.platforms.eos import EosDriver, session_lines
from fabcheck.switch.render import RenderedConfig, render_switch
from fabcheck_lab.mockswitch import arm_drop

TRIALS = 20
NAMES = ("eos-drop", "eos-leftover", "eos-after-commit")


@pytest.fixture(scope="module")
def switches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockSwitches]:
    with mock_switches(tmp_path_factory.mktemp("eos-drop"), dict.fromkeys(NAMES, "eos"), 180) as lab:
        yield lab


class Switch:
    """One mock switch seen by the tests: a driver on a fresh connection, and its state file."""

    def __init__(self, switches: MockSwitches, name: str) -> None:
        self.switches = switches
        self.name = name
        self.connection: Any = None
        self.driver = self.reconnect()

    def reconnect(self) -> EosDriver:
        self.close()
        self.connection = connect(self.switches.login(self.name))
        self.driver = EosDriver(self.connection, switch=self.name)
        return self.driver

    def close(self) -> None:
        if self.connection is not None:
            with contextlib.suppress(Exception):  # the mock may have cut it
                self.connection.disconnect()

    def running(self) -> dict[str, Any]:
        return self.switches.state(self.name)["running"]

    def sessions(self) -> list[str]:
        return sorted(self.switches.state(self.name)["pending"])

    def counted_lines(self, config: RenderedConfig) -> list[str]:
        """The config lines arm_drop counts in a push of config, up to and including `commit`."""
        leftovers = [s for s in self.sessions() if s.startswith("fabcheck-")]
        return ["abort"] * len(leftovers) + session_lines(config.text, self.driver.running()) + ["commit"]

    def dropped_before(self) -> str:
        drops = [entry for entry in self.switches.state(self.name)["log"] if entry["event"] == "drop"]
        return drops[-1]["text"].removeprefix("connection dropped before: ")


def configs(name: str) -> tuple[RenderedConfig, RenderedConfig]:
    return render_switch(eos_desired(None, name)), render_switch(eos_desired(NON_DEFAULT, name))


@pytest.fixture
def switch(switches: MockSwitches, request: pytest.FixtureRequest) -> Iterator[Switch]:
    handle = Switch(switches, request.param)
    yield handle
    handle.close()


@pytest.mark.parametrize("switch", ["eos-drop"], indirect=True)
def test_twenty_cuts_before_commit_leave_the_previous_config(switch: Switch) -> None:
    pair = configs(switch.name)
    assert push(switch.driver, pair[0], check=False).changed
    current, cut_before = 0, []
    for trial in range(TRIALS):
        target = pair[1 - current]
        previous, previous_text = switch.running(), switch.driver.running()
        lines = switch.counted_lines(target)
        index = round(trial * (len(lines) - 1) / (TRIALS - 1))  # first line ... the commit line
        arm_drop(switch.switches.run_dir, switch.name, index)
        with pytest.raises(PushError) as err:
            push(switch.driver, target, check=False)
        if lines[index] == "commit":
            # Cut while committing: EOS may or may not have applied it, so the driver says so.
            assert err.value.rolled_back is False and "may hold the new config" in str(err.value)
        else:
            assert err.value.rolled_back, f"trial {trial}: {err.value}"
        assert switch.dropped_before() == lines[index], f"trial {trial}"
        assert switch.running() == previous, f"trial {trial}: cut before {lines[index]!r} changed running"

        driver = switch.reconnect()
        assert driver.running() == previous_text
        result = push(driver, target, check=False)  # aborts the cut session, then converges
        assert result.changed and result.before == previous_text, f"trial {trial}"
        assert driver.running() == format_config(parse_config(target.text))
        assert switch.sessions() == []
        cut_before.append((index, lines[index]))
        current = 1 - current
    assert cut_before[0][0] == 0 and cut_before[-1][1] == "commit"
    assert len({index for index, _ in cut_before}) >= TRIALS - 5  # spread over the whole session


@pytest.mark.parametrize("switch", ["eos-leftover"], indirect=True)
def test_leftover_sessions_never_block_a_push(switch: Switch) -> None:
    default, custom = configs(switch.name)
    push(switch.driver, default, check=False)
    converged = switch.running()
    # A client that died inside its own session, and an operator's session fabcheck must not touch.
    switch.connection.enable()
    for session in ("fabcheck-crashed1", "operator-work"):
        switch.connection.send_config_set(
            [f"configure session {session}", "interface Ethernet1", "mtu 1600", "end"],
            enter_config_mode=False,
            exit_config_mode=False,
        )
    assert switch.sessions() == ["fabcheck-crashed1", "operator-work"]

    # Someone's pending session stops the push, in check mode and in a real run, and survives.
    for check in (True, False):
        with pytest.raises(ForeignWork) as err:
            push(switch.driver, custom, check=check)
        assert "operator-work" in str(err.value) and "configure session operator-work abort" in str(err.value)
        assert switch.running() == converged
        assert switch.sessions() == ["fabcheck-crashed1", "operator-work"]
    switch.connection.send_config_set(
        ["configure session operator-work", "abort"], enter_config_mode=False, exit_config_mode=False
    )  # the operator drops theirs; fabcheck's own leftover is then fabcheck's to clear

    # Cut while aborting the leftover: nothing committed, the leftover is still there.
    lines = switch.counted_lines(custom)
    assert lines[0] == "abort"
    arm_drop(switch.switches.run_dir, switch.name, 0)
    with pytest.raises(PushError) as err:
        push(switch.driver, custom, check=False)
    assert err.value.rolled_back and switch.dropped_before() == "abort"
    assert switch.running() == converged and "fabcheck-crashed1" in switch.sessions()

    # Cut right after the leftover was aborted: a new leftover of fabcheck's own.
    driver = switch.reconnect()
    arm_drop(switch.switches.run_dir, switch.name, 1)
    with pytest.raises(PushError):
        push(driver, custom, check=False)
    leftovers = [s for s in switch.sessions() if s.startswith("fabcheck-")]
    assert switch.running() == converged and len(leftovers) == 1 and leftovers != ["fabcheck-crashed1"]

    driver = switch.reconnect()
    assert push(driver, custom, check=False).changed
    assert driver.running() == format_config(parse_config(custom.text))
    assert switch.sessions() == []  # fabcheck's leftovers gone


@pytest.mark.parametrize("switch", ["eos-after-commit"], indirect=True)
def test_a_cut_after_commit_says_the_switch_was_changed(switch: Switch) -> None:
    default, custom = configs(switch.name)
    push(switch.driver, default, check=False)
    lines = switch.counted_lines(custom)
    arm_drop(switch.switches.run_dir, switch.name, len(lines))  # the first line of the verification
    with pytest.raises(PushError) as err:
        push(switch.driver, custom, check=False)
    assert err.value.rolled_back is False and "may hold the new config" in str(err.value)
    assert "committed, so the running config changed, but verifying it failed" in str(err.value)
    assert "the startup config was NOT saved" in str(err.value)
    assert switch.dropped_before() == session_lines(custom.text, custom.text)[0]
    state = switch.switches.state(switch.name)
    assert state["startup"] != state["running"]

    driver = switch.reconnect()
    assert driver.running() == format_config(parse_config(custom.text))  # the commit had landed
    check = push(driver, custom, check=True)  # running matches; only the save is missing
    assert check.changed and check.diff.startswith("save: startup-config lags running-config")
    assert "+   mtu 9100" in check.diff.splitlines()  # the custom intent's MTU, not yet saved
    assert switch.switches.state(switch.name)["startup"] == state["startup"]
    result = push(driver, custom, check=False)
    assert result.changed and result.diff == check.diff and switch.sessions() == []
    state = switch.switches.state(switch.name)
    assert state["startup"] == state["running"]
    assert not push(driver, custom, check=False).changed
