#!/usr/bin/python
"""Ansible module nic_fw_config: the intent's NIC firmware parameters (mlxconfig) on the host's rail NICs,
pending until a firmware reset; a firmware version other than the pin is reported, never burned."""

from __future__ import annotations

DOCUMENTATION = r"""
module: nic_fw_config
short_description: Set the intent's mlxconfig parameters on NVIDIA NICs for their next boot
version_added: "0.1.0"
description:
  - For each device, reads its part (PSID, C(/sys/class/infiniband/DEV/board_id)) and running firmware
    (C(fw_ver)), takes the entry of C(firmware) pinned for that PSID, and reads the parameters with
    C(mlxconfig -d DEV -e q).
  - Sets the parameters whose Next Boot value differs with C(mlxconfig -d DEV -y set K=V ...) (never in
    check mode) and reads them back. Such a change takes effect after a firmware reset (C(mlxfwreset)) or
    a reboot; it is reported in C(pending_reset), never as in effect. A parameter already set for the next
    boot but not yet in effect (Current differs) is reported there too, without a new set.
  - A running firmware other than the pinned C(version) is reported in C(firmware_mismatch) with the image
    to burn, and as a warning; the module never burns firmware.
  - C(--diff) shows each parameter's Next Boot value before and after, per device.
options:
  devices:
    description: RDMA devices to configure (C(mlx5_0)); empty takes every device in /sys/class/infiniband.
    type: list
    elements: str
    default: []
  firmware:
    description:
      - The intent's C(nic_firmware) entries (C(psid), C(version), C(image), C(config)), as the desired
        host state carries them. A device whose PSID has no entry is left alone.
    type: list
    elements: dict
    required: true
author: fabcheck contributors (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Firmware parameters of the rail NICs
  fabcheck.fabric.nic_fw_config:
    devices: [mlx5_0, mlx5_1]
    firmware:
      - psid: MT_0000000838
        version: 28.39.1002
        config: {LINK_TYPE_P1: ETH, ATS_ENABLED: false, CNP_DSCP_P1: 48}
"""

RETURN = r"""
pending_reset:
  description: Per device, the parameters whose intended value is not in effect yet (set for the next boot).
  type: list
  elements: dict
  returned: always
firmware_mismatch:
  description: Devices whose running firmware differs from the pin, with the image to burn.
  type: list
  elements: dict
  returned: always
devices:
  description: Per device, its PSID, running firmware and the parameters set (or that would be).
  type: list
  elements: dict
  returned: always
"""

import os  # noqa: E402  (Ansible modules put their documentation first)

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.fabcheck.fabric.plugins.module_utils.nic_fw_config import (  # noqa: E402
    PENDING,
    REBOOT_LINE,
    FirmwareError,
    diff_of,
    matches,
    parse_query,
    pin_for,
    plan_device,
    set_argv,
)

SYS_IB = "/sys/class/infiniband"
ARGUMENT_SPEC = {
    "devices": {"type": "list", "elements": "str", "default": []},
    "firmware": {"type": "list", "elements": "dict", "required": True},
}


def read_attribute(device: str, name: str) -> str:
    path = os.path.join(SYS_IB, device, name)
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError as err:
        raise FirmwareError(f"{device}: cannot read {path}: {err.strerror}") from None


def query(module: AnsibleModule, device: str) -> dict:
    rc, out, err = module.run_command(["mlxconfig", "-d", device, "-e", "q"])
    if rc != 0:
        raise FirmwareError(f"mlxconfig -d {device} -e q failed (rc {rc}): {(err or out).strip()[-300:]}")
    return parse_query(out)


def configure(module: AnsibleModule, device: str, firmware: list) -> tuple[dict | None, dict | None]:
    """One device: (its report, its diff), or (None, None) when no pin names its part."""
    psid = read_attribute(device, "board_id")
    pin = pin_for(psid, firmware)
    if pin is None:
        return {"device": device, "psid": psid, "pinned": False}, None
    running = read_attribute(device, "fw_ver")
    plan = plan_device(device, psid, running, pin, query(module, device) if pin.get("config") else {})
    if plan.to_set and not module.check_mode:
        rc, out, err = module.run_command(set_argv(plan))
        if rc != 0 or REBOOT_LINE not in out:
            raise FirmwareError(f"{' '.join(set_argv(plan))} failed (rc {rc}): {(err or out).strip()[-300:]}")
        after = query(module, device)
        unset = [name for name, value in plan.to_set.items() if not matches(value, _next(after, name))]
        if unset:
            raise FirmwareError(f"{device}: after set, Next Boot still differs for {', '.join(unset)}")
    report = {
        "device": device,
        "psid": psid,
        "running": running,
        "pinned": True,
        "set": dict(plan.to_set),
        "pending": list(plan.pending),
        "version_mismatch": plan.version_mismatch,
    }
    return report, (diff_of(plan) if plan.to_set else None)


def _next(shown: dict, name: str) -> str | None:
    return shown[name].next_boot if name in shown else None


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    devices = module.params["devices"] or (sorted(os.listdir(SYS_IB)) if os.path.isdir(SYS_IB) else [])
    reports, diffs = [], []
    try:
        for device in devices:
            report, diff = configure(module, device, module.params["firmware"])
            reports.append(report)
            if diff:
                diffs.append(diff)
    except FirmwareError as err:
        module.fail_json(msg=str(err), devices=reports, changed=any(r.get("set") for r in reports))
    pending = [{"device": r["device"], "params": r["pending"]} for r in reports if r.get("pending")]
    mismatch = [r["version_mismatch"] for r in reports if r.get("version_mismatch")]
    for entry in mismatch:
        module.warn(entry["msg"])
    changed = any(r.get("set") for r in reports)
    msg = "firmware parameters as pinned and in effect"
    if pending:
        names = ", ".join(f"{p['device']} {' '.join(p['params'])}" for p in pending)
        if not changed:
            done = "already set for the next boot, not in effect yet"
        else:
            done = "would be set for the next boot" if module.check_mode else "set for the next boot"
        msg = f"{done}, {PENDING}: {names}"
    elif not devices:
        msg = f"no RDMA device in {SYS_IB}: nothing configured"
    result = {"changed": changed, "msg": msg, "pending_reset": pending, "firmware_mismatch": mismatch}
    module.exit_json(**result, devices=reports, **({"diff": diffs} if diffs else {}))


if __name__ == "__main__":
    main()
