"""fabcheck.collect.host: the host probe table, the collection script generated from it (run under a
real POSIX sh), the command each section names and the records read back from the sections."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fabcheck.checks import host as checks
from fabcheck.checks.model import Status
from fabcheck.collect import host as collect
from fabcheck.collect.host import (
    COLLECT_SCRIPT,
    collection_script,
    remote_command,
    section_command,
)
from fabcheck.collect.script import HostProbe, Section, split_sections
from tests.checks.host.hostdata import TOKEN, healthy_sections, only, run_checks


def test_every_probe_a_check_needs_is_declared_and_every_probe_is_needed() -> None:
    needed = {name for check in (*checks.HOST_CHECK_DECLS, *checks.FLEET_CHECK_DECLS) for name in check.reads}
    declared = {probe.name for probe in collect.HOST_PROBES}
    assert needed - declared == set()
    # rdma_link is also what the script loops over; time_limit is judged as the collection's own bound.
    assert declared - needed == {collect.TIME_LIMIT}
    assert len(declared) == len(collect.HOST_PROBES)  # one declaration per probe name


def test_the_script_is_fixed_text_of_the_probe_table() -> None:
    assert collection_script() == collection_script() == collect.COLLECT_SCRIPT
    for probe in collect.HOST_PROBES:
        if not probe.builtin:
            assert f'section "{probe.section("")}' in collect.COLLECT_SCRIPT, probe.name
    sections = [
        line.strip() for line in collect.COLLECT_SCRIPT.splitlines() if line.strip().startswith("section ")
    ]
    assert len(sections) == len([p for p in collect.HOST_PROBES if not p.builtin])
    assert not [line for line in sections if "{" in line]  # every placeholder became a script variable


@pytest.mark.parametrize(
    "argv",
    [("cat", "/sys/$(reboot)"), ("cat", "/sys/`id`"), ("cat", 'a"b'), ("cat", "a b"), ("cat", "{secret}")],
)
def test_a_probe_word_a_shell_would_read_is_refused(argv: tuple[str, ...]) -> None:
    probe = HostProbe("bad", "host", argv, str)
    with pytest.raises(ValueError):
        collection_script((*collect.HOST_PROBES, probe))


def _fake_tools(bin_dir: Path) -> None:
    """A host with one RoCE port: `rdma link` lists it, the other tools are the system's or absent."""
    bin_dir.mkdir()
    (bin_dir / "rdma").write_text(
        "#!/bin/sh\necho 'link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1np0'\n"
    )
    (bin_dir / "rdma").chmod(0o755)
    for tool in ("timeout", "mktemp", "cat", "rm", "grep", "ls"):
        found = shutil.which(tool)
        assert found, tool
        os.symlink(found, bin_dir / tool)


def test_the_generated_script_prints_every_declared_section_for_each_port_and_netdev(tmp_path: Path) -> None:
    _fake_tools(tmp_path / "bin")
    done = subprocess.run(
        ["/bin/sh", "-c", collect.COLLECT_SCRIPT, "fabcheck-collect", TOKEN, "3", "10"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": str(tmp_path / "bin")},
    )
    parsed = split_sections(done.stdout, TOKEN)
    assert parsed.complete
    subject = {"host": "", "port": "mlx5_0/1", "netdev": "ens1np0"}
    wanted = {probe.section(subject[probe.scope]) for probe in collect.HOST_PROBES}
    assert set(parsed.sections) == wanted
    assert parsed.sections["rdma_link"].rc == 0
    assert parsed.sections["cma_roce_tos:mlx5_0/1"].rc == 127  # not installed here: a failed section


def test_records_are_keyed_by_probe_and_subject_and_unreadable_names_the_command() -> None:
    records = collect.read_records(healthy_sections(), 3)
    assert records[("cma_roce_tos", "mlx5_0/1")] == 106
    assert records[("cma_roce_mode", "mlx5_1/1")] == "RoCE v2"
    assert records[("min_time_between_cnps", "ens1np0")] == 4
    assert records[("roce_rp", "ens2np0")]["rpg_gd"] == 11
    sections = healthy_sections() | {"cma_roce_mode:mlx5_0/1": Section(1, "", "Device mlx5_0 not found\n")}
    unread = collect.read_records(sections, 3)[("cma_roce_mode", "mlx5_0/1")]
    assert unread == collect.Unreadable("cma_roce_mode -d mlx5_0 -p 1", "exit 1: Device mlx5_0 not found")


def test_collection_script_runs_under_posix_sh_and_splits_back() -> None:
    """The real script under the local sh: tools missing here are reported per section, then complete."""
    done = subprocess.run(
        ["/bin/sh", "-c", COLLECT_SCRIPT, "fabcheck-collect", TOKEN, "3", "10"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={"PATH": "/nonexistent"},
    )
    parsed = split_sections(done.stdout, TOKEN)
    assert parsed.complete
    assert {"topo", "lsmod", "ibv_devinfo", "rdma_link"} <= set(parsed.sections)
    assert all(s.rc not in (None, 0) for s in parsed.sections.values())


def test_collection_script_rejects_bad_arguments() -> None:
    for token, prio, limit in (
        ("not-hex", "3", "10"),
        (TOKEN, "8", "10"),
        (TOKEN, "3;reboot", "10"),
        (TOKEN, "3", "0"),
        (TOKEN, "3", "1;reboot"),
    ):
        done = subprocess.run(
            ["sh", "-c", COLLECT_SCRIPT, "x", token, prio, limit],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 2 and "<<<fabcheck" not in done.stdout
    with pytest.raises(ValueError):
        remote_command(TOKEN, 9)


def test_section_command_names_what_ran() -> None:
    assert section_command("mlnx_qos:ens1np0", 3) == "mlnx_qos -i ens1np0"
    assert section_command("ecn_rp_enable:ens1np0", 5) == "cat /sys/class/net/ens1np0/ecn/roce_rp/enable/5"
    assert (
        section_command("traffic_class:mlx5_0/1", 3) == "cat /sys/class/infiniband/mlx5_0/tc/1/traffic_class"
    )


def test_a_parser_crash_is_unreadable_evidence_naming_the_section(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(text: str, source: str) -> object:
        raise RecursionError("parser bug")

    table = tuple(
        dataclasses.replace(probe, parse=broken) if probe.name == "topo" else probe
        for probe in collect.HOST_PROBES
    )
    monkeypatch.setattr(collect, "HOST_PROBES", table)
    findings = run_checks()
    error = only(findings, checks.AFFINITY, "topology")
    assert error.status is Status.ERROR
    assert (
        error.actual == "could not read `nvidia-smi topo -m`: unreadable output (RecursionError: parser bug)"
    )
    assert only(findings, checks.TRUST, "mlx5_0").status is Status.PASS  # the other sections still judged
