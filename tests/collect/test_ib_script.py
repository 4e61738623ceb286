"""The ib stage's fabric read (fabcheck.collect.ib) run under sh with stand-in infiniband-diags that log
how they were called: the sections it prints, the port selection every tool gets, one vendstat per
switch LID of the topology, the counter window between the two sweeps, and the arguments it refuses.

The topology lines are ibnetdiscover -p lines of treydock/infiniband_exporter
collectors/fixtures/ibnetdiscover/test.out (quoted in /work/shared/reference/ib-nvlink-slurm-prometheus.md
§1.2); the script reads only their first two columns (node type, LID)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from fabcheck.collect.ib import (
    ERRORS_AFTER,
    ERRORS_BEFORE,
    IBNETDISCOVER,
    SAQUERY,
    IbCollection,
    collect_ib,
    ib_caps,
    remote_command,
    section_commands,
)
from fabcheck.collect.script import COUNTER_WINDOW, ROUND_TRIP_CAP_BYTES, SECTION_CAP_BYTES, split_sections
from fabcheck.collect.sm import SM_AND_FABRIC, SM_SECTIONS, collect_sm_with_fabric
from fabcheck.collect.ssh import SshTarget, TimeLimits
from fabcheck.desired.ib import DesiredIbEnd, DesiredIbFabric, DesiredIbLink, DesiredIbSwitch
from fabcheck.desired.sm import desired_subnet_manager
from fabcheck.intent.model import FabricIntent

TOPOLOGY = """\
CA   134  1 0x7cfe9003003b4bde 4x EDR - SW  1719 10 0x7cfe9003009ce5b0 ( 'o0001 HCA-1' - 'ib-i1l1s01' )
SW  1719 10 0x7cfe9003009ce5b0 4x EDR - CA   134  1 0x7cfe9003003b4bde ( 'ib-i1l1s01' - 'o0001 HCA-1' )
SW  1719  1 0x7cfe9003009ce5b0 4x EDR - SW  1516  1 0x7cfe900300b07320 ( 'ib-i1l1s01' - 'ib-i1l2s01' )
SW  1516  1 0x7cfe900300b07320 4x EDR - SW  1719  1 0x7cfe9003009ce5b0 ( 'ib-i1l2s01' - 'ib-i1l1s01' )
SW  2052 37 0x506b4b03005c2740 4x ???                                    'ib-i4l1s01'
"""
LIMITS = TimeLimits(connect_s=5, command_s=30)
TOKEN = "00ff00ff00ff00ff"


def fabric(read_port: tuple[str, int] | None = ("mlx5_0", 1)) -> DesiredIbFabric:
    leaf = DesiredIbEnd("leaf01", "leaf01", 1, "SW")
    host = DesiredIbEnd("gpu01", "gpu01 mlx5_0", 1, "CA", "mlx5_0")
    return DesiredIbFabric(
        reader="sm01",
        read_port=read_port,
        width="4x",
        speed="NDR",
        switches=(DesiredIbSwitch("leaf01", "leaf", "leaf01", 64),),
        links=(DesiredIbLink(host, leaf, "4x", "NDR"),),
    )


def tools(root: Path, *, errors_rc: int = 1, topology: str = TOPOLOGY) -> Path:
    """Stand-in tools under root/bin; each logs `tool args...` to root/calls.log."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (root / "topology.txt").write_text(topology)
    log = root / "calls.log"
    bodies = {
        "ibnetdiscover": f"cat {root / 'topology.txt'}",
        "saquery": 'printf "NodeRecord dump:\\n\\t\\tlid.....................134\\n"',
        # exit 1: ibqueryerrors' "ports with errors beyond threshold" (rdma-core ibqueryerrors.c main)
        "ibqueryerrors": f'echo "## Summary: 3 nodes checked, 0 bad nodes found"; exit {errors_rc}',
        "vendstat": 'for last; do :; done; echo "hw_dev_id:   0xd2f2"; echo "fw_version: 31.2012.1024 $last"',
    }
    for tool, body in bodies.items():
        path = bin_dir / tool
        path.write_text(f'#!/bin/sh\necho "{tool} $*" >> {log}\n{body}\n')
        path.chmod(0o755)
    return bin_dir


def run_script(root: Path, desired: DesiredIbFabric, limits: TimeLimits = LIMITS) -> IbCollection:
    bin_dir = tools(root) if not (root / "bin").exists() else root / "bin"
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "LANG": "C.UTF-8"}
    command = remote_command(TOKEN, desired, limits)
    done = subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    parsed = split_sections(done.stdout, TOKEN)
    return IbCollection("sm01", parsed.sections, parsed.complete)


