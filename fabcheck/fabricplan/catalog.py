"""The switch models `fabcheck plan --switch MODEL` knows, each resting on its vendor's datasheet or
hardware manual (the `source` URL), and the generic model `--switch-ports/--switch-port-gbps` describes.

A model is counted in cages (front-panel OSFP ports) of `cage_gbps`; `link_gbps` lists the link speeds
a cage breaks out to as the source states them (a 2x400G module in an 800G cage gives two 400G links).
"""

from __future__ import annotations

from fabcheck.fabricplan.model import FABRICS, PlanError, SwitchModel

CATALOG: dict[str, SwitchModel] = {
    model.name: model
    for model in (
        # 32 OSFP cages of 2 logical NDR ports: "Each OSFP port consists of 2 logical InfiniBand ports"
        # (the source); 32 cages, 64 x 400G: the kernel's MQM97xx support (torvalds/linux commit
        # 9045512ca6cdb221cd1ed32d483eac3c30c53bed). NDR200: a twin-port module with 1:2 splitters feeds
        # four 200G NICs (https://docs.nvidia.com/networking/display/mms4x00ns400/overview).
        SwitchModel(
            name="qm9700",
            title="NVIDIA Quantum-2 QM9700",
            fabric="ib",
            cages=32,
            cage_gbps=800,
            link_gbps=(400, 200),
            platform=None,
            source="https://docs.nvidia.com/networking/display/QM97X0PUB/Interfaces",
        ),
        # XDR 800Gb/s (the source's title: Q3200-RA/Q3400-RA XDR 800Gb/s InfiniBand Switch Systems);
        # 144 ports of 800G as NVIDIA's DGX B300 XDR SuperPOD sizes them (72 nodes x 8 rails on 8 leaves
        # and 4 spines per SU). The 72 twin-port cages are NOT in a page we could read: unverified.
        SwitchModel(
            name="q3400",
            title="NVIDIA Quantum-X800 Q3400",
            fabric="ib",
            cages=72,
            cage_gbps=1600,
            link_gbps=(800,),
            platform=None,
            source="https://docs.nvidia.com/networking/display/XDRSwitchesHWUM",
        ),
        # "SN5600 | 64 | 800GbE (100Gbps/lane) | 128 | 400GbE | 256 | 200GbE, 100GbE, ..." (the source):
        # 100G and below stop at 256 ports (4 a cage), which cage_gbps / speed cannot express, so the
        # model offers only the speeds that fill a cage: 800, 400, 200.
        SwitchModel(
            name="sn5600",
            title="NVIDIA Spectrum-4 SN5600",
            fabric="roce",
            cages=64,
            cage_gbps=800,
            link_gbps=(800, 400, 200),
            platform="nvue",
            source="https://docs.nvidia.com/networking/display/sn5000/data+interfaces",
        ),
        # 64 OSFP cages (osfp1..osfp64), each with breakout modes 1x800G, 2x400G, 4x200G, 8x100G: the
        # SONiC platform file of the DCS-7060X6-64PE (Broadcom Tomahawk 5). Arista's own datasheet is
        # not in the sources we could read.
        SwitchModel(
            name="7060x6-64pe",
            title="Arista 7060X6-64PE (Broadcom Tomahawk 5, 51.2 Tb/s)",
            fabric="roce",
            cages=64,
            cage_gbps=800,
            link_gbps=(800, 400, 200, 100),
            platform="eos",
            source="https://github.com/sonic-net/sonic-buildimage/blob/1b88185e389d7dfd20790afbc21000fc8b52e99b/"
            "device/arista/x86_64-arista_7060x6_64pe/platform.json",
        ),
    )
}

# Link speeds a generic cage may break out to: the Ethernet/InfiniBand lane rates that split an OSFP's
# eight electrical lanes evenly (1, 2, 4 or 8 links per cage).
GENERIC_LINK_GBPS = (1600, 800, 400, 200, 100, 50, 25)
GENERIC_BREAKOUTS = (1, 2, 4, 8)


def catalog_model(name: str, option: str = "--switch") -> SwitchModel:
    """The catalog model `name` (case-insensitive); PlanError naming `option` and the known names."""
    model = CATALOG.get(name.lower())
    if model is None:
        raise PlanError(f"{option}: unknown switch model {name!r}; known: {', '.join(CATALOG)}")
    return model


def generic_model(
    ports: int, port_gbps: int, fabric: str = "any", platform: str | None = None
) -> SwitchModel:
    """A switch described only by its port count and port speed (a chassis, a model not in the catalog)."""
    if ports < 1:
        raise PlanError(f"--switch-ports: expected a whole number >= 1, got {ports}")
    if port_gbps < 1:
        raise PlanError(f"--switch-port-gbps: expected a whole number >= 1, got {port_gbps}")
    if fabric not in (*FABRICS, "any"):
        raise PlanError(f"--fabric: expected one of {', '.join(FABRICS)}, got {fabric!r}")
    speeds = tuple(
        speed
        for speed in GENERIC_LINK_GBPS
        if speed <= port_gbps and port_gbps % speed == 0 and port_gbps // speed in GENERIC_BREAKOUTS
    )
    return SwitchModel(
        name="generic",
        title=f"generic {ports} x {port_gbps}G",
        fabric=fabric,
        cages=ports,
        cage_gbps=port_gbps,
        link_gbps=speeds or (port_gbps,),
        platform=platform,
        source="",
    )


def default_model(fabric: str, nic_gbps: int) -> SwitchModel:
    """The first catalog model of `fabric` whose cages break out to nic_gbps (`--compare`'s choice
    where no --switch of that fabric is given); PlanError naming --nic-gbps when none does."""
    for model in CATALOG.values():
        if model.fabric == fabric and model.lanes(nic_gbps):
            return model
    raise PlanError(f"--nic-gbps: no {fabric} switch in the catalog breaks out to {nic_gbps}G links")
