"""The desired NIC/host state follows the intent, for the default recipe and for non-default intents."""

from __future__ import annotations

from dataclasses import fields

import pytest

from fabcheck.desired import desired_host, desired_nic
from fabcheck.desired.nic import (
    DEFAULT_COUNTER_WINDOW_S,
    MAX_COUNTER_WINDOW_S,
    ROCE_NIC_SETTINGS,
    DesiredNic,
    counter_window,
)
from fabcheck.intent.model import FabricIntent


def intent(**overrides: object) -> FabricIntent:
    return FabricIntent.model_validate(overrides)


def test_default_recipe() -> None:
    nic = desired_nic(intent(), "gpu01", "mlx5_0")
    assert (nic.host, nic.device, nic.trust) == ("gpu01", "mlx5_0", "dscp")
    assert nic.pfc_priorities == (3,)
    assert nic.pfc_bitmap == (0, 0, 0, 1, 0, 0, 0, 0)
    assert nic.dscp_to_priority == {26: 3, 48: 6}
    assert (nic.ecn_priority, nic.np_enable, nic.rp_enable) == (3, True, True)
    assert (nic.cnp_dscp, nic.cnp_priority, nic.min_time_between_cnps) == (48, 6, 4)
    assert (nic.roce_tos, nic.netdev_mtu, nic.rdma_mtu) == (106, 9000, 4096)
    assert (nic.link_layer, nic.speed_gbps) == ("Ethernet", 400)
    assert nic.rp_params == {}
    assert nic.pfc_storm_prevention_ms == 100  # mlx5's own "auto" value; the NIC ships at 8000 ms


def test_non_default_intent_changes_every_derived_value() -> None:
    custom = intent(
        lossless={"dscp": [24, 25], "priority": 4},
        cnp={"dscp": 46, "priority": 5},
        roce_tos=98,  # DSCP 24 << 2 | ECT(0)
        congestion_control="pfc_only",
        mtu={"netdev": 4200, "rdma": 4096, "switch": 9216},
        dcqcn={"min_time_between_cnps": 8, "rp_params": {"rpg_ai_rate": 10}},
        link={"speed_gbps": 200},
    )
    nic = desired_nic(custom, "h", "mlx5_3")
    assert nic.pfc_bitmap == (0, 0, 0, 0, 1, 0, 0, 0)
    assert nic.dscp_to_priority == {24: 4, 25: 4, 46: 5}
    assert nic.lossless_dscp == (24, 25)
    # pfc_only: lossless without DCQCN, both NIC points off whatever dcqcn.* says.
    assert (nic.ecn_priority, nic.np_enable, nic.rp_enable) == (4, False, False)
    assert (nic.min_time_between_cnps, nic.rp_params) == (8, {"rpg_ai_rate": 10})
    assert (nic.roce_tos, nic.netdev_mtu, nic.speed_gbps) == (98, 4200, 200)


def test_lossy_ecn_only_has_no_pfc() -> None:
    nic = desired_nic(intent(congestion_control="ecn_only", lossless={"pfc": False}), "h", "mlx5_0")
    assert nic.pfc_priorities == ()
    assert nic.pfc_bitmap == (0,) * 8
    assert (nic.np_enable, nic.rp_enable) == (True, True)


@pytest.mark.parametrize(("np_enable", "rp_enable"), [(False, True), (True, False)])
def test_one_dcqcn_point_switched_off(np_enable: bool, rp_enable: bool) -> None:
    nic = desired_nic(intent(dcqcn={"np_enable": np_enable, "rp_enable": rp_enable}), "h", "d")
    assert (nic.np_enable, nic.rp_enable) == (np_enable, rp_enable)


def test_host_rails_and_module_arguments() -> None:
    host = desired_host(intent(rails={0: "mlx5_1", 1: "mlx5_0", 2: "mlx5_1"}), "gpu07")
    assert host.devices == ("mlx5_0", "mlx5_1")
    assert host.rails == {0: "mlx5_1", 1: "mlx5_0", 2: "mlx5_1"}
    assert host.nic("mlx5_0") == desired_nic(intent(rails={0: "mlx5_0"}), "gpu07", "mlx5_0")
    assert host.nic("mlx5_9").device == "mlx5_9"  # a NIC found at run time gets the host's settings
    assert (host.kind, host.gdr_required, host.peermem_policy) == ("roce", True, "without_dmabuf")
    assert host.roce_nic_args() == {
        "devices": ["mlx5_0", "mlx5_1"],
        "trust": "dscp",
        "pfc_bitmap": [0, 0, 0, 1, 0, 0, 0, 0],
        "dscp_to_priority": {"26": 3, "48": 6},
        "ecn_priority": 3,
        "cnp_dscp": 48,
        "cnp_priority": 6,
        "np_enable": True,
        "rp_enable": True,
        "min_time_between_cnps": 4,
        "rp_params": {},
        "roce_tos": 106,
        "mtu": 9000,
        "pfc_storm_prevention_ms": 100,
    }


