"""Mock GPU-host tools that run inside a lab node under the system Python (stdlib only).

Installed as one zip application (``fabcheck-mock``) with one symlink per tool name; the tool is
chosen by the name it is called by, or by ``fabcheck-mock TOOL ARGS...``. Never import fabcheck here.
"""

DISPATCHER = "fabcheck-mock"
CLIENT = "fabcheck-mock-client"  # C client of the lab's tool server (see toolserver.py)
SOCKET_NAME = ".tools.sock"  # in a node's state folder, one per node
PERFTEST = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat")
NCCL_TESTS = (
    "all_reduce_perf",
    "all_gather_perf",
    "reduce_scatter_perf",
    "alltoall_perf",
    "broadcast_perf",
    "sendrecv_perf",
    "reduce_perf",
    "hypercube_perf",
)
# Tools that only read and write node state and sysfs: the lab's tool server runs them in-process.
# Not served: perftest, nccl-tests, mpirun and numactl (they move bytes and start processes in the node),
# sminfo (node pids) and sysctl (reads files by their path in the node). systemctl is served for its read
# verbs on the node's own units and runs in the node for everything else (systemd.served_systemctl).
SERVED_TOOLS = (
    "nvidia-smi",
    "mlnx_qos",
    "cma_roce_tos",
    "cma_roce_mode",
    "ibv_devinfo",
    "ibstat",
    "ibstatus",
    "show_gids",
    "ibdev2netdev",
    "rdma",
    "ip",
    "ethtool",
    "lsmod",
    "modprobe",
    "rmmod",
    "systemctl",
    "mlxconfig",
    "flint",
    "mlxfwmanager",
    "modinfo",
    "dmesg",
    # infiniband-diags (mockhost/tools/ib_diags.py); ibqueryerrors reads its threshold file by its path
    # in the node, so it runs there.
    "ibnetdiscover",
    "iblinkinfo",
    "saquery",
    "vendstat",
    "perfquery",
)
# Every tool name a node has: the served ones, and those that start processes or read node files.
TOOL_NAMES = (
    *PERFTEST,
    *NCCL_TESTS,
    "fabcheck-mpirun",
    *SERVED_TOOLS,
    "sysctl",
    "sminfo",
    "numactl",
    "ibqueryerrors",
    "lspci",  # not served: like the real one it prints capabilities only to root (the caller's uid)
    # NVLink services (tools/imex.py, tools/fabric_manager.py): daemons and a client of their sockets
    "nvidia-imex",
    "nvidia-imex-ctl",
    "nv-fabricmanager",
)
