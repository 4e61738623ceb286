#!/usr/bin/python3
"""Ansible module roce_nic: bring RoCE NICs to the fabric intent, writing only what differs, and install
what re-applies the same settings at boot and on driver reload.

Runs on the target host (stdlib + ansible.module_utils only). The apply logic is
module_utils/roce_nic_apply.py, which the role also installs on the host as the boot-time applier (one
copy of it); the boot files are module_utils/roce_nic_persist.py. Tags select concerns: the module acts
only on the settings of the concerns named in the play's --tags (all without), minus --skip-tags.
"""

from __future__ import annotations

import sys

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.roce_nic_apply import NIC_CONCERNS, PERSIST, NicError, converge, selected_concerns
from ansible.module_utils.roce_nic_persist import persist

DOCUMENTATION = r"""
module: roce_nic
short_description: Configure RoCE QoS (trust, PFC, DSCP map, ECN/DCQCN, CNP, ToS, MTU) on RDMA NICs
description:
  - Reads each NIC's state in one pass (C(mlnx_qos -i IF), C(/sys/class/net/IF/ecn/...),
    C(/sys/class/infiniband/DEV/tc/PORT/traffic_class), C(cma_roce_tos), C(/sys/class/net/IF/mtu)),
    compares it with the desired state and changes only what differs.
  - Supports check mode (reports the changes, writes nothing) and diff mode (before/after per NIC).
options:
  devices:
    description: RDMA devices to configure (the host's rails). Empty means every Ethernet RDMA device.
    type: list
    elements: str
    default: []
  trust: {description: Priority trust state., type: str, choices: [dscp, pcp], default: dscp}
  lossless_priority: {description: Priority of RoCE data (0..7)., type: int, default: 3}
  lossless_dscp: {description: DSCPs of RoCE data (0..63)., type: list, elements: int, default: [26]}
  pfc: {description: Enable PFC on the lossless priority (and no other)., type: bool, default: true}
  cnp_dscp: {description: DSCP of CNPs., type: int, default: 48}
  cnp_priority: {description: Priority of CNPs., type: int, default: 6}
  np_enable: {description: DCQCN notification point on the lossless priority., type: bool, default: true}
  rp_enable: {description: DCQCN reaction point on the lossless priority., type: bool, default: true}
  min_time_between_cnps: {description: roce_np/min_time_between_cnps (us); null leaves it., type: int}
  rp_params: {description: roce_rp sysfs values to set., type: dict, default: {}}
  roce_tos: {description: RoCE traffic class and RDMA-CM ToS byte (0..255)., type: int, default: 106}
  mtu: {description: Netdev MTU., type: int, default: 9000}
  run_tags:
    description:
      - The play's C(--tags) (C(ansible_run_tags)). Only the concerns named there are touched
        (C(pfc), C(dscp) for trust, DSCP map and ToS, C(ecn), C(mtu), C(persist)); none named means all.
    type: list
    elements: str
    default: [all]
  skip_tags:
    description: The play's C(--skip-tags) (C(ansible_skip_tags)); those concerns are left alone.
    type: list
    elements: str
    default: []
  persist:
    description:
      - Write the boot files (settings, applier, systemd unit, udev rule) and enable the unit, so a reboot
        or a driver reload re-applies these settings without Ansible. C(false) leaves them as they are.
    type: bool
    default: false
  persist_paths:
    description: Where the boot files go (C(config), C(applier), C(unit), C(rule)); absolute paths.
    type: dict
  applier_source:
    description: The text of module_utils/roce_nic_apply.py, installed as the applier (needed with persist).
    type: str
  rollback_on_failure:
    description:
      - When a write fails, write back every setting already changed on that NIC (newest first), read
        the NIC again and report whether it is as before the run. NICs finished before it keep the
        intent. C(false) leaves the NIC as the failed run left it.
    type: bool
    default: true
author: fabcheck
"""

EXAMPLES = r"""
- name: Configure the rail NICs
  roce_nic:
    devices: [mlx5_0, mlx5_1]
    lossless_priority: 3
    lossless_dscp: [26]
"""

RETURN = r"""
nics:
  description: Per RDMA device, its netdev, the settings changed (or to change in check mode) and the
    resulting state. On a failed write also C(failed_write), C(rolled_back), C(rollback_ok) and
    C(rollback) (settings written back, errors, settings still different from before the run).
  type: dict
  returned: always
persist:
  description: With persist, the boot files changed (C(config), C(applier), C(unit), C(rule)) and
    C(enabled) when the unit was enabled; C(reload_units) and C(reload_udev) tell the handlers to run.
  type: dict
  returned: when persist is selected
writes:
  description: Every write made by this run, in order (C(nic), C(setting), C(before), C(after),
    C(command), C(rolled_back)); on success the same settings as C(nics.*.changed).
  type: list
  returned: always
"""


ARGUMENT_SPEC: dict[str, dict] = {
    "devices": {"type": "list", "elements": "str", "default": []},
    "trust": {"type": "str", "choices": ["dscp", "pcp"], "default": "dscp"},
    "lossless_priority": {"type": "int", "default": 3},
    "lossless_dscp": {"type": "list", "elements": "int", "default": [26]},
    "pfc": {"type": "bool", "default": True},
    "cnp_dscp": {"type": "int", "default": 48},
    "cnp_priority": {"type": "int", "default": 6},
    "np_enable": {"type": "bool", "default": True},
    "rp_enable": {"type": "bool", "default": True},
    "min_time_between_cnps": {"type": "int", "default": None},
    "rp_params": {"type": "dict", "default": {}},
    "roce_tos": {"type": "int", "default": 106},
    "mtu": {"type": "int", "default": 9000},
    "run_tags": {"type": "list", "elements": "str", "default": ["all"]},
    "skip_tags": {"type": "list", "elements": "str", "default": []},
    "persist": {"type": "bool", "default": False},
    "persist_paths": {"type": "dict", "default": None},
    "applier_source": {"type": "str", "default": None},
    "rollback_on_failure": {"type": "bool", "default": True},
}


def run(module: AnsibleModule) -> dict:
    params = module.params
    concerns = selected_concerns(params["run_tags"], params["skip_tags"])
    nic_concerns = [c for c in concerns if c in NIC_CONCERNS]
    result = converge(module.run_command, params, module.check_mode, nic_concerns)
    if result.get("failed") or PERSIST not in concerns or not params["persist"]:
        return result
    if not params["applier_source"]:
        raise NicError("persist needs applier_source (the text of module_utils/roce_nic_apply.py)")
    boot = persist(module.run_command, params, module.check_mode, params["applier_source"], sys.executable)
    result["diff"] += boot.pop("diff")
    result["persist"] = boot
    result["changed"] |= bool(boot["changed"])
    return result


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = run(module)
    except NicError as exc:
        module.fail_json(msg=str(exc), changed=False)
    failed = result.pop("failed", False)
    if failed or not module._diff:
        result.pop("diff")
    if failed:
        module.fail_json(**result)  # changed stays true when writes were made, rolled back or not
    module.exit_json(**result)


if __name__ == "__main__":
    main()