def calls(root: Path) -> list[str]:
    return (root / "calls.log").read_text().splitlines()


def test_one_script_reads_the_fabric_through_the_planned_port(tmp_path: Path) -> None:
    got = run_script(tmp_path, fabric(), LIMITS.with_window(1))
    assert got.complete
    vendstats = {"vendstat:1719", "vendstat:1516", "vendstat:2052"}  # the SW lines' LIDs, once each
    assert set(got.sections) == {
        "time_limit",
        ERRORS_BEFORE,
        IBNETDISCOVER,
        SAQUERY,
        COUNTER_WINDOW,
        ERRORS_AFTER,
        *vendstats,
    }
    assert got.sections[IBNETDISCOVER].stdout.splitlines() == TOPOLOGY.splitlines()
    assert got.sections["vendstat:2052"].stdout.rstrip().endswith("2052")
    # exit 1 ("errors found") is kept as the answer it is, for the parser to read
    assert got.sections[ERRORS_AFTER].rc == 1 and "## Summary" in got.sections[ERRORS_AFTER].stdout
    assert got.sections[COUNTER_WINDOW].stdout.strip() == "1" and got.sections[COUNTER_WINDOW].rc == 0
    logged = calls(tmp_path)
    assert [line.split()[0] for line in logged] == [
        "ibqueryerrors",
        "ibnetdiscover",
        "saquery",
        "vendstat",
        "vendstat",
        "vendstat",
        "ibqueryerrors",
    ]
    assert all(line.split()[1:5] == ["-C", "mlx5_0", "-P", "1"] for line in logged)
    sweeps = [line for line in logged if line.startswith("ibqueryerrors")]
    assert all(line.endswith("--threshold-file /dev/null") for line in sweeps)
    assert not any(word in ("-k", "-K") for line in logged for word in line.split())  # never cleared


def test_the_commands_a_user_would_type(tmp_path: Path) -> None:
    got = run_script(tmp_path, fabric())
    commands = section_commands(fabric(), got.sections)
    assert commands[IBNETDISCOVER] == "ibnetdiscover -C mlx5_0 -P 1 -p"
    assert commands["vendstat:1516"] == "vendstat -C mlx5_0 -P 1 -N 1516"
    assert commands[ERRORS_AFTER] == "ibqueryerrors -C mlx5_0 -P 1 --threshold-file /dev/null"
    logged = calls(tmp_path)
    assert sorted(logged) == sorted(
        commands[name]
        for name in got.sections
        if name in commands
        and name
        not in (
            "time_limit",
            COUNTER_WINDOW,
        )
    )


def test_without_a_window_the_errors_are_swept_once_and_without_a_port_the_tools_choose(
    tmp_path: Path,
) -> None:
    got = run_script(tmp_path, fabric(read_port=None))
    assert got.complete and ERRORS_BEFORE not in got.sections
    assert got.sections[COUNTER_WINDOW].stdout.strip() == "0"
    assert calls(tmp_path)[0] == "ibnetdiscover -p"
    assert calls(tmp_path)[-1] == "ibqueryerrors --threshold-file /dev/null"


def test_only_switch_lids_that_are_unicast_numbers_are_queried(tmp_path: Path) -> None:
    hostile = textwrap.dedent(
        """\
        SW     0  1 0x0000000000000001 4x NDR                                     'lid zero'
        SW 49152  1 0x0000000000000002 4x NDR                                     'multicast range'
        SW  0x12  1 0x0000000000000003 4x NDR                                     'hex'
        SW  ;reboot  1 0x0000000000000004 4x NDR                                  'a word'
        CA    77  1 0x0000000000000005 4x NDR                                     'a CA'
        SW  0049  1 0x0000000000000006 4x NDR                                     'leading zeros'
        SW    49  2 0x0000000000000006 4x NDR                                     'same switch'
        """
    )
    tools(tmp_path, topology=hostile)
    got = run_script(tmp_path, fabric())
    assert [name for name in got.sections if name.startswith("vendstat")] == ["vendstat:49"]


@pytest.mark.parametrize(
    ("ca", "port", "said"),
    [
        ("-x", "1", "bad CA name"),
        ("mlx5_0;reboot", "1", "bad CA name"),
        ("mlx5_0", "0", "bad CA port"),
        ("mlx5_0", "255", "bad CA port"),
        ("mlx5_0", "", "bad CA port"),
        ("", "1", "bad CA name"),
    ],
)
def test_the_script_refuses_a_port_it_cannot_pass_safely(
    tmp_path: Path, ca: str, port: str, said: str
) -> None:
    given = f"{shlex.quote(ca)} {shlex.quote(port)}"
    command = remote_command(TOKEN, fabric(), LIMITS).replace("mlx5_0 1", given)
    assert command != remote_command(TOKEN, fabric(), LIMITS)
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and said in done.stderr


