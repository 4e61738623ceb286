# Copyright: fabcheck contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin fabcheck.fabric.switch_config: the switch push, done in the controller's own process.

A module would be packed with its arguments into an AnsiballZ payload and written under the local temp
dir before it runs, the switch password included, and an interrupted run leaves that file behind. This
plugin never executes a module: it validates the task's arguments against the module's spec, logs in
with netmiko (fabcheck.switch.connect) and runs fabcheck.switch.driver.push, so the password lives only
in this worker's memory. The task needs no connection to the switch host (no `connection: local`, no
`ansible_python_interpreter`): fabcheck is imported by the Python running ansible-playbook.
"""

from __future__ import annotations

import contextlib
import resource
from pathlib import Path

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.fabcheck.fabric.plugins.module_utils.switch_config_args import ARGUMENT_SPEC

try:
    from fabcheck.intent.platforms import UnknownPlatform, platform_named
    from fabcheck.switch.concerns import CONCERNS, ConcernError, chosen_concerns
    from fabcheck.switch.connect import ConnectError, SwitchLogin, connect
    from fabcheck.switch.driver import PushError, driver_for, push
    from fabcheck.switch.render import RenderedConfig
except ImportError as err:  # ansible-playbook of a Python without fabcheck
    FABCHECK_IMPORT_ERROR: ImportError | None = err
else:
    FABCHECK_IMPORT_ERROR = None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False  # the switch is reached by netmiko from here, not by the task's connection
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):  # ActionBase.run's signature
        # This worker holds the switch password in memory from here on: it never dumps core (soft and
        # hard limit 0, for this per-task worker only; ansible-playbook itself is not changed).
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        result = super().run(tmp, task_vars)
        del tmp  # unused: nothing is written, locally or remotely
        if FABCHECK_IMPORT_ERROR is not None:
            raise AnsibleActionFail(
                f"fabcheck is not importable by this ansible-playbook ({FABCHECK_IMPORT_ERROR}); "
                "run the ansible-playbook of the Python environment fabcheck is installed in"
            )
        _validation, params = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        result.update(self._push(params))
        return result

    def _push(self, params: dict) -> dict:
        check_mode = bool(self._task.check_mode)
        try:
            concerns = chosen_concerns(params["concerns"] if params["concerns"] is not None else CONCERNS)
        except ConcernError as err:
            return _failed(f"concerns: {err}", rolled_back=True)
        try:
            driver_class = driver_for(params["platform"])
            device_type = platform_named(params["platform"]).device_type
        except (PushError, UnknownPlatform) as err:
            return _failed(str(err), rolled_back=True)
        login = SwitchLogin(
            name=params["name"],
            device_type=device_type,
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
            return _failed(str(err), rolled_back=True)
        try:
            pushed = push(driver_class(connection), config, check=check_mode, concerns=concerns)
        except PushError as err:
            return _failed(str(err), rolled_back=err.rolled_back, changed=not err.rolled_back, diff=err.diff)
        finally:
            with contextlib.suppress(Exception):  # a dropped session has nothing left to close
                connection.disconnect()
        # Check mode changes nothing, so before == after there: show the platform's own diff instead.
        diff = (
            {"prepared": pushed.diff}
            if check_mode
            else {"before": pushed.before + "\n", "after": pushed.after + "\n"}
        )
        return {
            "changed": pushed.changed,
            "platform_diff": pushed.diff,
            "diff": diff,
            "concerns": [c for c in CONCERNS if c in concerns],
        }


def _failed(message: str, *, rolled_back: bool, changed: bool = False, diff: str = "") -> dict:
    return {
        "failed": True,
        "msg": message,
        "changed": changed,
        "rolled_back": rolled_back,
        "platform_diff": diff,
    }
