"""Ansible filters that hand the roles fabcheck's desired state (runs on the controller only).

The roles never derive a value of the intent in Jinja: they read it from the records computed by
``fabcheck.desired``, the same records the gate judges against.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

try:
    from pydantic import ValidationError

    from fabcheck.desired import desired_host
    from fabcheck.intent.loader import _plain as plain_python  # ansible's tagged values -> plain
    from fabcheck.intent.model import FabricIntent
except ImportError as err:  # ansible-playbook run from a Python without fabcheck installed
    _IMPORT_ERROR: ImportError | None = err
else:
    _IMPORT_ERROR = None


def fabcheck_desired_host(intent: Any, host: str, rails: Mapping[Any, str] | None = None) -> dict[str, Any]:
    """`fabric_intent | fabcheck_desired_host(inventory_hostname, fabric_rails | default(None))`."""
    if _IMPORT_ERROR is not None:
        raise AnsibleFilterError(
            f"fabcheck is not importable by this ansible-playbook ({_IMPORT_ERROR}); "
            "run the ansible-playbook of the Python environment fabcheck is installed in"
        )
    data = dict(intent or {})
    if rails is not None:
        data["rails"] = dict(rails)
    try:
        validated = FabricIntent.model_validate(plain_python(data))
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(part) for part in first["loc"]) or "fabric_intent"
        raise AnsibleFilterError(
            f"{host}: fabric_intent.{key}: {first['msg']} (run `fabcheck intent check` for every problem)"
        ) from None
    desired = desired_host(validated, host)
    return desired.to_json() | {"roce_nic_args": desired.roce_nic_args()}


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"fabcheck_desired_host": fabcheck_desired_host}
