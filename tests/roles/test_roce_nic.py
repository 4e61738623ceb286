"""The roce_nic module's pure parts.

Its own mlnx_qos reader agrees with fabcheck's parser (the module runs on targets, so it cannot import
fabcheck), and its plan writes exactly what differs from the intent.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import CORPUS

from fabcheck.parsers.mlnx_qos import parse_mlnx_qos

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def roce_nic() -> ModuleType:
    spec = importlib.util.spec_from_file_location("roce_nic", REPO / "roles/roce_host/library/roce_nic.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["roce_nic"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def params(**overrides: object) -> dict:
    base = {
        "devices": ["mlx5_0"],
        "trust": "dscp",
        "lossless_priority": 3,
        "lossless_dscp": [26],
        "pfc": True,
        "cnp_dscp": 48,
        "cnp_priority": 6,
        "np_enable": True,
        "rp_enable": True,
        "min_time_between_cnps": None,
        "rp_params": {},
        "roce_tos": 106,
        "mtu": 9000,
    }
    return {**base, **overrides}


SAMPLES = sorted((CORPUS / "nic-state").glob("mlnx_qos-*.txt"))


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_module_reader_agrees_with_the_fabcheck_parser(roce_nic: ModuleType, sample: Path) -> None:
    text = sample.read_text()
    reference = parse_mlnx_qos(text, sample.name)
    try:
        trust, pfc, mapping = roce_nic.parse_mlnx_qos(text)
    except ValueError:
        pytest.skip("excerpt without trust or PFC table: the module reads whole mlnx_qos -i output only")
    assert trust == reference.trust
    assert pfc == list(reference.pfc_enabled)
    if mapping is not None and reference.dscp2prio:
        assert mapping == dict(reference.dscp2prio)


def nic_at(roce_nic: ModuleType, **state: str) -> object:
    current = {
        "trust": "dscp",
        "pfc": "3",
        "roce_np/enable/3": "1",
        "roce_rp/enable/3": "1",
        "roce_np/cnp_dscp": "48",
        "roce_np/cnp_802p_prio": "6",
        "mtu": "9000",
        "traffic_class/1": "106",
        "rdma_cm_tos/1": "106",
    }
    current.update(state)
    return roce_nic.Nic(dev="mlx5_0", netdev="ens1np0", ports=["1"], state=current, dscp2prio={26: 3, 48: 6})


def test_a_nic_at_the_intent_needs_no_change(roce_nic: ModuleType) -> None:
    assert roce_nic.plan(nic_at(roce_nic), params()) == []


def test_only_what_differs_is_written_with_argv_commands(roce_nic: ModuleType) -> None:
    nic = nic_at(roce_nic, trust="pcp", pfc="none", mtu="1500", **{"traffic_class/1": "0"})
    nic.dscp2prio = None  # hidden while trust is pcp
    changes = {c.key: c for c in roce_nic.plan(nic, params())}
    assert set(changes) == {"trust", "dscp2prio", "pfc", "mtu", "traffic_class/1"}
    assert changes["trust"].argv == ["mlnx_qos", "-i", "ens1np0", "--trust", "dscp"]
    assert changes["pfc"].argv == ["mlnx_qos", "-i", "ens1np0", "--pfc", "0,0,0,1,0,0,0,0"]
    assert changes["dscp2prio"].argv[-4:] == ["--dscp2prio", "set,26,3", "--dscp2prio", "set,48,6"]
    assert changes["traffic_class/1"].sysfs == ("/sys/class/infiniband/mlx5_0/tc/1/traffic_class", "106")
    assert (changes["mtu"].before, changes["mtu"].after) == ("1500", "9000")


def test_pfc_only_turns_nic_congestion_control_off(roce_nic: ModuleType) -> None:
    changes = {c.key: c for c in roce_nic.plan(nic_at(roce_nic), params(np_enable=False, rp_enable=False))}
    assert set(changes) == {"roce_np/enable/3", "roce_rp/enable/3"}
    assert changes["roce_np/enable/3"].after == "0"


@pytest.mark.parametrize("name", ["../mlx5_0", "..", "mlx5_0; reboot", "", "a b"])
def test_unsafe_names_are_refused(roce_nic: ModuleType, name: str) -> None:
    with pytest.raises(roce_nic.NicError):
        roce_nic.check_name("RDMA device", name)


def test_out_of_range_values_are_refused(roce_nic: ModuleType) -> None:
    with pytest.raises(roce_nic.NicError, match=re.escape("lossless_priority=9: out of range, allowed 0..7")):
        roce_nic.check_params(params(lossless_priority=9))
    with pytest.raises(roce_nic.NicError, match=re.escape("rp_params.bogus: unknown")):
        roce_nic.check_params(params(rp_params={"bogus": 1}))
    assert roce_nic.traffic_class_value("Global tclass=106") == "106"


def test_module_knows_the_same_dcqcn_parameters_as_the_intent(roce_nic: ModuleType) -> None:
    # The module runs on targets without fabcheck, so it carries its own copy of the list.
    from fabcheck.intent.model import DCQCN_RP_PARAMS

    assert tuple(roce_nic.RP_PARAMS) == DCQCN_RP_PARAMS