def test_a_bad_token_or_window_is_refused(tmp_path: Path) -> None:
    for before, after, said in (
        (TOKEN, "XYZ", "bad token"),
        (f"{TOKEN} 10 0 ", f"{TOKEN} 10 601 ", "bad counter window"),
    ):
        command = remote_command(TOKEN, fabric(), LIMITS).replace(before, after)
        done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 2 and said in done.stderr


def test_the_caps_grow_with_the_planned_fabric() -> None:
    small = ib_caps(fabric())
    assert small.section_bytes == SECTION_CAP_BYTES  # a small fabric: the host collection's caps
    assert ROUND_TRIP_CAP_BYTES <= small.round_trip_bytes <= ROUND_TRIP_CAP_BYTES + 1024
    end = DesiredIbEnd("leaf01", "leaf01", 1, "SW")
    links = tuple(DesiredIbLink(end, end, "4x", "NDR") for _ in range(50_000))
    big = ib_caps(DesiredIbFabric("sm01", None, "4x", "NDR", (), links))
    assert big.section_bytes >= 100_000 * 1024 and big.round_trip_bytes >= 4 * big.section_bytes


# ---- over ssh: a fake ssh that runs the remote command here and counts the round trips -------------


@pytest.fixture
def ssh_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An `ssh` first on PATH that logs one line per round trip and runs the remote command here with
    the stand-in tools; the address `nowhere.invalid` is unreachable (ssh's exit 255)."""
    bin_dir = tools(tmp_path)
    ssh = tmp_path / "ssh" / "ssh"
    ssh.parent.mkdir()
    ssh.write_text(
        "#!/bin/sh\nfor remote; do :; done\n"
        '[ "$1" != -G ] || exit 255\n'  # ssh's option probe (fast_kex_known): no round trip
        f"echo round trip >> {tmp_path / 'round_trips.log'}\n"
        'case " $* " in *" nowhere.invalid "*)\n'
        '    echo "ssh: connect to host nowhere.invalid port 22: Connection refused" >&2; exit 255;;\n'
        "esac\n"
        f'PATH={bin_dir}:$PATH exec sh -c "$remote"\n'
    )
    ssh.chmod(0o755)
    assert shutil.which("sh")
    monkeypatch.setenv("PATH", f"{ssh.parent}:{os.environ['PATH']}")
    return tmp_path


def test_collect_ib_is_one_round_trip(ssh_here: Path) -> None:
    got = collect_ib(SshTarget("sm01", "sm01"), fabric(), LIMITS)
    assert got.complete and got.error is None and IBNETDISCOVER in got.sections
    assert len((ssh_here / "round_trips.log").read_text().splitlines()) == 1


def test_an_unreachable_reader_is_an_error_never_an_exception(ssh_here: Path) -> None:
    got = collect_ib(SshTarget("sm01", "nowhere.invalid"), fabric(), LIMITS)
    assert not got.complete and got.sections == {}
    assert got.error is not None and "Connection refused" in got.error


def test_a_hung_tool_is_stopped_at_its_limit_and_the_rest_is_read(tmp_path: Path) -> None:
    bin_dir = tools(tmp_path)
    (bin_dir / "ibnetdiscover").write_text("#!/bin/sh\nexec sleep 100\n")
    started = time.monotonic()
    got = run_script(tmp_path, fabric(), TimeLimits(connect_s=5, command_s=60, per_tool_s=1))
    assert time.monotonic() - started < 30
    assert got.complete
    assert got.sections[IBNETDISCOVER].rc == 124
    assert "stopped after 1 s" in got.sections[IBNETDISCOVER].stderr
    assert got.sections[SAQUERY].rc == 0 and got.sections[ERRORS_AFTER].rc == 1
    assert not [name for name in got.sections if name.startswith("vendstat")]  # no topology, no LID


def test_the_sweeps_are_the_window_apart(tmp_path: Path) -> None:
    bin_dir = tools(tmp_path)
    stamp = bin_dir / "ibqueryerrors"
    stamp.write_text(
        f'#!/bin/sh\ndate +%s >> {tmp_path / "sweeps.log"}\necho "## Summary: 1 nodes checked"\n'
    )
    got = run_script(tmp_path, fabric(), LIMITS.with_window(2))
    assert got.sections[COUNTER_WINDOW].stdout.strip() == "2"
    first, second = (int(line) for line in (tmp_path / "sweeps.log").read_text().split())
    assert second - first >= 2


# ---- the SM node that is the reader: its SM script, then the fabric's, in one round trip -------------


def sm_tools(bin_dir: Path) -> None:
    """Stand-in sminfo and systemctl beside the infiniband-diags ones (the SM script's tools)."""
    line = "sminfo: sm lid 1 sm guid 0x11, activity count 9 priority 15 state 3 SMINFO_MASTER"
    for tool, body in {"sminfo": f'echo "{line}"', "systemctl": "echo active"}.items():
        (bin_dir / tool).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / tool).chmod(0o755)


