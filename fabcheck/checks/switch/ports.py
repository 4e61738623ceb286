"""The ports themselves: the MTU (role switch_qos, tag mtu) and the speed each port trained at, which
no fabcheck role sets (the switch operator, its port profile and the optics do)."""

from __future__ import annotations

from fabcheck.checks.declare import NO_INPUTS, Inputs
from fabcheck.checks.model import Status
from fabcheck.checks.switch.fields import EOS_PORT, FieldCheck
from fabcheck.checks.switch.judges import MoreRecords, SwitchJudge, Verdict, switch_check
from fabcheck.desired.switch import DesiredSwitch, DesiredSwitchPort
from fabcheck.parsers.switch_records import Mtu, PortSpeed

MTU = "switch.mtu"
PORT_SPEED = "switch.port_speed"


def _want_mtu(d: DesiredSwitch, p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return f"MTU {p.mtu if p else d.mtu}"


def _judge_mtu(
    r: Mtu, port: str | None, d: DesiredSwitch, p: DesiredSwitchPort | None, _more: MoreRecords, _i: Inputs
) -> Verdict:
    return (Status.PASS if r.mtu == (p.mtu if p else d.mtu) else Status.FAIL), f"MTU {r.mtu}"


def _want_speed(_d: DesiredSwitch, p: DesiredSwitchPort | None, _inputs: Inputs) -> str:
    return f"{p.speed_gbps if p else '?'}G (switch_port_speeds, else link.speed_gbps)"


def _judge_speed(
    r: PortSpeed,
    port: str | None,
    d: DesiredSwitch,
    p: DesiredSwitchPort | None,
    _more: MoreRecords,
    _i: Inputs,
) -> Verdict:
    if p is None or p.speed_gbps is None:
        return Status.ERROR, "a port speed shown for the switch, not for a port"
    if r.mbps == 0:  # a link that is down (EOS notconnect): its nominal rate is not a trained one
        return Status.FAIL, "link down: not trained at any rate"
    shown = f"{r.mbps // 1000}G" if r.mbps % 1000 == 0 else f"{r.mbps}M"
    return (Status.PASS if r.mbps == p.speed_gbps * 1000 else Status.FAIL), shown


MTU_CHECK = switch_check(MTU, "mtu", "port MTU", SwitchJudge(Mtu, _want_mtu, _judge_mtu), NO_INPUTS)
PORT_SPEED_CHECK = switch_check(
    PORT_SPEED,
    None,
    "port speed as the inventory cables it",
    SwitchJudge(
        PortSpeed,
        _want_speed,
        _judge_speed,
        ports=lambda port: port.speed_gbps is not None,
        owner=(
            "the switch operator or its port profile (SONiC `config interface speed PORT MBPS`, NVUE "
            "`nv set interface PORT link speed 400G`, EOS `speed 400g-8`) and the optics; fabcheck "
            "pushes no port speed"
        ),
    ),
    NO_INPUTS,
    role=None,
)

FIELDS: tuple[FieldCheck, ...] = (
    FieldCheck("nvue", "interface <port> link mtu", MTU),
    FieldCheck("sonic", "PORT|<port> mtu", MTU),
    FieldCheck("eos", f"{EOS_PORT} mtu", MTU),
)
