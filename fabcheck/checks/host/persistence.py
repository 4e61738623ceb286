"""Whether a reboot or driver reload brings the host's NIC settings back: the boot file holds exactly
the desired record role roce_host applies, the unit that re-applies it is enabled, and the applier and
udev rule are installed. Judged apart from the running state, which the other checks see."""

from __future__ import annotations

import json
from typing import Any

from fabcheck.checks.declare import ROCE, Inputs
from fabcheck.checks.host.evidence import HostEvidence, PersistEvidence, unreadable_error
from fabcheck.checks.host.judges import HostCheck
from fabcheck.checks.model import Finding, failed, passed
from fabcheck.checks.roles import HOST_PERSIST_TAG, HOST_QOS_ROLE
from fabcheck.collect import host as probes
from fabcheck.collect.host import Unreadable
from fabcheck.desired.nic import PERSIST_PATHS, PERSIST_UNIT, DesiredHost
from fabcheck.intent.model import FabricIntent

NIC_PERSISTENCE = "host.nic_persistence"

PERSIST_HINT = (
    f"role {HOST_QOS_ROLE} (tag {HOST_PERSIST_TAG}) installs it: "
    f"`ansible-playbook site.yml --tags {HOST_PERSIST_TAG} --limit <this host>`"
)


def check_nic_persistence(data: PersistEvidence, desired: DesiredHost) -> list[Finding]:
    return [
        _boot_file_finding(data.settings, desired),
        _boot_unit_finding(data.unit_state),
        _boot_helpers_finding(data.present),
    ]


def boot_settings(desired: DesiredHost) -> dict[str, Any]:
    """The record the role writes to the boot file, in its JSON form (DSCP keys as strings)."""
    settings: dict[str, Any] = json.loads(json.dumps(desired.roce_nic_args(), sort_keys=True))
    return settings


def _boot_file_finding(settings: dict[str, Any] | Unreadable | None, desired: DesiredHost) -> Finding:
    path = PERSIST_PATHS["config"]
    expected = "the settings of the desired state (roce_nic_args of the intent)"
    if isinstance(settings, Unreadable):
        return unreadable_error(NIC_PERSISTENCE, path, expected, settings)
    if settings is None:
        return failed(
            NIC_PERSISTENCE, path, expected, "no boot file: a reboot leaves the NICs lossy", PERSIST_HINT
        )
    wanted = boot_settings(desired)
    keys = sorted(set(wanted) | set(settings))
    have = {key: settings.get(key, "<missing>") for key in keys}
    want = {key: wanted.get(key, "<not a setting>") for key in keys}
    stale = [
        f"{key} {json.dumps(have[key])} (desired {json.dumps(want[key])})"
        for key in keys
        if have[key] != want[key]
    ]
    if not stale:
        return passed(NIC_PERSISTENCE, path, expected, "equal to the desired state")
    actual = "stale: " + "; ".join(stale)
    return failed(
        NIC_PERSISTENCE, path, expected, actual, f"a reboot would apply these values; {PERSIST_HINT}"
    )


def _boot_unit_finding(state: str | Unreadable) -> Finding:
    expected = f"{PERSIST_UNIT} enabled (runs the applier at boot)"
    if isinstance(state, Unreadable):
        return unreadable_error(NIC_PERSISTENCE, PERSIST_UNIT, expected, state)
    if state == "enabled":
        return passed(NIC_PERSISTENCE, PERSIST_UNIT, expected, "enabled")
    actual = "no such unit file" if state == "absent" else state
    return failed(NIC_PERSISTENCE, PERSIST_UNIT, expected, actual, PERSIST_HINT)


def _boot_helpers_finding(present: frozenset[str] | Unreadable) -> Finding:
    wanted = [PERSIST_PATHS["applier"], PERSIST_PATHS["rule"]]
    subject = "applier and udev rule"
    expected = " and ".join(wanted) + " present (a driver reload re-applies the settings)"
    if isinstance(present, Unreadable):
        return unreadable_error(NIC_PERSISTENCE, subject, expected, present)
    missing = [path for path in wanted if path not in present]
    if not missing:
        return passed(NIC_PERSISTENCE, subject, expected, "present")
    return failed(NIC_PERSISTENCE, subject, expected, f"missing: {', '.join(missing)}", PERSIST_HINT)


def _judge(
    evidence: HostEvidence, desired: DesiredHost, _intent: FabricIntent, _inputs: Inputs
) -> list[Finding]:
    return check_nic_persistence(evidence.persistence, desired)


NIC_PERSISTENCE_CHECK = HostCheck(
    NIC_PERSISTENCE,
    "host",
    "boot file",
    (probes.PERSIST_CONFIG, probes.PERSIST_UNIT_STATE, probes.PERSIST_FILES),
    "boot file equal to the desired settings, `fabcheck-roce-nic.service` enabled, applier and udev "
    "rule present",
    HOST_QOS_ROLE,
    HOST_PERSIST_TAG,
    _judge,
    kinds=ROCE,
)
