"""The PCIe bus of the test host (docs/checks/bus.md): each rail's GPU and NIC on two downstream ports of
one PCIe switch under a root port, as on an 8-GPU server, rendered in the layout of a real `lspci -vvv`
(tests/data/real/host/INDEX.tsv: lspci-vvxxx-n1sdp-plx8749-acs-on.txt; only the lines the parser reads,
plus the class lines), their AER counters as `grep -H` prints the kernel's files (the ABI's names), the
kernel command line with iommu=pt and each rail port's IOMMU group type identity."""

from __future__ import annotations

from dataclasses import dataclass, replace

from fabcheck.collect.script import Section

GPU_NAME = "3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)"
NIC_NAME = "Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]"
SWITCH_NAME = "PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0) (prog-if 00 [Normal decode])"
ROOT_NAME = "PCI bridge: Intel Corporation Device 352a (rev 04) (prog-if 00 [Normal decode])"
GEN5_X16 = ("32GT/s", 16)
CMDLINE = "BOOT_IMAGE=/boot/vmlinuz-6.8.0-45-generic root=/dev/sda2 ro intel_iommu=on iommu=pt\n"
AER_CORRECTABLE = ("Receiver Error", "Bad TLP", "Bad DLLP", "RELAY_NUM Rollover", "Replay Timer Timeout")
AER_UNCORRECTABLE = ("Data Link Protocol", "Surprise Down Error", "Poisoned TLP", "Completion Timeout")


@dataclass(frozen=True)
class Function:
    bdf: str
    name: str
    port_type: str
    cap: tuple[str, int] = GEN5_X16
    sta: tuple[str, int] | str = GEN5_X16  # a str: the whole LnkSta value as lspci prints it
    bus: tuple[int, int, int] | None = None  # primary, secondary, subordinate
    acs: str | None = None  # the ACSCtl flags; None: no ACS capability
    ats: str | None = None  # ATSCtl Enable+ / Enable-; None: no ATS capability
    driver: str = "pcieport"
    denied: bool = False

    def render(self) -> str:
        lines = [f"{self.bdf} {self.name}"]
        if self.bus:
            primary, secondary, subordinate = self.bus
            numbers = f"primary={primary:02x}, secondary={secondary:02x}, subordinate={subordinate:02x}"
            lines.append(f"\tBus: {numbers}, sec-latency=0")
        if self.denied:
            lines.append("\tCapabilities: <access denied>")
        else:
            slot = " (Slot+)" if self.port_type in ("Root Port", "Downstream Port") else ""
            lines.append(f"\tCapabilities: [60] Express (v2) {self.port_type}{slot}, MSI 00")
            speed, width = self.cap
            lines.append(f"\t\tLnkCap:\tPort #0, Speed {speed}, Width x{width}, ASPM not supported")
            sta = self.sta if isinstance(self.sta, str) else f"Speed {self.sta[0]}, Width x{self.sta[1]}"
            lines.append(f"\t\tLnkSta:\t{sta}, TrErr- Train- SlotClk+ DLActive+ BWMgmt- ABWMgmt-")
            if self.acs is not None:
                lines.append("\tCapabilities: [220 v1] Access Control Services")
                lines.append(f"\t\tACSCap:\t{ACS_CAP}")
                lines.append(f"\t\tACSCtl:\t{self.acs}")
            if self.ats is not None:
                lines.append("\tCapabilities: [480 v1] Address Translation Service (ATS)")
                lines.append("\t\tATSCap:\tInvalidate Queue Depth: 00")
                lines.append(f"\t\tATSCtl:\t{self.ats}, Smallest Translation Unit: 00")
        lines.append(f"\tKernel driver in use: {self.driver}")
        return "\n".join(lines) + "\n"


DOWN = "Downstream Port"
ACS_CAP = "SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"
ACS_CAP = "SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"
ACS_OFF = "SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-"
ACS_ON = "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"


