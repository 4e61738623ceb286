"""How each platform names a planned switch port: logical port n (1-based) of a switch whose cages
each break out into `lanes` links lives in cage (n - 1) // lanes + 1, lane (n - 1) % lanes
(fabcheck.fabricplan.model), and each network OS spells that (cage, lane) its own way:

- nvue (Cumulus Linux): the cage is `swp<cage>`; broken out 2x, 4x or 8x its interfaces are
  `swp<cage>s0` .. `swp<cage>s<lanes-1>` (`nv set interface swp1 link breakout 4x` makes swp1s0-3;
  the breakout options are 1x, 2x, 4x and 8x). Source: CumulusNetworks/docs:content/cumulus-linux-516/
  Layer-1-and-Switch-Ports/Interface-Configuration-and-Management/Switch-Port-Attributes.md@
  7ab50b0a13a9b94789b3de1113037b95df786fc6 ("Configure a Breakout Port"; the SN5600 tab: 64 OSFP
  800G cages, 2x 400G and 4x 200G on every cage, 8x 100G on 32 of them with the adjacent cage off).
- sonic: a port is named after its first SerDes lane, `Ethernet<lane index>`, 8 lanes per OSFP cage:
  cage c, lane l of L is `Ethernet<(c - 1) * 8 + l * 8 / L>`. Source: the SN5600 hwskus of
  sonic-net/sonic-buildimage@086b03bd70f9e211aaaf5f6aefe0790b508d2a94
  (device/mellanox/x86_64-nvidia_sn5600-r0/ACS-SN5600/port_config.ini: 1x800G, Ethernet0, Ethernet8;
  Mellanox-SN5600-O128/port_config.ini: 2x400G, Ethernet0, Ethernet4 in cage 1; Mellanox-SN5600-V256:
  4x200G, Ethernet0/2/4/6), copied under tests/data/real/sonic and replayed by tests/fabricplan.
- eos: an 8-lane OSFP cage c exposes the interfaces Ethernet<c>/1 .. Ethernet<c>/8
  (https://www.arista.com/jp/um-eos/eos-layer-1-profiles); a link of L lanes takes the interface
  of its first lane, `Ethernet<c>/<1 + l * 8 / L>` (2x400G: /1 and /5). The first-lane rule is the
  interface numbering applied to a breakout, without an EOS sample of a broken-out 7060X6: unverified.
- InfiniBand (no platform): the logical port number itself, as a Quantum-2 QM9700 shows ports 1..64
  (the numbering fabcheck.intent.ib_fabric reads). A cage split further (NDR200: 128 ports on a
  QM9700) is numbered by the same rule here, without a sample of a split switch: unverified.

The switch roles do not configure breakouts: a planned switch's cages must be broken out (NVUE
`link breakout`, SONiC `config interface breakout`, EOS `speed 400g-4`) before the roles configure
the broken-out ports.
"""

from __future__ import annotations

from fabcheck.fabricplan.model import PlanError, SwitchModel

LANES_PER_CAGE = 8  # SerDes lanes of an OSFP cage: what SONiC and EOS number a cage's interfaces by
BREAKOUTS = (1, 2, 4, 8)  # links per cage every platform here can break a cage into
ETHERNET_PLATFORMS = ("nvue", "sonic", "eos")


def cage_and_lane(port: int, lanes: int) -> tuple[int, int]:
    """Logical port n (1-based) -> (cage, lane): cage 1-based, lane 0-based."""
    if port < 1 or lanes < 1:
        raise ValueError(f"port {port}, lanes {lanes}: expected a port >= 1 and lanes >= 1")
    return (port - 1) // lanes + 1, (port - 1) % lanes


def port_name(platform: str | None, port: int, lanes: int) -> str:
    """The name `platform` gives logical port n of a switch whose cages carry `lanes` links each;
    platform None: InfiniBand (the number). PlanError for a platform or breakout there is no name for."""
    if platform is None:
        return str(port)
    if platform not in ETHERNET_PLATFORMS:
        raise PlanError(
            f"platform {platform!r}: no port names known; expected one of {', '.join(ETHERNET_PLATFORMS)}"
        )
    if lanes not in BREAKOUTS:
        options = ", ".join(map(str, BREAKOUTS))
        raise PlanError(f"{lanes} links per cage: {platform} breaks a cage out into {options} links")
    cage, lane = cage_and_lane(port, lanes)
    step = LANES_PER_CAGE // lanes
    if platform == "nvue":
        return f"swp{cage}" if lanes == 1 else f"swp{cage}s{lane}"
    if platform == "sonic":
        return f"Ethernet{(cage - 1) * LANES_PER_CAGE + lane * step}"
    return f"Ethernet{cage}/{1 + lane * step}"


def model_port_name(model: SwitchModel, nic_gbps: int, port: int) -> str:
    """The name of logical port n of a switch of `model` whose links run at nic_gbps."""
    lanes = model.lanes(nic_gbps)
    if not lanes:
        raise PlanError(f"{model.name}: cannot break out to {nic_gbps} Gb/s links")
    if not 1 <= port <= model.ports(nic_gbps):
        raise PlanError(f"{model.name}: port {port} is not one of its 1..{model.ports(nic_gbps)}")
    return port_name(model.platform, port, lanes)


def model_port_names(model: SwitchModel, nic_gbps: int) -> tuple[str, ...]:
    """Every logical port's name, port 1 first."""
    return tuple(model_port_name(model, nic_gbps, n) for n in range(1, model.ports(nic_gbps) + 1))