def test_no_rails_means_every_nic_the_role_finds() -> None:
    host = desired_host(intent(nccl={"gdr_required": False}), "gpu01")
    assert host.devices == () and host.roce_nic_args()["devices"] == []
    assert host.gdr_required is False and host.peermem_policy == "never"


@pytest.mark.parametrize(
    ("nccl", "policy"),
    [
        ({"gdr_mechanism": "any"}, "without_dmabuf"),
        ({"gdr_mechanism": "peermem"}, "always"),
        ({"gdr_mechanism": "dmabuf"}, "never"),
        ({"gdr_mechanism": "peermem", "gdr_required": False}, "never"),
    ],
)
def test_peermem_policy_follows_the_gdr_mechanism(nccl: dict[str, object], policy: str) -> None:
    """Role gpu_rdma loads nvidia_peermem always, never, or only where the host cannot do dma-buf."""
    host = desired_host(intent(nccl=nccl), "gpu01")
    assert host.peermem_policy == policy and host.to_json()["peermem_policy"] == policy


def test_json_is_plain_data() -> None:
    import json

    data = desired_host(intent(rails={0: "mlx5_0"}), "gpu01").to_json()
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert data["nics"][0]["pfc_bitmap"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert data["nics"][0]["dscp_to_priority"] == {"26": 3, "48": 6}


@pytest.mark.parametrize(("ms", "want"), [(0, 0), (80, 80), (8000, 8000), (None, None)])
def test_pfc_storm_prevention_follows_the_intent(ms: int | None, want: int | None) -> None:
    nic = desired_nic(intent(lossless={"pfc_storm_prevention_ms": ms}), "h", "mlx5_0")
    assert nic.pfc_storm_prevention_ms == want
    assert (
        desired_host(intent(lossless={"pfc_storm_prevention_ms": ms}), "h").roce_nic_args()[
            "pfc_storm_prevention_ms"
        ]
        == want
    )


def test_without_pfc_there_is_no_storm_to_prevent() -> None:
    lossy = intent(congestion_control="ecn_only", lossless={"pfc": False, "pfc_storm_prevention_ms": 200})
    assert desired_nic(lossy, "h", "mlx5_0").pfc_storm_prevention_ms is None


@pytest.mark.parametrize("ms", [1, 79, 8001, 65535, -1])
def test_an_unusable_storm_timeout_is_one_error_naming_the_key(ms: int) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as raised:
        intent(lossless={"pfc_storm_prevention_ms": ms})
    errors = raised.value.errors()
    assert len(errors) == 1 and errors[0]["loc"] == ("lossless", "pfc_storm_prevention_ms")
    assert "must be 0 (off) or 80..8000 ms" in errors[0]["msg"]


def test_the_module_record_carries_every_derived_value() -> None:
    """The role applies these as they are: the bitmap and the DSCP map come from here only."""
    custom = intent(lossless={"dscp": [24, 25], "priority": 4}, cnp={"dscp": 46, "priority": 5}, roce_tos=98)
    args = desired_host(custom, "h").roce_nic_args()
    nic = desired_nic(custom, "h", "")
    assert args["pfc_bitmap"] == list(nic.pfc_bitmap) == [0, 0, 0, 0, 1, 0, 0, 0]
    assert args["dscp_to_priority"] == {"24": 4, "25": 4, "46": 5}
    assert args["ecn_priority"] == 4


def test_the_json_record_holds_every_field_and_the_module_record_only_json_values() -> None:
    """DesiredNic.to_json names every field (a `_pairs` field as the mapping it stands for), and every
    key of the roce_nic record (ROCE_NIC_SETTINGS) is one of those JSON values: a field added to the
    record is written nowhere until it is in both."""
    nic = desired_nic(intent(rails={0: "mlx5_0"}), "h", "mlx5_0")
    data = nic.to_json()
    as_json = {"dscp_to_priority_pairs": "dscp_to_priority", "rp_param_pairs": "rp_params"}
    assert {as_json.get(field.name, field.name) for field in fields(DesiredNic)} | {"pfc_bitmap"} == set(data)
    assert set(ROCE_NIC_SETTINGS.values()) <= set(data)


def test_the_wire_limits_and_the_counter_window_are_the_host_s() -> None:
    limits = {"max_pre_fec_ber": 1e-9, "flaps_allowed": 3}
    host = desired_host(intent(link_health=limits), "gpu01", counter_window_s=12)
    assert (host.link_health.max_pre_fec_ber, host.link_health.flaps_allowed) == (1e-9, 3)
    assert host.counter_window_s == 12
    assert DEFAULT_COUNTER_WINDOW_S == 5  # the commands' default; a library caller asks for none
    assert desired_host(intent(), "gpu01").counter_window_s == 0
    for bad in (-1, 601, "5s", 2.5, True):
        with pytest.raises(ValueError, match="counter window"):
            desired_host(intent(), "gpu01", counter_window_s=bad)  # type: ignore[arg-type]
    assert counter_window("0") == 0 and counter_window(600) == MAX_COUNTER_WINDOW_S
