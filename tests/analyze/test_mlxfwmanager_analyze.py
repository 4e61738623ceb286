"""`fabcheck analyze mlxfwmanager`: a saved `mlxfwmanager --query` (the real device block of
tests/data/real/host/mlxup-query-connectx5-no-image.txt, and hosts made of it) judged as host.nic_firmware
judges: the intent's pin for each device's PSID, else one version per PSID in the output."""

from __future__ import annotations

from pathlib import Path

from fabcheck.analyze import analyze
from fabcheck.checks.host.firmware import NIC_FIRMWARE
from fabcheck.checks.model import Status
from fabcheck.intent.model import FabricIntent, NicFirmware

REAL = (Path(__file__).resolve().parents[1] / "data/real/host/mlxup-query-connectx5-no-image.txt").read_text()
PSID, VERSION = "MT_0000000158", "16.24.4020"


def host(*versions: str) -> str:
    """A query of several such devices, one per version, each on its own PCI device."""
    blocks = []
    for index, version in enumerate(versions, start=1):
        block = REAL.replace("Device #4:", f"Device #{index}:").replace(VERSION, version)
        blocks.append(block.replace("pci0:6:0:0", f"pci0:{index}:0:0"))
    return "Querying Mellanox devices firmware ...\n\n" + "\n".join(blocks)


def statuses(text: str, intent: FabricIntent) -> dict[str, Status]:
    result = analyze("mlxfwmanager", text.splitlines(keepends=True), "query.txt", intent)
    assert {f.check for f in result.findings} == {NIC_FIRMWARE}
    return {f.subject: f.status for f in result.findings}


def test_the_real_query_gives_its_device_as_facts_and_passes_alone() -> None:
    result = analyze("mlxfwmanager", REAL.splitlines(keepends=True), "real.txt", FabricIntent())
    (device,) = result.facts["devices"]
    assert (device["psid"], device["fw_current"], device["status"]) == (
        PSID,
        VERSION,
        "No matching image found",
    )
    assert result.verdict == "pass"


def test_a_pinned_part_fails_the_device_on_another_version() -> None:
    pinned = FabricIntent(nic_firmware=[NicFirmware(psid=PSID, version=VERSION, image="cx5.bin")])
    assert statuses(host(VERSION, "16.35.4030"), pinned) == {
        "pci0:1:0:0": Status.PASS,
        "pci0:2:0:0": Status.FAIL,
    }


def test_unpinned_devices_of_one_part_must_agree() -> None:
    assert statuses(host(VERSION, VERSION, "16.35.4030"), FabricIntent()) == {
        "pci0:1:0:0": Status.PASS,
        "pci0:2:0:0": Status.PASS,
        "pci0:3:0:0": Status.FAIL,
    }
    tie = statuses(host(VERSION, "16.35.4030"), FabricIntent())
    assert set(tie.values()) == {Status.FAIL}  # no version ahead: each fails


def test_a_device_without_a_psid_is_not_judged_never_passed() -> None:
    result = analyze(
        "mlxfwmanager",
        REAL.replace(f"  PSID:             {PSID}\n", "").splitlines(True),
        "x",
        FabricIntent(),
    )
    assert result.verdict == "error" and "not judged" in result.findings[0].actual
