# Copyright: fabcheck contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The argument spec of fabcheck.fabric.switch_config: the module's documentation stub and the action
plugin that does the work on the controller validate against this one spec."""

from __future__ import annotations

ARGUMENT_SPEC = {
    "name": {"type": "str", "required": True},
    # The platforms are fabcheck's records (fabcheck.intent.platforms); the action plugin refuses an unknown
    # one naming them, so no second list of names lives here.
    "platform": {"type": "str", "required": True},
    "address": {"type": "str", "required": True},
    "port": {"type": "int", "default": 22},
    "username": {"type": "str", "required": True},
    "password": {"type": "str", "required": True, "no_log": True},
    "known_hosts": {"type": "path"},
    "config": {"type": "str", "required": True},
    "concerns": {"type": "list", "elements": "str"},  # checked by fabcheck: one list of names
    "connect_timeout": {"type": "float", "default": 10.0},
    "command_timeout": {"type": "float", "default": 60.0},
}
