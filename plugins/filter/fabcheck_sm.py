"""Ansible filters that hand the opensm and ib_host roles their desired state (controller side only).

The roles' templates print these records (fabcheck.desired.sm) and derive nothing themselves.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleFilterError

try:
    from pydantic import ValidationError

    from fabcheck.desired.sm import desired_ib_host, desired_subnet_manager
    from fabcheck.intent.loader import plain_python  # ansible's tagged values -> plain
    from fabcheck.intent.model import FabricIntent
except ImportError as err:  # ansible-playbook run from a Python without fabcheck installed
    _IMPORT_ERROR: ImportError | None = err
else:
    _IMPORT_ERROR = None


def _fabric_intent(intent: Any, node: str) -> FabricIntent:
    if _IMPORT_ERROR is not None:
        raise AnsibleFilterError(
            f"fabcheck is not importable by this ansible-playbook ({_IMPORT_ERROR}); "
            "run the ansible-playbook of the Python environment fabcheck is installed in"
        )
    try:
        return FabricIntent.model_validate(plain_python(dict(intent or {})))
    except ValidationError as err:
        problem = err.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise AnsibleFilterError(
            f"{node}: fabric_intent{'.' + where if where else ''}: {problem['msg']} "
            "(run `fabcheck intent check` for every problem)"
        ) from None


def fabcheck_subnet_manager(intent: Any, node: str) -> dict[str, Any]:
    """`fabric_intent | fabcheck_subnet_manager(inventory_hostname)`: what this SM node must run."""
    return desired_subnet_manager(_fabric_intent(intent, node), node).to_json()


def fabcheck_ib_host(intent: Any, host: str) -> dict[str, Any]:
    """`fabric_intent | fabcheck_ib_host(inventory_hostname)`: this IB host's IPoIB child interfaces."""
    return desired_ib_host(_fabric_intent(intent, host), host).to_json()


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"fabcheck_subnet_manager": fabcheck_subnet_manager, "fabcheck_ib_host": fabcheck_ib_host}
