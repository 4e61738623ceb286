#!/usr/bin/python
"""Ansible module: the IPoIB child interfaces (one per partition and parent) an InfiniBand host needs."""

from __future__ import annotations

DOCUMENTATION = r"""
module: ipoib_child
short_description: Create the IPoIB child interfaces of InfiniBand partitions
version_added: "0.1.0"
description:
  - Reads C(/sys/class/net/NAME/pkey) of every child; creates each missing one with
    C(ip link add link PARENT name NAME type ipoib pkey PKEY) and brings it up.
  - A child that exists with another pkey or on another parent, a missing parent, or a parent that is not
    an InfiniBand netdev fails the task and changes nothing (the module never deletes an interface).
  - Check mode and C(--diff) show which children would be created.
options:
  children:
    description: The children, each C(parent), C(name) and C(pkey) (hex, full-member bit set, e.g. C(0x8001)).
    type: list
    elements: dict
    required: true
author: fabcheck contributors (!UNKNOWN)
"""

EXAMPLES = r"""
- name: IPoIB child for partition 0x0001
  fabcheck.fabric.ipoib_child:
    children: [{parent: ib0, name: ib0.8001, pkey: "0x8001", partition: compute}]
"""

RETURN = r"""
created:
  description: Names of the children created (or, in check mode, that would be).
  type: list
  returned: always
"""

import os  # noqa: E402  (Ansible modules put their documentation first)
import re  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

SYS_NET = "/sys/class/net"
ARPHRD_INFINIBAND = "32"
FULL_MEMBER = 0x8000
NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")
ARGUMENT_SPEC = {"children": {"type": "list", "elements": "dict", "required": True}}


def read(path: str) -> str | None:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def wanted(child: dict) -> tuple[str, str, int]:
    """(parent, name, pkey) of one child; ValueError when it is not usable."""
    parent, name, pkey_text = (
        str(child.get("parent", "")),
        str(child.get("name", "")),
        str(child.get("pkey", "")),
    )
    if not NAME.fullmatch(parent) or not NAME.fullmatch(name):
        raise ValueError(
            f"parent {parent!r} / name {name!r}: expected interface names of at most 15 characters"
        )
    try:
        pkey = int(pkey_text, 16)
    except ValueError:
        raise ValueError(f"{name}: pkey {pkey_text!r} is not hexadecimal") from None
    if not FULL_MEMBER < pkey <= 0xFFFF or pkey & 0x7FFF == 0x7FFF:
        raise ValueError(f"{name}: pkey {pkey_text} is not a full-member partition key 0x8001..0xfffe")
    return parent, name, pkey


def problem(parent: str, name: str, pkey: int) -> str | None:
    """Why this child cannot be made or kept as it is; None when it exists as wanted or can be created."""
    if read(f"{SYS_NET}/{parent}/type") != ARPHRD_INFINIBAND:
        exists = os.path.isdir(f"{SYS_NET}/{parent}")
        return f"{name}: parent {parent} " + (
            "is not an InfiniBand (IPoIB) netdev" if exists else "does not exist"
        )
    if not os.path.isdir(f"{SYS_NET}/{name}"):
        return None
    have = read(f"{SYS_NET}/{name}/pkey")
    have_parent = read(f"{SYS_NET}/{name}/parent")
    if have is None or int(have, 16) | FULL_MEMBER != pkey or have_parent not in (None, parent):
        return (
            f"{name} exists with pkey {have} on {have_parent or 'an unknown parent'}, not 0x{pkey:04x} on "
            f"{parent}; remove or rename it (ip link delete {name}) and run again"
        )
    return None


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        children = [wanted(child) for child in module.params["children"]]
    except ValueError as err:
        module.fail_json(msg=str(err))
    problems = [p for p in (problem(*child) for child in children) if p]
    if problems:
        module.fail_json(msg="; ".join(problems), changed=False)
    missing = [child for child in children if not os.path.isdir(f"{SYS_NET}/{child[1]}")]
    before = "".join(f"{name}: absent\n" for _parent, name, _pkey in missing)
    after = "".join(f"{name}: pkey 0x{pkey:04x} on {parent}, up\n" for parent, name, pkey in missing)
    result = {"changed": bool(missing), "created": [name for _parent, name, _pkey in missing]}
    if module._diff:
        result["diff"] = {"before": before, "after": after}
    if module.check_mode:
        module.exit_json(**result)
    created: list[str] = []
    for parent, name, pkey in missing:
        add = ["ip", "link", "add", "link", parent, "name", name, "type", "ipoib", "pkey", f"0x{pkey:04x}"]
        for argv in (add, ["ip", "link", "set", "dev", name, "up"]):
            rc, out, err = module.run_command(argv)
            if rc != 0:
                done = {"changed": bool(created) or argv is not add, "created": created}
                module.fail_json(msg=f"{' '.join(argv)}: rc {rc}: {(err or out).strip()}", **done)
        created.append(name)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
