#!/usr/bin/python
# (shebang "python", not "python3": Ansible then runs it with ansible_python_interpreter, the playbook's own)
"""Ansible module switch_config: push a rendered switch config through the platform's transaction.

Runs on the controller (the switch play uses a local connection with ansible_playbook_python), where
fabcheck and netmiko are installed: it logs in with netmiko, stages the config in the platform's own
transaction, and commits only when the platform's diff is not empty. Any failure before the commit
leaves the switch on its previous config; a failed commit is rolled back by the platform.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from ansible.module_utils.basic import AnsibleModule

# fabcheck is imported before the argument spec is built: the platform choices are its records.
try:
    from fabcheck.intent.platforms import PLATFORMS, platform_named
    from fabcheck.switch.concerns import CONCERNS, ConcernError, chosen_concerns
    from fabcheck.switch.connect import ConnectError, SwitchLogin, connect
    from fabcheck.switch.driver import PushError, driver_for, push
    from fabcheck.switch.render import RenderedConfig
except ImportError as err:
    FABCHECK_IMPORT_ERROR: ImportError | None = err
    PLATFORM_CHOICES: list[str] | None = None
else:
    FABCHECK_IMPORT_ERROR = None
    PLATFORM_CHOICES = sorted(PLATFORMS)

DOCUMENTATION = r"""
module: switch_config
short_description: Push a fabcheck-rendered QoS config to a switch, atomically, through netmiko
description:
  - Stages the config in the platform's transaction (NVUE pending revision, EOS configure session,
    SONiC checkpoint and patch), reports the platform's own diff, and commits only when it is not empty.
  - Check mode stages, diffs and discards; diff mode shows the running config before and after.
  - On any error or lost connection the switch stays on its previous config and the task fails saying so.
  - Where a commit does not persist (EOS, SONiC, NVUE before CL 5.9) a failed or cut save fails the task
    with rolled_back false; the next run sees the startup config lag and saves (changed).
options:
  name: {description: Switch name (inventory hostname)., type: str, required: true}
  platform:
    description:
      - A fabcheck switch platform. The choices are the platform records of fabcheck.intent.platforms
        (PLATFORMS), read when the module runs.
    type: str
    required: true
  address: {description: Management address., type: str, required: true}
  port: {description: SSH port., type: int, default: 22}
  username: {description: Login user., type: str, required: true}
  password:
    description: Login password (from ansible-vault or the environment; never logged).
    type: str
    required: true
  known_hosts: {description: known_hosts file with the switch's host key; default the user's., type: path}
  config: {description: Rendered config (filter fabcheck_switch_config)., type: str, required: true}
  concerns:
    description:
      - Concerns to push; the operations of the others are not staged, so their settings and their
        stale entries stay exactly as they run. The play derives it from C(--tags).
      - Any of dscp, pfc, ecn, scheduler, watchdog, mtu, buffers (fabcheck.switch.concerns); unset, all.
    type: list
    elements: str
  connect_timeout: {description: Seconds to connect and log in., type: float, default: 10}
  command_timeout: {description: Seconds for one command., type: float, default: 60}
author: fabcheck
"""

EXAMPLES = r"""
- name: Push the lossless QoS config
  switch_config:
    name: "{{ inventory_hostname }}"
    platform: nvue
    address: 192.0.2.1
    username: cumulus
    password: "{{ switch_password }}"
    config: "{{ rendered.config }}"
"""

RETURN = r"""
platform_diff:
  description: The platform's own diff of what the push changes (or would change in check mode).
  type: str
  returned: always
concerns:
  description: The concerns this push was scoped to.
  type: list
  elements: str
  returned: always
rolled_back:
  description: On failure, whether the switch is known to be on its previous config.
  type: bool
  returned: failed
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "platform": {"type": "str", "required": True, "choices": PLATFORM_CHOICES},
            "address": {"type": "str", "required": True},
            "port": {"type": "int", "default": 22},
            "username": {"type": "str", "required": True},
            "password": {"type": "str", "required": True, "no_log": True},
            "known_hosts": {"type": "path"},
            "config": {"type": "str", "required": True},
            "concerns": {"type": "list", "elements": "str"},  # checked by fabcheck: one list of names
            "connect_timeout": {"type": "float", "default": 10.0},
            "command_timeout": {"type": "float", "default": 60.0},
        },
        supports_check_mode=True,
    )
    if FABCHECK_IMPORT_ERROR is not None:
        module.fail_json(
            msg=f"fabcheck is not importable on the controller ({FABCHECK_IMPORT_ERROR}); "
            "use ansible_playbook_python"
        )
        return
    params = module.params
    try:
        concerns = chosen_concerns(params["concerns"] if params["concerns"] is not None else CONCERNS)
    except ConcernError as err:
        module.fail_json(msg=f"concerns: {err}", changed=False, rolled_back=True)
        return
    try:
        driver_class = driver_for(params["platform"])
    except PushError as err:
        module.fail_json(msg=str(err), changed=False, rolled_back=True)
        return
    login = SwitchLogin(
        name=params["name"],
        device_type=platform_named(params["platform"]).device_type,
        address=params["address"],
        port=params["port"],
        username=params["username"],
        password=params["password"],
        known_hosts=Path(params["known_hosts"]) if params["known_hosts"] else None,
        connect_timeout_s=params["connect_timeout"],
        read_timeout_s=params["command_timeout"],
    )
    config = RenderedConfig(params["name"], params["platform"], params["config"])
    try:
        connection = connect(login)
    except ConnectError as err:
        module.fail_json(msg=str(err), changed=False, rolled_back=True)
        return
    try:
        result = push(driver_class(connection), config, check=module.check_mode, concerns=concerns)
    except PushError as err:
        module.fail_json(
            msg=str(err), changed=not err.rolled_back, rolled_back=err.rolled_back, platform_diff=err.diff
        )
        return
    finally:
        with contextlib.suppress(Exception):  # a dropped session has nothing left to close
            connection.disconnect()
    # Check mode changes nothing, so before == after there: show the platform's own diff instead.
    diff = (
        {"prepared": result.diff}
        if module.check_mode
        else {"before": result.before + "\n", "after": result.after + "\n"}
    )
    module.exit_json(
        changed=result.changed,
        platform_diff=result.diff,
        diff=diff,
        concerns=[c for c in CONCERNS if c in concerns],
    )


if __name__ == "__main__":
    main()
