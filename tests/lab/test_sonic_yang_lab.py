"""The whole CONFIG_DB of the lab's mock SONiC switch, before and after the switch play pushed to it, read
back as the driver reads it (`show runningconfiguration all`) and judged by SONiC's own YANG models
through yanglint (fabcheck/switch/sonic_yang.py, full mode: no fabcheck deviation loaded)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from labsupport import requires_lab, run_playbook, running_lab

from fabcheck.parsers.switch_sonic import FRR_CONFIG_KEY
from fabcheck.switch.connect import SwitchLogin, connect
from fabcheck.switch.sonic_yang import validate_config_db
from fabcheck_lab.mockswitch import SWITCH_PLATFORMS
from fabcheck_lab.state import LabPaths, NodeRecord

pytestmark = [pytest.mark.lab, requires_lab]

# The tables the SONiC template renders (tests/switch/golden/sonic-*.json).
RENDERED_TABLES = {
    "PORT",
    "PORT_QOS_MAP",
    "DSCP_TO_TC_MAP",
    "TC_TO_QUEUE_MAP",
    "TC_TO_PRIORITY_GROUP_MAP",
    "MAP_PFC_PRIORITY_TO_QUEUE",
    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
    "QUEUE",
    "SCHEDULER",
    "WRED_PROFILE",
    "BUFFER_PG",
    "PFC_WD",
}


def running_config_db(paths: LabPaths, node: NodeRecord) -> dict[str, Any]:
    login = SwitchLogin(
        name=node.name,
        device_type=SWITCH_PLATFORMS[node.profile],
        address=node.address,
        port=node.port,
        username=node.username,
        password=paths.switch_password.read_text().strip(),
        known_hosts=paths.known_hosts,
    )
    conn = connect(login)
    try:
        running = json.loads(conn.send_command("show runningconfiguration all", read_timeout=60))
    finally:
        conn.disconnect()
    assert isinstance(running.pop(FRR_CONFIG_KEY), str)  # FRR's config beside the tables, not one
    return running


def test_the_post_push_config_db_of_a_sonic_switch_is_valid_sonic_yang() -> None:
    # The lab cycles switch platforms nvue, sonic, eos: two switches make leaf02 the SONiC one.
    with running_lab(profile="roce", hosts=1, switches=2) as (paths, state):
        sonic = next(node for node in state.switch_nodes() if node.profile == "sonic")
        factory = running_config_db(paths, sonic)
        push = run_playbook(paths, "--limit", sonic.name)
        assert push.rc == 0 and push.changed.get(sonic.name) == 1, push.output[-4000:]
        pushed = running_config_db(paths, sonic)

    for name, config_db in (("factory", factory), ("pushed", pushed)):
        verdict = validate_config_db(config_db, fragment=False)
        assert verdict.valid, (name, verdict.messages)
        assert verdict.unchecked == (), (name, verdict.unchecked)  # every table judged, none passed over
        assert set(verdict.tables) >= RENDERED_TABLES, name
    assert pushed != factory
    assert any(key.startswith("FABCHECK") for key in pushed["SCHEDULER"])

    # The same CONFIG_DB with a queue naming a WRED profile it does not hold: refused by yanglint.
    broken = copy.deepcopy(pushed)
    queue = next(key for key, fields in broken["QUEUE"].items() if "wred_profile" in fields)
    broken["QUEUE"][queue]["wred_profile"] = "NO_SUCH_PROFILE"
    verdict = validate_config_db(broken, fragment=False)
    assert not verdict.valid
    assert 'Invalid leafref value "NO_SUCH_PROFILE"' in verdict.messages[0], verdict.messages
