"""The host stage names every finding's place as fields: the host, the part the check judged and, for a
rail NIC or one of its ports, the switch port the cabling map puts at the other end of its cable."""

from __future__ import annotations

from dataclasses import replace

from fabcheck.checks.model import Where, failed, passed
from fabcheck.gate.host_stage import HostResult, located


def test_each_finding_gets_its_host_part_and_cable_end() -> None:
    result = HostResult(
        "gpu01",
        (
            failed("host.pfc", "mlx5_0", "3", "none", "h"),
            passed("host.roce_tos", "mlx5_0/1", "106", "106"),
            passed("host.peermem", "host", "loaded", "loaded"),
            passed("host.affinity", "GPU3", "PXB", "PXB"),
            replace(passed("host.gid_index", "mlx5_1", "3", "3"), where=Where("gpu01", "mlx5_1", "kept")),
        ),
    )
    cables = {("gpu01", "mlx5_0"): "leaf01:swp1", ("gpu02", "mlx5_0"): "leaf01:swp9"}
    wheres = [f.where for f in located(result, cables).findings]
    assert wheres == [
        Where("gpu01", "mlx5_0", "leaf01:swp1"),
        Where("gpu01", "mlx5_0/1", "leaf01:swp1"),
        Where("gpu01"),
        Where("gpu01", "GPU3"),
        Where("gpu01", "mlx5_1", "kept"),  # a check's own Where is never replaced
    ]
    assert located(result, cables).findings[2].to_json()["where"] == {"node": "gpu01"}
