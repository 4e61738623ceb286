#!/usr/bin/python
"""Ansible module roce_nic: apply the desired record of a host's RoCE NICs (one `settings` argument),
writing only what differs, and install what re-applies the same settings at boot and on driver reload.

Runs on the target host (stdlib + ansible.module_utils only). The apply logic is
module_utils/roce_nic_apply.py, which the role also installs on the host as the boot-time applier (one
copy of it); the boot files are module_utils/roce_nic_persist.py. Tags select concerns: the module acts
only on the settings of the concerns named in the play's --tags (all without), minus --skip-tags.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: roce_nic
short_description: Apply the desired RoCE NIC record (trust, PFC, DSCP map, ECN, CNP, ToS, MTU, storm guard)
version_added: "0.1.0"
description:
  - Reads each NIC's state in one pass (C(mlnx_qos -i IF), C(/sys/class/net/IF/ecn/...),
    C(/sys/class/infiniband/DEV/tc/PORT/traffic_class), C(cma_roce_tos), C(/sys/class/net/IF/mtu),
    C(ethtool --get-tunable IF pfc-prevention-tout)), compares it with O(settings) and changes only what
    differs. O(settings) is fabcheck's desired record; every value is written as given, none is derived.
  - Supports check mode (reports the changes, writes nothing) and diff mode (before/after per NIC).
options:
  settings:
    description:
      - The desired record of the host's NICs, as the filter C(fabcheck_desired_host) returns it in
        C(roce_nic_args). Every key is required (nullable ones may be null); an unknown key is an error.
      - The role also writes it to the boot file, and C(fabcheck validate) compares that file with it.
    type: dict
    required: true
    suboptions:
      devices:
        description: RDMA devices to configure; empty means every Ethernet RDMA device.
        type: list
        elements: str
        required: true
      trust:
        description: Priority trust state, dscp or pcp (mlnx_qos --trust).
        type: str
        required: true
      pfc_bitmap:
        description: One 0/1 PFC flag per priority 0..7 (mlnx_qos --pfc).
        type: list
        elements: int
        required: true
      dscp_to_priority:
        description: DSCP (0..63, as a string) to priority (0..7), set with trust dscp.
        type: dict
        required: true
      ecn_priority:
        description: Priority whose ecn/roce_np and ecn/roce_rp enable files are written.
        type: int
        required: true
      cnp_dscp:
        description: ecn/roce_np/cnp_dscp.
        type: int
        required: true
      cnp_priority:
        description: ecn/roce_np/cnp_802p_prio.
        type: int
        required: true
      np_enable:
        description: ecn/roce_np/enable/<ecn_priority>.
        type: bool
        required: true
      rp_enable:
        description: ecn/roce_rp/enable/<ecn_priority>.
        type: bool
        required: true
      min_time_between_cnps:
        description: ecn/roce_np/min_time_between_cnps (us); null leaves it.
        type: int
        required: false
      rp_params:
        description: ecn/roce_rp/<name> values to write.
        type: dict
        required: true
      roce_tos:
        description: tc/<port>/traffic_class and the RDMA-CM default ToS (0..255).
        type: int
        required: true
      mtu:
        description: Netdev MTU (ip link set dev IF mtu N).
        type: int
        required: true
      pfc_storm_prevention_ms:
        description: ethtool tunable pfc-prevention-tout in ms (0 off); null leaves it.
        type: int
        required: false
  run_tags:
    description:
      - The play's C(--tags) (C(ansible_run_tags)). Only the concerns named there are touched
        (C(pfc) for PFC and its storm prevention, C(dscp) for trust, DSCP map and ToS, C(ecn), C(mtu),
        C(persist)); none named means all.
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
author: fabcheck contributors (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Apply the host's desired record to its rail NICs
  fabcheck.fabric.roce_nic:
    settings: "{{ roce_host_desired.roce_nic_args }}"
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


import sys  # noqa: E402  (Ansible modules put their documentation first)

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.fabcheck.fabric.plugins.module_utils.roce_nic_apply import (  # noqa: E402
    NIC_CONCERNS,
    PERSIST,
    SETTINGS,
    NicError,
    converge,
    selected_concerns,
)
from ansible_collections.fabcheck.fabric.plugins.module_utils.roce_nic_persist import persist  # noqa: E402

# `settings` is declared once, in module_utils/roce_nic_apply.py SETTINGS (the boot file reader uses the
# same table); Ansible validates its sub-options' types and refuses unknown keys.
ARGUMENT_SPEC: dict[str, dict] = {
    "settings": {
        "type": "dict",
        "required": True,
        "options": {name: setting.argument_spec() for name, setting in SETTINGS.items()},
    },
    "run_tags": {"type": "list", "elements": "str", "default": ["all"]},
    "skip_tags": {"type": "list", "elements": "str", "default": []},
    "persist": {"type": "bool", "default": False},
    "persist_paths": {"type": "dict", "default": None},
    "applier_source": {"type": "str", "default": None},
    "rollback_on_failure": {"type": "bool", "default": True},
}


def module_params(params: dict) -> dict:
    """What the apply and persist code read: the settings record plus the run's non-intent knobs."""
    knobs = ("rollback_on_failure", "persist_paths")
    return {**params["settings"], **{key: params[key] for key in knobs}}


def run(module: AnsibleModule) -> dict:
    params = module_params(module.params)
    concerns = selected_concerns(module.params["run_tags"], module.params["skip_tags"])
    nic_concerns = [c for c in concerns if c in NIC_CONCERNS]
    result = converge(module.run_command, params, module.check_mode, nic_concerns)
    if result.get("failed") or PERSIST not in concerns or not module.params["persist"]:
        return result
    source = module.params["applier_source"]
    if not source:
        raise NicError("persist needs applier_source (the text of module_utils/roce_nic_apply.py)")
    boot = persist(module.run_command, params, module.check_mode, source, sys.executable)
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
