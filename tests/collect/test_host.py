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
from fabcheck.checks.host.evidence import HostEvidence
from fabcheck.checks.model import Status
from fabcheck.collect import host as collect
from fabcheck.collect.host import (
    COLLECT_SCRIPT,
    collection_script,
    remote_command,
    section_command,
)
from fabcheck.collect.script import HostProbe, Section, earlier, split_sections
from fabcheck.parsers.wire_records import LinkCounters, LinkDelta, ModuleOptics
from tests.checks.host.hostdata import TOKEN, healthy_sections, only, run_checks


def test_every_probe_a_check_needs_is_declared_and_every_probe_is_needed() -> None:
    needed = {name for check in (*checks.HOST_CHECK_DECLS, *checks.FLEET_CHECK_DECLS) for name in check.reads}
    declared = {probe.name for probe in collect.HOST_PROBES}
    assert needed - declared == set()
    # rdma_link is also what the script loops over; time_limit is judged as the collection's own bound.
    # The wire probes are read through HostEvidence.wire by the host wire checks (issue 35), which may
    # land after them; the counter window is read with them.
    wire = {collect.COUNTER_WINDOW, collect.LINK_STATS, collect.FEC, collect.MODULE, collect.MLXLINK}
    # The NVLink probes are read by the host.nvlink/nvlink_fabric/imex/fabric_manager checks (issue 38),
    # which may land after them.
    nvlink = {
        collect.NVLINK_STATUS,
        collect.IMEX_ACTIVE,
        collect.IMEX_NODES,
        collect.IMEX_STATUS,
        collect.FABRIC_MANAGER_ACTIVE,
    }
    # The RDMA hw_counters (ECN marks, CNPs, sequence errors) are read by the metrics alone (issue 40).
    metrics = {collect.RDMA_HW_COUNTERS}
    assert {collect.TIME_LIMIT} <= declared - needed <= {collect.TIME_LIMIT, *wire, *nvlink, *metrics}
    assert len(declared) == len(collect.HOST_PROBES)  # one declaration per probe name


def test_the_script_is_fixed_text_of_the_probe_table() -> None:
    assert collection_script() == collection_script() == collect.COLLECT_SCRIPT
    for probe in collect.HOST_PROBES:
        if not probe.builtin:
            assert f'section "{probe.section("")}' in collect.COLLECT_SCRIPT, probe.name
    sections = [
        line.strip() for line in collect.COLLECT_SCRIPT.splitlines() if line.strip().startswith("section ")
    ]
    # A counter probe is read twice: before and after the counter window.
    assert len(sections) == sum(1 + probe.counter for probe in collect.HOST_PROBES if not probe.builtin)
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
        ["/bin/sh", "-c", collect.COLLECT_SCRIPT, "fabcheck-collect", TOKEN, "3", "10", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": str(tmp_path / "bin")},
    )
    parsed = split_sections(done.stdout, TOKEN)
    assert parsed.complete
    subject = {"host": "", "port": "mlx5_0/1", "netdev": "ens1np0"}
    counters = any(probe.counter for probe in collect.HOST_PROBES)  # window 0: one reading, the window said
    wanted = {
        probe.section(subject[probe.scope])
        for probe in collect.HOST_PROBES
        if probe.name != collect.COUNTER_WINDOW or counters
    }
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
        ["/bin/sh", "-c", COLLECT_SCRIPT, "fabcheck-collect", TOKEN, "3", "10", "0"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={"PATH": "/nonexistent"},
    )
    parsed = split_sections(done.stdout, TOKEN)
    assert parsed.complete
    assert {"topo", "lsmod", "ibv_devinfo", "rdma_link"} <= set(parsed.sections)
    failed = {name: s for name, s in parsed.sections.items() if name != collect.COUNTER_WINDOW}
    assert all(s.rc not in (None, 0) for s in failed.values())
    assert parsed.sections[collect.COUNTER_WINDOW].rc == 0  # the script's own: the window it waited


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


def _reading(**values: int) -> LinkCounters:
    return LinkCounters(values)  # type: ignore[arg-type]


