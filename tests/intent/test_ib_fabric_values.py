"""The ib_fabric intent refuses what the fabric read cannot use: a read_port the ib stage's script
refuses (fabcheck.collect.ib _ARGUMENTS: a CA name not starting with -, a port 1..254), and a firmware
pin vendstat could never print (fw_version "%02d.%02d.%02d", rdma-core infiniband-diags/vendstat.c:470,
commit 691953d8d502f54088f776c5ba2aeed0a5ac945d)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from fabcheck.collect.ib import IB_SCRIPT
from fabcheck.intent.model import IbFabric, IbSwitchFirmwarePin
from tests.intent.test_ib_fabric import GOOD, INTENT, inventory, problems_of

SH = shutil.which("sh") or "/bin/sh"
REFUSED_PORTS = ["mlx5_0/0", "mlx5_0/255", "mlx5_0/999", "mlx5_0/01", "-x/1", "-mlx5_0/1", "mlx5 0/1", "/1"]
ACCEPTED_PORTS = ["mlx5_0/1", "mlx5_0/9", "mlx5_0/10", "ibp1s0.1/199", "mlx5_0/254", "a-b_c.d/2"]


def script_accepts(ca: str, port: str) -> bool:
    """Whether the ib script takes this CA and port (it stops at its first check it fails, exit 2)."""
    ran = subprocess.run(
        [SH, "-c", IB_SCRIPT, "fabcheck-ib", "00ff", "5", "0", ca, port, "--", "probe"],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/nonexistent"},  # past the arguments no tool is found: only the refusal counts
        check=False,
    )
    return "fabcheck: bad CA" not in ran.stderr


@pytest.mark.parametrize("read_port", REFUSED_PORTS)
def test_a_read_port_the_script_refuses_is_refused_naming_the_key(read_port: str) -> None:
    with pytest.raises(ValidationError) as err:
        IbFabric.model_validate({"read_port": read_port})
    (problem,) = err.value.errors()
    assert problem["loc"] == ("read_port",)
    ca, _, port = read_port.rpartition("/")
    if ca and " " not in ca:
        assert not script_accepts(ca, port)  # the same refusal as the script's


@pytest.mark.parametrize("read_port", ACCEPTED_PORTS)
def test_a_read_port_the_script_takes_is_accepted(read_port: str) -> None:
    assert IbFabric.model_validate({"read_port": read_port}).read_port == read_port
    ca, _, port = read_port.rpartition("/")
    assert script_accepts(ca, port)


def test_an_inventory_read_port_problem_names_its_key(tmp_path: Path) -> None:
    source = inventory(tmp_path, GOOD, INTENT + "  ib_fabric:\n    read_port: mlx5_0/255\n")
    found = problems_of(source)
    assert any("fabric_intent.ib_fabric.read_port" in p and "1..254" in p for p in found), found


@pytest.mark.parametrize("version", ["31.2012", "31.2012.1024.7", "31", "31.2012.x", "v31.2012.1024"])
def test_a_firmware_pin_is_three_numbers_as_vendstat_prints_it(version: str) -> None:
    with pytest.raises(ValidationError) as err:
        IbSwitchFirmwarePin.model_validate({"device_id": 54002, "version": version})
    assert err.value.errors()[0]["loc"] == ("version",)


def test_a_three_part_firmware_pin_is_accepted() -> None:
    assert IbSwitchFirmwarePin.model_validate({"device_id": 54002, "version": "31.2012.1024"}).version