def rail(index: int) -> dict[str, Function]:
    """Rail `index`: root port R:01.0 -> switch up (R+1):00.0 -> down (R+2):00.0 (GPU (R+3):00.0) and
    (R+2):02.0 (NIC (R+5):00.0), R = 0x15 + 0x12 * index (rail 0: GPU 0000:18:00.0, NIC 0000:1a:00.0)."""
    r = 0x15 + 0x12 * index
    functions = [
        Function(f"0000:{r:02x}:01.0", ROOT_NAME, "Root Port", bus=(r, r + 1, r + 5), acs=ACS_OFF),
        Function(f"0000:{r + 1:02x}:00.0", SWITCH_NAME, "Upstream Port", bus=(r + 1, r + 2, r + 5)),
        Function(
            f"0000:{r + 2:02x}:00.0", SWITCH_NAME, "Downstream Port", bus=(r + 2, r + 3, r + 3), acs=ACS_OFF
        ),
        Function(
            f"0000:{r + 2:02x}:02.0", SWITCH_NAME, "Downstream Port", bus=(r + 2, r + 5, r + 5), acs=ACS_OFF
        ),
        Function(f"0000:{r + 3:02x}:00.0", GPU_NAME, "Endpoint", driver="nvidia"),
        Function(f"0000:{r + 5:02x}:00.0", NIC_NAME, "Endpoint", ats="Enable-", driver="mlx5_core"),
    ]
    return {function.bdf: function for function in functions}


def gpu_bdf(index: int) -> str:
    return f"0000:{0x15 + 0x12 * index + 3:02x}:00.0"


def nic_bdf(index: int) -> str:
    return f"0000:{0x15 + 0x12 * index + 5:02x}:00.0"


def switch_down(index: int, toward: str) -> str:
    """The switch downstream port above rail `index`'s GPU or NIC."""
    return f"0000:{0x15 + 0x12 * index + 2:02x}:{'00' if toward == 'gpu' else '02'}.0"


def bus(rails: int = 2) -> dict[str, Function]:
    functions: dict[str, Function] = {}
    for index in range(rails):
        functions |= rail(index)
    return functions


def changed(bdf: str, **changes: object) -> dict[str, Function]:
    functions = bus()
    functions[bdf] = replace(functions[bdf], **changes)  # type: ignore[arg-type]
    return functions


def lspci(functions: dict[str, Function] | None = None) -> str:
    return "\n".join(f.render() for f in sorted((functions or bus()).values(), key=lambda f: f.bdf))


def aer(counts: dict[str, dict[str, int]] | None = None, functions: dict[str, Function] | None = None) -> str:
    """`grep -H "" .../aer_dev_*` of every function: zeros, but for `counts` (BDF -> error name -> count;
    the name decides the file: correctable names go to aer_dev_correctable, others to aer_dev_fatal)."""
    lines = []
    for bdf in sorted(functions or bus()):
        shown = (counts or {}).get(bdf, {})
        for severity, names, total in (
            ("correctable", AER_CORRECTABLE, "TOTAL_ERR_COR"),
            ("nonfatal", AER_UNCORRECTABLE, "TOTAL_ERR_NONFATAL"),
            ("fatal", AER_UNCORRECTABLE, "TOTAL_ERR_FATAL"),
        ):
            mine = {n: shown.get(f"{severity}:{n}", 0) for n in names}
            lines += [f"/sys/bus/pci/devices/{bdf}/aer_dev_{severity}:{n} {c}" for n, c in mine.items()]
            lines.append(f"/sys/bus/pci/devices/{bdf}/aer_dev_{severity}:{total} {sum(mine.values())}")
    return "\n".join(lines) + "\n"


def bus_sections(devs: tuple[str, ...] = ("mlx5_0", "mlx5_1")) -> dict[str, Section]:
    sections = {
        "lspci": Section(0, lspci()),
        "aer.before": Section(0, aer()),
        "aer": Section(0, aer()),
        "cmdline": Section(0, CMDLINE),
    }
    return sections | {f"iommu_group:{dev}/1": Section(0, "identity\n") for dev in devs}


def bus_info(index: int) -> str:
    return f"bus-info: {nic_bdf(index)}\n"
