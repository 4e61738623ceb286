"""Platform port names of a planned switch (fabcheck.fabricplan.ports), replayed against the real
SONiC SN5600 port_config.ini files (tests/data/real/sonic, INDEX.tsv) and the cited NVUE and EOS rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabcheck.fabricplan.model import PlanError, SwitchModel
from fabcheck.fabricplan.ports import cage_and_lane, model_port_name, model_port_names, port_name
from fabcheck.intent.platforms import PLATFORMS

SONIC = Path(__file__).resolve().parents[1] / "data" / "real" / "sonic"


def sn5600_rows(name: str) -> list[tuple[str, int, str]]:
    """(port name, cage index, alias) of each front-panel OSFP port of a port_config.ini (cage 65, the
    25G bonus port, is no OSFP cage)."""
    rows = []
    for line in (SONIC / name).read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        port, _lanes, alias, index, *_ = line.split()
        if int(index) <= 64:
            rows.append((port, int(index), alias))
    return rows


@pytest.mark.parametrize(
    ("file", "lanes"),
    [
        ("sn5600-port_config-1x800g.ini", 1),
        ("sn5600-port_config-2x400g.ini", 2),
        ("sn5600-port_config-4x200g.ini", 4),
    ],
)
def test_sonic_names_are_the_sn5600_hwsku_names(file: str, lanes: int) -> None:
    rows = sn5600_rows(file)
    assert len(rows) == 64 * lanes
    for n, (port, cage, alias) in enumerate(rows, start=1):
        assert cage_and_lane(n, lanes) == (cage, "abcd".index(alias[-1]) if lanes > 1 else 0), alias
        assert port_name("sonic", n, lanes) == port


def test_nvue_names_follow_the_breakout_rule() -> None:
    # `nv set interface swp1 link breakout 4x` makes swp1s0-3 (CumulusNetworks/docs, Switch Port Attributes).
    assert [port_name("nvue", n, 4) for n in range(1, 6)] == [
        "swp1s0",
        "swp1s1",
        "swp1s2",
        "swp1s3",
        "swp2s0",
    ]
    assert [port_name("nvue", n, 1) for n in (1, 64)] == ["swp1", "swp64"]
    assert [port_name("nvue", n, 2) for n in (1, 2, 3, 128)] == ["swp1s0", "swp1s1", "swp2s0", "swp64s1"]


def test_eos_names_take_the_first_lane_of_each_link() -> None:
    assert [port_name("eos", n, 2) for n in (1, 2, 3)] == ["Ethernet1/1", "Ethernet1/5", "Ethernet2/1"]
    assert [port_name("eos", n, 4) for n in range(1, 5)] == [f"Ethernet1/{k}" for k in (1, 3, 5, 7)]
    assert [port_name("eos", n, 8) for n in (1, 8, 9)] == ["Ethernet1/1", "Ethernet1/8", "Ethernet2/1"]
    assert port_name("eos", 64, 1) == "Ethernet64/1"


def test_infiniband_ports_are_numbers() -> None:
    assert [port_name(None, n, 2) for n in (1, 64)] == ["1", "64"]


@pytest.mark.parametrize("platform", ["nvue", "sonic", "eos"])
@pytest.mark.parametrize("lanes", [1, 2, 4, 8])
def test_every_name_is_unique_and_the_loader_accepts_it(platform: str, lanes: int) -> None:
    names = [port_name(platform, n, lanes) for n in range(1, 64 * lanes + 1)]
    assert len(set(names)) == len(names)
    assert all(PLATFORMS[platform].port_name.fullmatch(name) for name in names)


def test_a_breakout_no_platform_names_is_refused() -> None:
    with pytest.raises(PlanError, match="3 links per cage: nvue breaks a cage out into 1, 2, 4, 8 links"):
        port_name("nvue", 1, 3)
    with pytest.raises(PlanError, match="platform 'junos'"):
        port_name("junos", 1, 1)


def test_model_port_names() -> None:
    model = SwitchModel("sn5600", "NVIDIA Spectrum-4 SN5600", "roce", 64, 800, (800, 400, 200), "nvue", "")
    names = model_port_names(model, 400)
    assert (len(names), names[0], names[-1]) == (128, "swp1s0", "swp64s1")
    with pytest.raises(PlanError, match="cannot break out to 100 Gb/s"):
        model_port_name(model, 100, 1)
    with pytest.raises(PlanError, match=r"port 129 is not one of its 1\.\.128"):
        model_port_name(model, 400, 129)
