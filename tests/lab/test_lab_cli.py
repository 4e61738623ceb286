"""`fabcheck lab ...` as a user meets it: listings and one-line errors (exit 2), no root needed."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from fabcheck.cli import main
from fabcheck_lab import preflight
from fabcheck_lab.faults import LAB_FAULTS
from fabcheck_lab.ib_fabric import FAULTS as IB_FAULTS
from fabcheck_lab.mockhost.faults import HOST_FAULTS
from fabcheck_lab.mockswitch import SWITCH_FAULTS
from fabcheck_lab.state import LabError


@pytest.fixture
def empty_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the lab at a checkout that has never had a lab, so the real one is never touched."""
    (tmp_path / "inventory").mkdir()
    monkeypatch.setattr("fabcheck_lab.cli.project_root", lambda: tmp_path)
    return tmp_path


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_faults_lists_every_fault_once_with_its_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "faults"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in lines]
    assert names == [*HOST_FAULTS, *SWITCH_FAULTS, *IB_FAULTS, *LAB_FAULTS]
    assert {line.split()[1] for line in lines} == {"host", "switch", "IB", "any"}  # IB switch
    contract = {"pfc-off", "trust-pcp", "dscp-map", "ecn-off", "tos", "mtu", "affinity", "no-rdma"}
    contract |= {"host-persist-stale", "sm-conf-drift"}  # boot files of roce_host; opensm.conf of an SM
    contract |= {"link-down", "link-speed"}  # one port down, one port at a lower rate
    contract |= {"pfc-storm-off"}  # one NIC's PFC storm prevention off
    contract |= {"link-errors", "link-flap", "optic-rx-low"}  # the wire of one NIC (issue 35)
    contract |= {"fw-mismatch", "fw-config-drift"}  # one NIC's firmware version / parameter (issue 36)
    contract |= {"dmabuf-host"}  # a host variant, not a fault: GPUDirect by dma-buf (issue 36)
    contract |= {"pcie-degraded", "acs-on", "iommu-translated"}  # the PCIe bus of one host (issue 36)
    contract |= {"gpu-ecc", "xid"}  # GPU0's ECC and row remap, an Xid 79 in the kernel log (issue 36)
    contract |= {"nvlink-down", "clique-mismatch"}  # GPU0's NVLink 3, one NVL tray's clique (issue 38)
    assert set(HOST_FAULTS) == contract
    wire = {"switch-link-errors", "switch-optic-hot"}  # the wire of one port (issue 35)
    planned = {"uplink-swap"}  # two uplinks of a planned leaf swapped (issue 39, a lab from a plan)
    assert set(SWITCH_FAULTS) == {"switch-pfc-prio", "switch-ecn-off", "switch-miswired"} | wire | planned
    ib = {
        "ib-link-width",
        "ib-link-speed",
        "ib-miswire",
        "ib-link-missing",
        "ib-symbol-errors",
        "ib-dup-guid",
    }
    assert set(IB_FAULTS) == ib  # the InfiniBand fabric between the hosts (issue 37)


def test_unknown_fault_names_every_valid_fault(
    capsys: pytest.CaptureFixture[str], empty_checkout: Path
) -> None:
    assert main(["lab", "inject", "cable-cut", "--node", "gpu01"]) == 2
    line = _one_error_line(capsys)
    assert line.startswith("fabcheck: unknown fault 'cable-cut'; faults: ")
    assert all(name in line for name in [*HOST_FAULTS, *SWITCH_FAULTS, *LAB_FAULTS])


@pytest.mark.parametrize("argv", [["inject", "mtu", "--node", "gpu01"], ["heal", "--node", "gpu01"]])
def test_faults_need_a_lab(argv: list[str], capsys: pytest.CaptureFixture[str], empty_checkout: Path) -> None:
    assert main(["lab", *argv]) == 2
    assert _one_error_line(capsys) == "fabcheck: no lab is up; start one with `fabcheck lab up`"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--profile", "ib", "--switches", "1"],
            "the ib profile's --switches are IB leaves and spines: give 0, or 2 or more",
        ),
        (
            ["--profile", "ib", "--hosts", "1249"],
            "--hosts 1249: the lab holds at most 1250 host nodes"
            " including the 2 subnet-manager nodes of the ib profile",
        ),
    ],
)
def test_impossible_lab_shapes(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lab", "up", *argv]) == 2
    assert _one_error_line(capsys) == f"fabcheck: {message}"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--switches", "-1"], "argument --switches: -1 is out of range (allowed: 0..250)"),
        (["--switches", "251"], "argument --switches: 251 is out of range (allowed: 0..250)"),
        (["--switches", "two"], "argument --switches: 'two' is not a whole number (allowed: 0..250)"),
        (["--hosts", "0"], "argument --hosts: 0 is out of range (allowed: 1..1250)"),
        (["--hosts", "1300"], "argument --hosts: 1300 is out of range (allowed: 1..1250)"),
        (["--rtt-ms", "-1"], "argument --rtt-ms: -1 is out of range (allowed: 0..1000 ms)"),
        (["--rtt-ms", "nan"], "argument --rtt-ms: nan is out of range (allowed: 0..1000 ms)"),
        (["--rtt-ms", "fast"], "argument --rtt-ms: 'fast' is not a number of milliseconds"),
    ],
)
def test_out_of_range_counts_name_the_option_and_its_range(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["lab", "up", *argv])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"fabcheck lab up: error: {message}"


def test_inject_help_lists_every_fault_with_its_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["lab", "inject", "--help"])
    assert exit_info.value.code == 0
    help_lines = capsys.readouterr().out.splitlines()
    listing = {**HOST_FAULTS, **SWITCH_FAULTS, **LAB_FAULTS}
    for name, text in listing.items():
        line = next((line for line in help_lines if line.split()[:1] == [name]), None)
        assert line is not None and line.rstrip().endswith(text), name


def test_up_as_non_root_is_one_clear_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, empty_checkout: Path
) -> None:
    monkeypatch.setattr("fabcheck_lab.preflight.os.geteuid", lambda: 1000)
    assert main(["lab", "up"]) == 2
    assert "needs root" in _one_error_line(capsys)


def test_missing_tools_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("fabcheck_lab.preflight.shutil.which", lambda tool: None)
    with pytest.raises(LabError, match=r"missing on this machine: unshare, tc"):
        preflight.require_tools()


def test_an_address_already_in_use_is_reported() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(LabError, match=rf"already in use: 127\.0\.0\.1:{port} \(another lab or sshd\?\)"):
            preflight.require_free([("127.0.0.1", port)])


def test_status_and_down_without_a_lab(capsys: pytest.CaptureFixture[str], empty_checkout: Path) -> None:
    assert main(["lab", "status"]) == 1
    assert capsys.readouterr().out.strip() == "no lab is up"
    assert main(["lab", "status", "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {"up": False, "nodes": [], "faults": []}
    assert main(["lab", "down"]) == 0
    assert capsys.readouterr().out.strip() == "no lab to take down"


def test_bad_network_mode_is_an_argument_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["lab", "up", "--net", "netns"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'netns'" in capsys.readouterr().err
