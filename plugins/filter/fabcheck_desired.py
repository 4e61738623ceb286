"""Ansible filters that hand the roles fabcheck's desired state (runs on the controller only).

The roles never derive a value of the intent in Jinja: they read it from the records computed by
``fabcheck.desired``, the same records the gate judges against.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ansible.errors import AnsibleFilterError

try:
    from pydantic import ValidationError

    from fabcheck.desired import desired_host, desired_switch
    from fabcheck.errors import FabcheckError
    from fabcheck.intent.fabric import GPU_HOSTS, InventoryNode, read_fabric
    from fabcheck.intent.loader import plain_python  # ansible's tagged values -> plain
    from fabcheck.intent.model import FabricIntent
    from fabcheck.switch.concerns import concerns_from_tags
    from fabcheck.switch.render import render_switch
except ImportError as err:  # ansible-playbook run from a Python without fabcheck installed
    _IMPORT_ERROR: ImportError | None = err
else:
    _IMPORT_ERROR = None


def _require_fabcheck() -> None:
    if _IMPORT_ERROR is not None:
        raise AnsibleFilterError(
            f"fabcheck is not importable by this ansible-playbook ({_IMPORT_ERROR}); "
            "run the ansible-playbook of the Python environment fabcheck is installed in"
        )


def _validated(intent: Any, host: str, rails: Mapping[Any, str] | None = None) -> FabricIntent:
    data = dict(intent or {})
    if rails is not None:
        data["rails"] = dict(rails)
    try:
        return FabricIntent.model_validate(plain_python(data))
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(part) for part in first["loc"]) or "fabric_intent"
        raise AnsibleFilterError(
            f"{host}: fabric_intent.{key}: {first['msg']} (run `fabcheck intent check` for every problem)"
        ) from None


def fabcheck_desired_host(intent: Any, host: str, rails: Mapping[Any, str] | None = None) -> dict[str, Any]:
    """`fabric_intent | fabcheck_desired_host(inventory_hostname, fabric_rails | default(None))`."""
    _require_fabcheck()
    desired = desired_host(_validated(intent, host, rails), host)
    return desired.to_json() | {"roce_nic_args": desired.roce_nic_args()}


def fabcheck_switch_config(
    switch: str,
    intent: Any,
    hostvars: Mapping[str, Any],
    groups: Mapping[str, Sequence[str]],
    run_tags: Sequence[str] = ("all",),
) -> dict[str, Any]:
    """`inventory_hostname | fabcheck_switch_config(fabric_intent, hostvars, groups, ansible_run_tags)`:
    the switch's desired state, the whole config its platform's templates render from it, and the
    concerns the run's tags select (the push stages only those)."""
    _require_fabcheck()
    validated = _validated(intent, switch)
    names = list(dict.fromkeys([*groups.get(GPU_HOSTS, ()), *groups.get("switches", ()), switch]))
    nodes = []
    for name in names:
        variables = hostvars[name]
        rails = variables.get("fabric_rails")
        nodes.append(
            InventoryNode(
                name,
                tuple(variables.get("group_names", ())),
                variables,
                plain_python(rails) if rails is not None else validated.rails,
            )
        )
    selected = concerns_from_tags(run_tags)
    try:
        # Values here are already templated (a vaulted password is plain text by now): the secret
        # rule was enforced by `fabcheck intent check` on the raw inventory in the preflight play.
        fabric = read_fabric(nodes, lambda _value: "", secrets_checked=False)
        desired = desired_switch(validated, fabric, switch)
        rendered = render_switch(desired)
    except FabcheckError as err:
        raise AnsibleFilterError(f"{switch}: {err}") from None
    return {
        "platform": desired.platform,
        "device_type": desired.device_type,
        "concerns": selected,
        "config": rendered.text,
        "desired": desired.to_json(),
    }


def fabcheck_hosts(pattern: str) -> str:
    """`hosts: "{{ 'gpu_hosts' | fabcheck.fabric.fabcheck_hosts }}"`: the pattern unchanged. A play's
    host pattern is templated in the controller's main process before the per-host workers fork, so
    this import of fabcheck (and pydantic) there is inherited by every worker: a collection's filters
    load one by one on first use, and each worker importing fabcheck again cost 0.13 CPU-s per host
    and task (README, Benchmarks)."""
    return pattern


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "fabcheck_desired_host": fabcheck_desired_host,
            "fabcheck_hosts": fabcheck_hosts,
            "fabcheck_switch_config": fabcheck_switch_config,
        }
