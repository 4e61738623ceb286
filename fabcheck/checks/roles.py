"""Which Ansible role fixes what: hints name these so the fix is one playbook run away."""

from __future__ import annotations

HOST_QOS_ROLE = "roce_host"  # trust, PFC, DSCP map, ToS, ECN/DCQCN, MTU on the NICs
HOST_PERSIST_TAG = "persist"  # the part of roce_host that installs the NIC boot files (unit, udev rule)
HOST_FIRMWARE_TAG = "firmware"  # the part of roce_host that sets the pinned mlxconfig parameters
GPU_RDMA_ROLE = "gpu_rdma"  # nvidia_peermem, RDMA device presence
SWITCH_QOS_ROLE = "switch_qos"  # switch PFC/ECN/trust/maps/MTU
SUBNET_MANAGER_ROLE = "opensm"  # opensm.conf, partitions.conf, the service
