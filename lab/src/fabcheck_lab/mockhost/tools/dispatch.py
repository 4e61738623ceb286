"""Dispatcher of the mock host tools: the tool is the name the program was called by."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from . import DISPATCHER, NCCL_TESTS, PERFTEST
from .common import Node, ToolError, err, out


def run(tool: str, args: list[str]) -> int:
    node = Node.from_env()
    if tool in PERFTEST:
        from . import perftest

        return perftest.main(node, tool, args)
    if tool in NCCL_TESTS:
        from . import nccl_tests

        return nccl_tests.main(node, tool, args)
    if tool == "fabcheck-mpirun":
        from . import mpirun

        return mpirun.main(node if (node.state / "node.json").exists() else None, args)
    handler = simple_tools().get(tool)
    if handler is None:
        raise ToolError(f"{DISPATCHER}: unknown tool {tool!r}\n", 127)
    return handler(node, args)


def simple_tools() -> dict[str, Callable[[Node, list[str]], int]]:
    """Tools that only read or write node state (imported on demand to keep start-up small)."""
    from . import fabric_manager, ib_diags, imex, numactl, pcie, subnet_manager, system, systemd

    dispatcher = subnet_manager.dispatcher_path()
    return {
        **state_tools(),
        "sysctl": system.sysctl,
        "numactl": numactl.main,  # starts the command in place: never served
        # Generic units; systemd.systemctl hands the opensm unit names to subnet_manager.systemctl.
        "systemctl": lambda node, args: systemd.systemctl(node, args, dispatcher),
        "udevadm": systemd.udevadm,
        "fabcheck-mock-boot": lambda node, args: systemd.boot(node, dispatcher),
        "sminfo": subnet_manager.sminfo,
        "fabcheck-mock-opensm": lambda node, args: subnet_manager.daemon(node),
        "lspci": lambda node, args: pcie.lspci(node, args),
        "ibqueryerrors": lambda node, args: ib_diags.main(node, "ibqueryerrors", args),
        "nvidia-imex": imex.main,  # the daemon of the nvidia-imex unit
        "nvidia-imex-ctl": imex.imex_ctl,  # asks the daemons over their sockets: never served
        "nv-fabricmanager": fabric_manager.daemon,
    }


def state_tools() -> dict[str, Callable[[Node, list[str]], int]]:
    """The tools of SERVED_TOOLS: their output depends on the node's state, sysfs and /etc only."""
    from . import ib_diags, kernel_log, mlnx_qos, netdev, nvidia_smi, rdma_cm, rdma_info, system, systemd
    from .nic_firmware import firmware_tools

    return {
        "nvidia-smi": nvidia_smi.main,
        "mlnx_qos": mlnx_qos.main,
        "cma_roce_tos": rdma_cm.roce_tos,
        "cma_roce_mode": rdma_cm.roce_mode,
        "ibv_devinfo": rdma_info.ibv_devinfo,
        "ibstat": rdma_info.ibstat,
        "ibstatus": rdma_info.ibstatus,
        "show_gids": rdma_info.show_gids,
        "ibdev2netdev": rdma_info.ibdev2netdev,
        "rdma": rdma_info.rdma,
        "ip": netdev.ip,
        "ethtool": netdev.ethtool,
        "lsmod": system.lsmod,
        "modprobe": system.modprobe,
        "rmmod": system.rmmod,
        "modinfo": system.modinfo,
        "systemctl": systemd.served_systemctl,  # read verbs only; simple_tools() has the node's own
        **firmware_tools(),  # mlxconfig, flint, mlxfwmanager
        "dmesg": kernel_log.dmesg,
        **{
            tool: ib_diags.tool(tool)
            for tool in ("ibnetdiscover", "iblinkinfo", "saquery", "vendstat", "perfquery")
        },
    }


def main() -> int:
    tool = os.path.basename(sys.argv[0])
    args = sys.argv[1:]
    if tool in (DISPATCHER, "__main__.py") or tool.endswith(".pyz"):
        if not args:
            err(f"usage: {DISPATCHER} TOOL [ARGS...]\n")
            return 2
        tool, args = args[0], args[1:]
    try:
        return run(tool, args)
    except ToolError as exc:
        (out if exc.stdout else err)(exc.message)
        return exc.code
    except BrokenPipeError:
        return 141
