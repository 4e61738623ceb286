"""The NVUE driver against real transcripts (tests/data/real/nvue) and the mock put in the same state.

Each transcript's command is replayed through the driver over a scripted channel: the driver must
reach the outcome the real switch meant (applied and saved, applied not saved, a new revision of
ours). The mock must answer the same command with the same lines up to values. Then the behaviours
the real switch has and the old mock lacked: an operator's pending revision is never discarded,
foreign per-port profile bindings on managed ports are removed, watchdog lines only from CL 5.6,
one push at a time per switch.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from mockswitches import MockSwitches, mock_switches
from test_nvue_render import nvue_desired

from fabcheck.switch.connect import connect
from fabcheck.switch.driver import ForeignWork, PushError, SwitchLock, SwitchLocked, push
from fabcheck.switch.platforms.nvue import NvueCommandError, NvueDriver
from fabcheck.switch.render import RenderedConfig, render_switch
from fabcheck_lab.mockswitch.nvue_model import effective_qos, lossless_priorities, port_qos

REAL = Path(__file__).parent.parent / "data" / "real" / "nvue"
PORTS = ("swp1", "swp2", "swp3", "swp4")
PROMPT = re.compile(r"^(?P<prompt>\S+@\S+:~\$) ?(?P<command>.*)$")


def transcript(name: str) -> list[tuple[str, str]]:
    """(command, output) pairs of a real transcript (the prompt lines start each command)."""
    pairs: list[tuple[str, list[str]]] = []
    for line in (REAL / name).read_text().splitlines():
        found = PROMPT.match(line)
        if found:
            if found["command"]:
                pairs.append((found["command"], []))
        elif pairs:
            pairs[-1][1].append(line)
    return [(command, "\n".join(lines)) for command, lines in pairs]


class ScriptedChannel:
    """A netmiko-like channel that answers each command with a recorded output, then the prompt."""

    base_prompt = "cumulus@leaf01:mgmt:~"

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.sent: list[str] = []
        self.pending = ""
        self.remote_conn = None

    def write_channel(self, text: str) -> None:
        command = text.rstrip("\n")
        self.sent.append(command)
        output = self.answers.get(command, "")
        self.pending = (
            f"{command}\n{output}\n{self.base_prompt}$ " if output else f"{command}\n{self.base_prompt}$ "
        )

    def read_channel(self) -> str:
        chunk, self.pending = self.pending, ""
        return chunk

    def strip_command(self, command: str, output: str) -> str:
        return output.split("\n", 1)[1] if "\n" in output else ""

    def strip_prompt(self, output: str) -> str:
        return output.rsplit("\n", 1)[0] if "\n" in output else ""


# -- the driver reads what a real switch prints ------------------------------------------------------


def test_created_rev_id_on_the_first_set_is_our_revision_not_a_refusal() -> None:
    ((command, output),) = transcript("nv-set-new-revision.txt")
    assert output == "created [rev_id: 2]"
    driver = NvueDriver(ScriptedChannel({command: output}))
    assert driver.command(command) == output  # accepted, not raised as a refusal


def test_a_later_set_of_the_same_revision_prints_nothing() -> None:
    (first, first_output), (second, silent), (_diff, pending) = transcript("nv-set-existing-revision.txt")
    # CL 5.4 transcript: neither set prints a line; the diff then holds the pending change as YAML.
    assert first_output == "" and silent == "" and pending.startswith("- set:")
    driver = NvueDriver(ScriptedChannel({first: first_output, second: silent}))
    driver.command(first)
    driver.command(second)
    with pytest.raises(NvueCommandError):  # anything else from an `nv set` is a refusal
        NvueDriver(ScriptedChannel({second: "Error: Invalid Command: x"})).command(second)


@pytest.mark.parametrize("name", ["nv-config-apply-auto-save.txt", "nv-config-apply-auto-save-broadcast.txt"])
def test_applied_and_saved_is_applied_and_saved(name: str) -> None:
    ((_command, output),) = transcript(name)
    # The Warning / Are you sure part is what -y skips; the driver sees the rest.
    answer = output.split("[y/N] y\n", 1)[-1]
    driver = NvueDriver(ScriptedChannel({"nv config apply -y": answer}))
    driver.version = "Cumulus Linux 5.16.0"
    driver.commit()
    assert driver.committed and driver.saved_by_apply and not driver.needs_save()


def test_applied_without_auto_save_needs_nv_config_save() -> None:
    (_apply, applied), (save, saved) = transcript("nv-config-apply-no-auto-save.txt")
    assert applied == "applied [rev_id: 5]" and saved == "saved [rev_id: applied]"
    channel = ScriptedChannel({"nv config apply -y": applied, save: saved})
    driver = NvueDriver(channel)
    driver.version = "Cumulus Linux 5.8.0"  # before auto-save
    driver.commit()
    assert driver.committed and not driver.saved_by_apply and driver.needs_save()
    driver.save()
    assert channel.sent[-1] == "nv config save"


def test_the_lossless_pool_lines_are_nvidias_documented_commands() -> None:
    documented = [
        command for command, _ in transcript("qos-flow-control-buffers.txt") if "traffic-pool" in command
    ]
    rendered = render_switch(nvue_desired(None)).lines
    assert [line for line in rendered if "traffic-pool" in line] == documented
    assert "nv set qos pfc default-global cable-length 100" in rendered
    assert not any(line.endswith("bw-percent 0") for line in rendered)


# -- the mock answers the same commands the same way --------------------------------------------------


SWITCHES = ("nv-real", "nv-foreign", "nv-bindings", "nv-old", "nv-58", "nv-lock")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockSwitches]:
    releases = {"nv-old": "5.5.0", "nv-58": "5.8.0"}
    with mock_switches(
        tmp_path_factory.mktemp("nvue-real"), dict.fromkeys(SWITCHES, "nvue"), 190, releases=releases
    ) as switches:
        yield switches


def config(name: str) -> RenderedConfig:
    return render_switch(nvue_desired(None, name=name, host_ports=PORTS[:3], uplinks=PORTS[3:]))


def shape(text: str) -> str:
    """A line with its values (numbers, names after a colon) blanked, for same-lines-up-to-values."""
    return re.sub(r"\d+", "N", text)


def test_mock_prints_created_then_nothing_then_applied_and_saved(lab: MockSwitches) -> None:
    conn = connect(lab.login("nv-real"))
    driver = NvueDriver(conn)
    try:
        first = driver.command("nv set interface swp1 link mtu 9000")
        second = driver.command("nv set interface swp2 link mtu 9000")
        applied = driver.command("nv config apply -y").strip()
    finally:
        conn.disconnect()
    (_, real_created), *_ = transcript("nv-set-new-revision.txt")
    real_applied = transcript("nv-config-apply-auto-save.txt")[0][1].splitlines()[-1]
    assert shape(first.strip()) == shape(real_created) and second.strip() == ""
    assert shape(applied) == shape(real_applied)
    state = lab.state("nv-real")
    assert state["startup"] == state["running"]  # 5.11: auto-save


def test_mock_before_auto_save_prints_applied_and_push_saves(lab: MockSwitches) -> None:
    conn = connect(lab.login("nv-58"))
    try:
        result = push(NvueDriver(conn), config("nv-58"), check=False)
    finally:
        conn.disconnect()
    state = lab.state("nv-58")
    assert result.changed and state["startup"] == state["running"]
    commands = [entry["text"] for entry in state["log"] if entry["event"] == "command"]
    assert "nv config save" in commands


def test_mock_puts_pfc_in_effect_only_with_a_lossless_pool() -> None:
    pfc_only = {
        "qos": {"pfc": {"default-global": {"switch-priority": {"3": {}}}}},
        "interface": {"swp1": {"qos": {"pfc": {"profile": "default-global"}}}},
    }
    assert port_qos(pfc_only, ["swp1"])["swp1"].pfc_priorities == ()  # 100 % lossy: PFC pauses nothing
    with_pool = pfc_only | {
        "qos": pfc_only["qos"]
        | {
            "traffic-pool": {
                "default-lossless": {"memory-percent": 50},
                "default-lossy": {"memory-percent": 50},
            }
        }
    }
    assert lossless_priorities(with_pool, effective_qos(with_pool)) is None  # the pool takes PFC's priorities
    assert port_qos(with_pool, ["swp1"])["swp1"].pfc_priorities == (3,)


# -- check mode never destroys an operator's staged work ---------------------------------------------


def test_an_operators_pending_revision_stops_the_push_and_survives(lab: MockSwitches) -> None:
    name = "nv-foreign"
    operator = connect(lab.login(name))
    try:
        assert NvueDriver(operator).command("nv set interface swp4 link mtu 1500").startswith("created")
    finally:
        operator.disconnect()
    staged = lab.state(name)["pending"]
    for check in (True, False):
        conn = connect(lab.login(name))
        try:
            with pytest.raises(ForeignWork) as err:
                push(NvueDriver(conn), config(name), check=check)
        finally:
            conn.disconnect()
        message = str(err.value)
        assert "mtu: 1500" in message and "nv config detach" in message and "nv config apply" in message
        assert err.value.rolled_back
        assert lab.state(name)["pending"] == staged  # untouched, in check mode and in a real run
    commands = [entry["text"] for entry in lab.state(name)["log"] if entry["event"] == "command"]
    assert "nv config detach" not in commands


# -- the push owns the per-port bindings of its ports -------------------------------------------------


def test_foreign_per_port_profiles_on_managed_ports_are_unbound(lab: MockSwitches) -> None:
    name = "nv-bindings"
    conn = connect(lab.login(name))
    driver = NvueDriver(conn)
    try:
        push(driver, config(name), check=False)
        for line in (
            "nv set qos mapping trust-l2 trust l2",
            "nv set interface swp2 qos mapping profile trust-l2",
            "nv set qos congestion-control no-ecn traffic-class 3 ecn disable",
            "nv set interface swp3 qos congestion-control profile no-ecn",
            "nv config apply -y",
        ):
            driver.command(line)
        assert lab.state(name)["operational"]["swp2"]["trust"] == "pcp"  # the binding takes effect
        assert 3 not in lab.state(name)["operational"]["swp3"]["ecn_queues"]
        checked = push(driver, config(name), check=True)
        assert "mapping" in checked.diff and "congestion-control" in checked.diff
        result = push(driver, config(name), check=False)
    finally:
        conn.disconnect()
    assert result.changed
    running = lab.state(name)["running"]
    for port in ("swp2", "swp3"):
        assert set(running["interface"][port]["qos"]) == {"pfc", "pfc-watchdog"}, port
    assert "trust-l2" in running["qos"]["mapping"]  # the profile itself stays defined
    assert lab.state(name)["operational"]["swp2"]["trust"] == "dscp"


# -- the PFC watchdog commands exist from CL 5.6 ------------------------------------------------------


def test_watchdog_refused_below_5_6_with_the_release_read_from_the_switch(lab: MockSwitches) -> None:
    name = "nv-old"
    conn = connect(lab.login(name))
    try:
        with pytest.raises(PushError) as err:
            push(NvueDriver(conn), config(name), check=False)
        assert "Cumulus Linux 5.5.0" in str(err.value) and "5.6" in str(err.value)
        assert lab.state(name)["pending"] == {}  # nothing typed
        scoped = push(
            NvueDriver(conn),
            config(name),
            check=False,
            concerns=["dscp", "pfc", "ecn", "scheduler", "mtu", "buffers"],
        )
    finally:
        conn.disconnect()
    assert scoped.changed and "pfc-watchdog" not in str(lab.state(name)["running"])


# -- one push at a time -------------------------------------------------------------------------------


def test_two_concurrent_pushes_one_wins_the_other_reports_the_lock(lab: MockSwitches) -> None:
    name = "nv-lock"
    barrier = threading.Barrier(2)
    outcomes: dict[int, object] = {}

    def one(index: int) -> None:
        conn = connect(lab.login(name))
        try:
            barrier.wait(timeout=60)
            outcomes[index] = push(NvueDriver(conn), config(name), check=False)
        except PushError as err:
            outcomes[index] = err
        finally:
            conn.disconnect()

    threads = [threading.Thread(target=one, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    results = list(outcomes.values())
    assert len(results) == 2
    won = [r for r in results if not isinstance(r, PushError)]
    lost = [r for r in results if isinstance(r, SwitchLocked)]
    # Either one waited out the other's whole push (then it found nothing to do) or it lost the lock.
    assert len(won) >= 1 and len(won) + len(lost) == 2, results
    for loser in lost:
        assert "another push" in str(loser) and loser.rolled_back
    conn = connect(lab.login(name))
    try:
        assert not push(NvueDriver(conn), config(name), check=False).changed  # one whole config
    finally:
        conn.disconnect()
    assert lab.state(name)["pending"] == {}


def test_a_held_lock_refuses_the_second_push_naming_the_holder(lab: MockSwitches) -> None:
    name = "nv-lock"
    holder_conn = connect(lab.login(name))
    holder = NvueDriver(holder_conn)
    lock = SwitchLock.new(holder.lock_shell, name)
    lock.acquire()
    try:
        conn = connect(lab.login(name))
        try:
            with pytest.raises(SwitchLocked) as err:
                push(NvueDriver(conn), config(name), check=False)
        finally:
            conn.disconnect()
        assert lock.run in str(err.value) and "nothing was changed" in str(err.value)
    finally:
        lock.release()
        holder_conn.disconnect()


def test_a_lock_whose_session_died_is_taken_over(lab: MockSwitches) -> None:
    name = "nv-lock"
    dead_conn = connect(lab.login(name))
    SwitchLock.new(NvueDriver(dead_conn).lock_shell, name).acquire()
    dead_conn.disconnect()  # the holder's shell is hung up, as when a push is killed
    conn = connect(lab.login(name))
    try:
        push(NvueDriver(conn), config(name), check=True)  # takes the stale lock over
    finally:
        conn.disconnect()
