#!/usr/bin/python
# Copyright: fabcheck contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Documentation and argument spec of fabcheck.fabric.switch_config.

The work is done on the controller by the action plugin of the same name
(plugins/action/switch_config.py): it stages the config in the platform's transaction through netmiko
and commits only when the platform's diff is not empty. This file only runs when something executes the
module itself on a host, and then it refuses.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: switch_config
short_description: Push a fabcheck-rendered QoS config to a switch, atomically, through netmiko
version_added: "0.1.0"
description:
  - Runs on the controller as an action plugin, which logs in with netmiko from the Python of
    C(ansible-playbook), where fabcheck is installed. Its arguments, the password among them, are never
    shipped anywhere or written to disk (no module payload), so the play needs no local connection.
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
      - A fabcheck switch platform, one of the records of C(fabcheck.intent.platforms) (C(nvue), C(sonic),
        C(eos) today); another name fails the task, naming them.
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
requirements:
  - fabcheck (the Python package, with netmiko) in the Python that runs C(ansible-playbook)
attributes:
  action:
    support: full
    description: All of the work is done by the action plugin, on the controller.
  check_mode:
    support: full
    description: Stages the config, reports the platform's diff and discards the transaction.
  diff_mode:
    support: full
    description: The running config before and after (in check mode, the platform's own diff).
  platform:
    platforms: all
    support: full
    description: Any switch of a fabcheck platform, reached over SSH from the controller.
author: fabcheck contributors (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Push the lossless QoS config
  fabcheck.fabric.switch_config:
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


from ansible.module_utils.basic import AnsibleModule  # noqa: E402  (Ansible modules put their documentation first)
from ansible_collections.fabcheck.fabric.plugins.module_utils.switch_config_args import (  # noqa: E402
    ARGUMENT_SPEC,
)


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(
        msg="fabcheck.fabric.switch_config runs as an action plugin on the controller; "
        "this module file was executed on a host instead (call it by its name, not as a script)"
    )


if __name__ == "__main__":
    main()
