"""`lspci -D -vvv` -> PcieTree, replayed on a real PCIe switch capture (tests/data/real/host/INDEX.tsv:
lspci-vvxxx-n1sdp-plx8749-acs-on.txt) and on the line forms pciutils prints (pciutils/pciutils:
ls-caps.c@0f5b941aa5cf8b1b126ff3e4176b1c32b2158289: `(downgraded)`, `(ok)`/`(strange)` before 3.8.0,
`Speed unknown`; `<access denied>` without root)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabcheck.errors import ParseError
from fabcheck.parsers.bus_records import PcieLink
from fabcheck.parsers.lspci import parse_lspci

REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "host"
N1SDP = REAL / "lspci-vvxxx-n1sdp-plx8749-acs-on.txt"


def test_the_real_switch_capture_becomes_a_tree_of_its_bridges() -> None:
    tree = parse_lspci(N1SDP.read_text(), N1SDP.name)
    assert sorted(tree.functions) == [
        "0000:00:00.0",
        "0000:01:00.0",
        "0000:02:08.0",
        "0000:02:12.0",
        "0000:06:00.0",
        "0001:00:00.0",
    ]
    root, up, down = (tree.functions[b] for b in ("0000:00:00.0", "0000:01:00.0", "0000:02:12.0"))
    assert (root.bridge, root.port_type, root.secondary_bus, root.subordinate_bus) == (
        True,
        "Root Port",
        1,
        0x19,
    )
    assert (up.port_type, up.secondary_bus, up.subordinate_bus) == ("Upstream Port", 2, 8)
    assert root.link_capability == PcieLink(8.0, 16) and root.link_status == PcieLink(5.0, 16)
    assert down.port_type == "Downstream Port"
    assert down.link_capability == PcieLink(5.0, 2) and down.link_status == PcieLink(5.0, 1)
    assert down.acs_redirect == ("ReqRedir", "CmpltRedir")
    assert down.acs_control is not None and down.acs_control["SrcValid"] and not down.acs_control["TransBlk"]
    assert down.driver == "pcieport" and down.ats_enabled is None
    sata = tree.functions["0000:06:00.0"]
    assert (sata.bridge, sata.port_type, sata.driver) == (False, "Legacy Endpoint", "ahci")
    assert [bridge.bdf for bridge in tree.upstream(sata.bdf)] == [
        "0000:02:12.0",
        "0000:01:00.0",
        "0000:00:00.0",
    ]
    # 02:08.0 trained nothing: width x0 at 2.5 GT/s, read as it is shown
    assert tree.functions["0000:02:08.0"].link_status == PcieLink(2.5, 0)
    other = tree.functions["0001:00:00.0"]
    assert other.ats_enabled is False and other.bridge and other.port_type == "Root Port"
    assert tree.upstream("0001:00:00.0") == ()


def test_two_functions_behind_one_switch_cross_its_ports() -> None:
    text = N1SDP.read_text() + (
        "\n0000:03:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)\n"
        "\tCapabilities: [68] Express (v2) Endpoint, MSI 00\n"
        "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n"
        "\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16 (ok)\n"
        "\tKernel driver in use: nvidia\n"
    )
    tree = parse_lspci(text)
    path = [bridge.bdf for bridge in tree.path("0000:03:00.0", "0000:06:00.0")]
    assert path == ["0000:02:08.0", "0000:01:00.0", "0000:02:12.0"]
    gpu = tree.functions["0000:03:00.0"]
    assert gpu.link_status == PcieLink(2.5, 16) and gpu.driver == "nvidia"


@pytest.mark.parametrize(
    ("line", "link"),
    [
        ("LnkSta:\tSpeed 5GT/s (downgraded), Width x1 (downgraded)", PcieLink(5.0, 1)),
        ("LnkSta:\tSpeed 8GT/s (ok), Width x16 (ok), TrErr- Train-", PcieLink(8.0, 16)),
        ("LnkSta:\tSpeed 16GT/s (strange), Width x8 (strange)", PcieLink(16.0, 8)),
        ("LnkSta:\tSpeed unknown (downgraded), Width x16", PcieLink(None, 16)),
        ("LnkSta:\tSpeed 32GT/s, Width x16", PcieLink(32.0, 16)),
    ],
)
def test_link_status_suffixes_of_every_pciutils_release(line: str, link: PcieLink) -> None:
    text = f"0000:1a:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n\t\t{line}\n"
    assert parse_lspci(text).functions["0000:1a:00.0"].link_status == link


def test_without_root_the_capabilities_are_none_and_said_to_be_denied() -> None:
    text = (
        "0000:18:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)\n"
        "\tSubsystem: NVIDIA Corporation Device 16c1\n"
        "\tCapabilities: <access denied>\n"
        "\tKernel driver in use: nvidia\n"
    )
    gpu = parse_lspci(text).functions["0000:18:00.0"]
    assert gpu.access_denied and gpu.link_capability is None and gpu.link_status is None
    assert gpu.acs_control is None and gpu.ats_enabled is None and gpu.driver == "nvidia"


def test_without_domain_the_bdf_is_normalised_to_domain_0() -> None:
    text = "18:00.0 3D controller: NVIDIA Corporation Device 2330\n"
    assert list(parse_lspci(text).functions) == ["0000:18:00.0"]


def test_ats_enabled_is_read_from_atsctl() -> None:
    text = (
        "0000:1a:00.0 Infiniband controller: Mellanox\n\t\tATSCtl:\tEnable+, Smallest Translation Unit: 00\n"
    )
    assert parse_lspci(text).functions["0000:1a:00.0"].ats_enabled is True


@pytest.mark.parametrize(
    "text",
    [
        "garbage at column 0\n",
        "\tKernel driver in use: nvidia\n",
        "0000:18:00.0 x\n0000:18:00.0 y\n",
        "0000:18:00.0 x\n\t\tLnkSta:\tTrErr- Train-\n",
        "0000:17:00.0 x\n\tBus: primary=16\n",
        "0000:1a:00.0 x\n\t\tATSCtl:\tSmallest Translation Unit: 00\n",
    ],
)
def test_what_is_not_lspci_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        parse_lspci(text, "lspci")


def test_line_forms_of_real_posts() -> None:
    """pciutils 3.8+ wraps LnkSta's flags onto a continuation line
    (https://github.com/geerlingguy/raspberry-pi-pcie-devices/issues/480: `LnkSta:\tSpeed 5GT/s
    (downgraded), Width x1 (downgraded)` then `TrErr- Train- ...`); `lspci -vnn` without root indents
    with spaces in a pasted post and shows `[class]` ids (https://github.com/RunGp/Nvidiux/issues/10)."""
    wrapped = (
        "0000:01:00.0 VGA compatible controller: NVIDIA Corporation TU102GL [Quadro RTX 8000] (rev a1)\n"
        "\t\tLnkCap:\tPort #0, Speed 8GT/s, Width x16, ASPM L0s L1, Exit Latency L0s <512ns, L1 <4us\n"
        "\t\tLnkSta:\tSpeed 5GT/s (downgraded), Width x1 (downgraded)\n"
        "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-\n"
    )
    gpu = parse_lspci(wrapped).functions["0000:01:00.0"]
    assert gpu.link_capability == PcieLink(8.0, 16) and gpu.link_status == PcieLink(5.0, 1)
    unprivileged = (
        "00:01.0 PCI bridge [0604]: Intel Corporation Xeon E3-1200 v3/4th Gen Core Processor PCI Express x16"
        " Controller [8086:0c01](rev 06) (prog-if 00 [Normal decode])\n"
        "    Flags: bus master, fast devsel, latency 0\n"
        "    Bus: primary=00, secondary=01, subordinate=01, sec-latency=0\n"
        "    Capabilities: <access denied>\n"
        "    Kernel driver in use: pcieport\n"
    )
    bridge = parse_lspci(unprivileged).functions["0000:00:01.0"]
    assert bridge.bridge and bridge.secondary_bus == 1 and bridge.access_denied and bridge.link_status is None
