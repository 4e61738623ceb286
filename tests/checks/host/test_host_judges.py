"""fabcheck.checks.host.judges: every command a hint prints keeps a hostile NIC or netdev name one quoted
word, so a user can paste it."""

from __future__ import annotations

import shlex

from fabcheck.checks import host as checks
from fabcheck.checks.model import Status
from fabcheck.desired.nic import desired_host
from fabcheck.parsers.rdma_link import RdmaLink
from tests.checks.host.hostdata import DEFAULT_DSCP_MAP, INTENT, device, qos

HOSTILE_NIC, HOSTILE_NETDEV = "mlx5_0;rm -rf /", "ens1$(reboot)"


def test_every_hint_command_quotes_hostile_names() -> None:
    """Names from a host (or an inventory) may hold shell syntax: every command a hint prints keeps each
    of them one quoted word."""
    wrong_qos = qos(trust="pcp", pfc_enabled=(), dscp2prio=DEFAULT_DSCP_MAP | {26: 0})
    port_name, zero = f"{HOSTILE_NIC}/1", {"mtu": 1500, "min_time_between_cnps": 0}
    records: dict[tuple[str, str], object] = {
        ("topo", ""): checks.Unreadable("nvidia-smi topo -m", "not needed here"),
        ("rdma_link", ""): (RdmaLink(HOSTILE_NIC, 1, "DOWN", "DISABLED", HOSTILE_NETDEV),),
        ("ibv_devinfo", ""): (device(HOSTILE_NIC, 0, active_mtu=1024, link_layer="InfiniBand"),),
        ("lsmod", ""): frozenset(),
        ("mlnx_qos", HOSTILE_NETDEV): wrong_qos,
        ("roce_rp", HOSTILE_NETDEV): {"rpg_gd": 1, "rpg_min_rate": 1},
        ("traffic_class", port_name): 0,
        ("cma_roce_tos", port_name): 0,
        ("cma_roce_mode", port_name): "IB/RoCE v1",
    }
    for probe in ("ecn_np_enable", "ecn_rp_enable", "cnp_dscp", "cnp_802p_prio", *zero):
        records[(probe, HOSTILE_NETDEV)] = zero.get(probe, 0)
    intent = INTENT.model_copy(update={"rails": {}})  # no rails: the NICs judged are the ones the host shows
    desired = desired_host(intent, "gpu01")
    findings = checks.check_host(checks.HostEvidence(records), desired, intent)
    records[("mlnx_qos", HOSTILE_NETDEV)] = qos(trust="dscp", dscp2prio=DEFAULT_DSCP_MAP | {26: 0})
    shown = checks.HostEvidence(records)
    findings += checks.check_dscp2prio(HOSTILE_NIC, HOSTILE_NETDEV, shown, desired.nic(HOSTILE_NIC))
    commands = [c for f in findings if f.status is Status.FAIL for c in f.hint.split("`")[1::2]]
    assert len(commands) >= 10, commands
    for command in commands:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
        assert not {"rm", "-rf", "reboot", "$("} & set(words), command
        for name in (HOSTILE_NIC, HOSTILE_NETDEV):
            if name[:4] in command:
                assert any(name in word for word in words), (name, command)
    assert "mlnx_qos -i 'ens1$(reboot)' --trust dscp" in commands