def test_an_sm_reader_reads_the_fabric_in_its_sm_round_trip(ssh_here: Path) -> None:
    sm_tools(ssh_here / "bin")
    wanted = desired_subnet_manager(FabricIntent(kind="ib"), "sm01")
    got = collect_sm_with_fabric(SshTarget("sm01", "sm01"), wanted, "opensm", fabric(), LIMITS)
    assert len((ssh_here / "round_trips.log").read_text().splitlines()) == 1
    assert got.complete and set(got.sections) == SM_SECTIONS  # the SM checks see theirs alone
    assert got.fabric is not None and got.fabric.complete and got.fabric.error is None
    assert {IBNETDISCOVER, SAQUERY, ERRORS_AFTER, "vendstat:1719"} <= set(got.fabric.sections)
    assert set(got.fabric.sections).isdisjoint(SM_SECTIONS)


def test_a_fabric_read_cut_short_leaves_the_sm_read_whole(ssh_here: Path) -> None:
    sm_tools(ssh_here / "bin")
    (ssh_here / "bin" / "saquery").write_text("#!/bin/sh\nexec sleep 30\n")  # past the round trip's limit
    wanted = desired_subnet_manager(FabricIntent(kind="ib"), "sm01")
    limits = TimeLimits(connect_s=5, command_s=3, per_tool_s=20)
    got = collect_sm_with_fabric(SshTarget("sm01", "sm01"), wanted, "opensm", fabric(), limits)
    assert got.complete and set(got.sections) == SM_SECTIONS
    assert got.fabric is not None and not got.fabric.complete  # the SM script's complete line is not its
    assert IBNETDISCOVER in got.fabric.sections and got.fabric.sections[SAQUERY].rc is None


def test_complete_is_the_last_script_s_word() -> None:
    def mark(word: str) -> str:
        return f"<<<fabcheck {TOKEN} {word}>>>\n"

    sm = mark("begin sminfo") + "x\n" + mark("stderr sminfo") + mark("end sminfo rc=0") + mark("complete")
    assert split_sections(sm, TOKEN).complete
    cut = split_sections(sm + mark("begin ibnetdiscover") + "SW 1\n", TOKEN)
    assert not cut.complete and cut.sections["ibnetdiscover"].rc is None


def test_a_fabric_script_that_refuses_its_arguments_is_the_fabric_s_error(ssh_here: Path) -> None:
    # Port 255 is past the script's 1..254: it exits 2 before its first section, so the last complete
    # line read is the SM script's; the SM read is whole, the fabric's is not, and says why.
    sm_tools(ssh_here / "bin")
    wanted = desired_subnet_manager(FabricIntent(kind="ib"), "sm01")
    refused = fabric(read_port=("mlx5_0", 255))
    got = collect_sm_with_fabric(SshTarget("sm01", "sm01"), wanted, "opensm", refused, LIMITS)
    assert got.complete and got.error is None and set(got.sections) == SM_SECTIONS
    assert got.fabric is not None and not got.fabric.complete and got.fabric.sections == {}
    assert got.fabric.error is not None and "fabcheck: bad CA port" in got.fabric.error
    assert "(exit 2)" in got.fabric.error


def test_the_sm_script_gets_as_many_words_as_it_is_told() -> None:
    sm = 'echo sm "$0" "$@"'
    fabric_script = 'echo fabric "$0" "$@"'
    for words in (["s0", "a", "b"], ["s0", "a", "b", "c", "d", "e", "f", "g", "h"]):
        argv = [str(len(words)), sm, *words, fabric_script, "f0", "x y"]
        ran = subprocess.run(
            ["sh", "-c", SM_AND_FABRIC, "t", *argv], capture_output=True, text=True, check=False
        )
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.splitlines() == ["sm " + " ".join(words), "fabric f0 x y"]
    bad = subprocess.run(["sh", "-c", SM_AND_FABRIC, "t", "9", sm, "a"], capture_output=True, text=True)
    assert bad.returncode == 2 and "bad SM word count" in bad.stderr