def _wire_records(window: object) -> dict[tuple[str, str], object]:
    records = collect.read_records(healthy_sections(), 3)
    records[(collect.COUNTER_WINDOW, "")] = window
    records[(collect.LINK_STATS, "ens1np0")] = _reading(fcs_errors=12, link_down=3)
    records[(collect.FEC, "ens1np0")] = LinkCounters({"fec_corrected": 40}, fec_mode="RS")
    records[(earlier(collect.LINK_STATS), "ens1np0")] = _reading(fcs_errors=2, link_down=3)
    records[(earlier(collect.FEC), "ens1np0")] = LinkCounters({"fec_corrected": 10}, fec_mode="RS")
    records[(collect.MODULE, "ens1np0")] = ModuleOptics(True, False, "DAC")
    return records


def test_wire_evidence_is_the_merged_counters_over_the_window_and_the_module() -> None:
    wire = HostEvidence(_wire_records(5)).wire("ens1np0")
    assert isinstance(wire.counters, LinkDelta) and wire.counters.window_s == 5
    assert dict(wire.counters.grown) == {"fcs_errors": 10, "link_down": 0, "fec_corrected": 30}
    assert wire.counters.reading.fec_mode == "RS"
    assert wire.optics == ModuleOptics(True, False, "DAC") and not wire.no_module


def test_wire_evidence_of_a_zero_window_is_lifetime_totals() -> None:
    records = _wire_records(0)
    records = {key: value for key, value in records.items() if not key[0].endswith(".before")}
    counters = HostEvidence(records).wire("ens1np0").counters
    assert isinstance(counters, LinkDelta) and counters.lifetime
    assert dict(counters.grown) == {"fcs_errors": 12, "link_down": 3, "fec_corrected": 40}


def test_wire_evidence_merges_mlxlink_where_it_answered_and_ignores_it_where_absent() -> None:
    records = _wire_records(5)
    records[(collect.MLXLINK, "mlx5_0/1")] = LinkCounters({"corrected_bits": 9, "received_bits": 10**10})
    records[(earlier(collect.MLXLINK), "mlx5_0/1")] = LinkCounters({"corrected_bits": 4, "received_bits": 0})
    counters = HostEvidence(records).wire("ens1np0").counters
    assert isinstance(counters, LinkDelta) and counters.pre_fec_ber == 5 / 10**10
    records[(collect.MLXLINK, "mlx5_0/1")] = None  # not installed: absent, never unreadable
    counters = HostEvidence(records).wire("ens1np0").counters
    assert isinstance(counters, LinkDelta) and "corrected_bits" not in counters.grown


def test_wire_evidence_unreadable_names_what_failed() -> None:
    failed = collect.Unreadable("ethtool -I --show-fec ens1np0", "exit 1: bad command line argument(s)")
    records = _wire_records(5)
    records[(earlier(collect.FEC), "ens1np0")] = failed
    assert HostEvidence(records).wire("ens1np0").counters == failed
    # A round trip stopped inside the window has no counter_window section: no second reading.
    cut = collect.Unreadable("sleep '<counter window>'", "not in the collected output")
    counters = HostEvidence(_wire_records(cut)).wire("ens1np0").counters
    assert isinstance(counters, collect.Unreadable)
    assert counters.command == section_command("link_stats:ens1np0", 3)
    assert "the counter window did not complete" in counters.reason


def test_ethtool_m_without_a_module_eeprom_is_a_named_unreadable_the_checks_skip() -> None:
    answer = collect.module_answer(lambda text, source: ModuleOptics(True, True, text))
    assert answer(0, "QSFP28", "", "ethtool -m ens1np0") == ModuleOptics(True, True, "QSFP28")
    # ethtool's own message (real: sonic-net/sonic-mgmt issue 8198, "...: No such device").
    said = "Cannot get module EEPROM information: No such device\n"
    none = answer(1, "", said, "ethtool -m ens1np0")
    assert isinstance(none, collect.Unreadable) and none.reason.startswith(collect.NO_MODULE_EEPROM)
    from fabcheck.checks.host.evidence import WireEvidence

    assert WireEvidence(collect.Unreadable("x", "y"), none).no_module
    denied = answer(1, "", "Cannot get module EEPROM information: Operation not permitted\n", "ethtool -m x")
    assert isinstance(denied, collect.Unreadable) and not denied.reason.startswith(collect.NO_MODULE_EEPROM)
    assert not WireEvidence(collect.Unreadable("x", "y"), denied).no_module
