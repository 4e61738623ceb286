"""Ansible filter that hands the nvlink role every GPU host's NVLink domain (controller side only).

A domain is an inventory group under `nvlink_domains`: the group hierarchy is not among a host's
variables, so the filter reads the run's inventory through fabcheck's own loader, as `fabcheck intent
check` (the preflight play) and `fabcheck validate` (the gate) read it, and returns the records the gate
judges against (fabcheck.desired.nvlink). The role's template only prints them.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

try:
    from fabcheck.desired.nvlink import desired_nvlink
    from fabcheck.errors import FabcheckError
    from fabcheck.intent.fabric import GPU_HOSTS, fabric_of
    from fabcheck.intent.loader import load_inventory
except ImportError as err:  # ansible-playbook run from a Python without fabcheck installed
    _IMPORT_ERROR: ImportError | None = err
else:
    _IMPORT_ERROR = None


def fabcheck_nvlink_hosts(source: Any) -> dict[str, dict[str, Any]]:
    """`ansible_inventory_sources | fabcheck_nvlink_hosts`: each GPU host's desired NVLink state
    (domain, members, IMEX addresses, imex, fabric_manager ...), by host name. Read once per run
    (the play's run_once fact), as the inventory holds it: a fabric_intent given as extra vars (-e) is
    not what it reads, as for the gate."""
    if _IMPORT_ERROR is not None:
        raise AnsibleFilterError(
            f"fabcheck is not importable by this ansible-playbook ({_IMPORT_ERROR}); "
            "run the ansible-playbook of the Python environment fabcheck is installed in"
        )
    if isinstance(source, (list, tuple)):
        if len(source) != 1:
            # The domains are groups of one inventory: read from the first of several sources they would
            # miss a rack defined in another and write the wrong IMEX node lists.
            raise AnsibleFilterError(
                f"NVLink domains are read from one inventory source; this run has {len(source)} "
                f"({', '.join(map(str, source))}): put the files in one directory and pass -i DIRECTORY"
            )
        source = source[0]
    try:
        inventory = load_inventory(str(source))
        plan = fabric_of(inventory).nvlink
        hosts = inventory.group(GPU_HOSTS)
        desired = desired_nvlink({e.name: e.intent.nvlink for e in hosts}, plan, [e.name for e in hosts])
    except FabcheckError as err:
        raise AnsibleFilterError(f"{source}: {err} (run `fabcheck intent check` for every problem)") from None
    return {str(name): record.to_json() for name, record in desired.items()}


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"fabcheck_nvlink_hosts": fabcheck_nvlink_hosts}
