"""SM checks as tables: (what each SM node showed, desired state) -> findings, no node in sight.

The subnet has sm01 (intended master, priority 15) and sm02 (standby, 14); each case changes one thing
and must fail or error exactly the checks of exactly the node it concerns.
"""

from __future__ import annotations

import dataclasses

import pytest

from fabcheck.checks.host import Unreadable
from fabcheck.checks.model import Finding, Status
from fabcheck.checks.sm import SM_CHECKS, NoAnswer, SmEvidence, check_subnet
from fabcheck.desired.sm import DesiredSubnetManager, desired_subnet_manager
from fabcheck.intent.model import FabricIntent
from fabcheck.parsers.opensm_conf import parse_opensm_conf, parse_partitions_conf
from fabcheck.parsers.sminfo import MASTER, STANDBY, SmInfo

INTENT = FabricIntent.model_validate(
    {
        "kind": "ib",
        "roce_tos": 104,
        "subnet_manager": {
            "routing_engine": "ftree",
            "sm_priorities": {"sm01": 15, "sm02": 14},
            "partitions": [{"name": "compute", "pkey": "0x0001", "ipoib_parents": ["ib0"], "mtu": 4096}],
        },
    }
)
GUIDS = {"sm01": 0x11, "sm02": 0x22}
LIDS = {"sm01": 17, "sm02": 25}


def desired(node: str) -> DesiredSubnetManager:
    return desired_subnet_manager(INTENT, node)


DESIRED = {node: desired(node) for node in GUIDS}


def info(node: str, state: int, priority: int | None = None) -> SmInfo:
    return SmInfo(
        LIDS[node], GUIDS[node], 100, DESIRED[node].sm_priority if priority is None else priority, state
    )


def converged(node: str, master: str = "sm01") -> SmEvidence:
    """What a node the opensm role converged shows."""
    wanted = DESIRED[node]
    conf = "".join(f"{key} {value}\n" for key, value in wanted.conf_pairs)
    return SmEvidence(
        node=node,
        own=info(node, MASTER if node == master else STANDBY),
        master=info(master, MASTER),
        conf=parse_opensm_conf(conf),
        partitions=parse_partitions_conf("\n".join(wanted.partition_lines) + "\n"),
        enabled="enabled",
        active="active",
    )


def judged(*evidence: SmEvidence) -> dict[str, dict[str, list[Status]]]:
    by_node = check_subnet(list(evidence), DESIRED)
    return {node: _by_check(findings) for node, findings in by_node.items()}


def _by_check(findings: list[Finding]) -> dict[str, list[Status]]:
    result: dict[str, list[Status]] = {}
    for finding in findings:
        result.setdefault(finding.check, []).append(finding.status)
    return result


def not_passing(*evidence: SmEvidence) -> dict[str, dict[str, list[Status]]]:
    return {
        node: {
            check: statuses for check, statuses in checks.items() if statuses != [Status.PASS] * len(statuses)
        }
        for node, checks in judged(*evidence).items()
    }


def test_a_converged_subnet_passes_and_the_master_is_judged_on_the_intended_master() -> None:
    result = judged(converged("sm01"), converged("sm02"))
    assert list(result["sm01"]) == list(SM_CHECKS)
    assert list(result["sm02"]) == [c for c in SM_CHECKS if c != "sm.master"]
    assert all(
        s == Status.PASS for checks in result.values() for statuses in checks.values() for s in statuses
    )
    assert result["sm01"]["sm.partitions"] == [Status.PASS, Status.PASS]  # Default and compute


def test_a_stopped_intended_master_fails_on_it_alone_while_the_standby_stands_in() -> None:
    stopped = dataclasses.replace(
        converged("sm01", master="sm02"),
        own=NoAnswer("sminfo 0x11", "sminfo: iberror: failed: query"),
        active="inactive",
    )
    findings = check_subnet([stopped, converged("sm02", master="sm02")], DESIRED)
    assert not_passing(stopped, converged("sm02", master="sm02")) == {
        "sm01": {"sm.service": [Status.FAIL], "sm.state": [Status.FAIL], "sm.master": [Status.FAIL]},
        "sm02": {},
    }
    master = next(f for f in findings["sm01"] if f.check == "sm.master")
    assert master.expected == "exactly one master SM: sm01 at priority 15"
    assert master.actual.startswith("sm02 (SMINFO_MASTER at priority 14")
    assert "--limit sm01 --tags sm" in master.hint and "role opensm (tag sm)" in master.hint
    standby = next(f for f in findings["sm02"] if f.check == "sm.state")
    assert "standing in, sm01 is not master" in standby.actual


def test_two_masters_fail_the_second_one_and_the_subnet() -> None:
    second = dataclasses.replace(converged("sm02"), own=info("sm02", MASTER))
    assert not_passing(converged("sm01"), second) == {
        "sm01": {"sm.master": [Status.FAIL]},
        "sm02": {"sm.state": [Status.FAIL]},
    }


def test_a_standby_at_another_priority_fails_its_state() -> None:
    wrong = dataclasses.replace(converged("sm02"), own=info("sm02", STANDBY, priority=3))
    assert not_passing(converged("sm01"), wrong) == {"sm01": {}, "sm02": {"sm.state": [Status.FAIL]}}


def test_a_master_at_another_priority_fails_state_and_master() -> None:
    low = dataclasses.replace(converged("sm01"), own=info("sm01", MASTER, priority=9))
    assert not_passing(low, converged("sm02")) == {
        "sm01": {"sm.state": [Status.FAIL], "sm.master": [Status.FAIL]},
        "sm02": {},
    }


def test_a_hand_edited_opensm_conf_fails_routing_engine_and_conf_on_that_node() -> None:
    drifted = dataclasses.replace(
        converged("sm02"),
        conf=parse_opensm_conf("sm_priority 0\nrouting_engine minhop\nlmc 0\nqos false\n"),
    )
    findings = check_subnet([converged("sm01"), drifted], DESIRED)
    assert not_passing(converged("sm01"), drifted)["sm02"] == {
        "sm.routing_engine": [Status.FAIL],
        "sm.conf": [Status.FAIL],
    }
    conf = next(f for f in findings["sm02"] if f.check == "sm.conf")
    assert conf.actual == "sm_priority 0"  # qos false reads as FALSE; missing keys are OpenSM's defaults
    assert "--limit sm02 --tags sm" in conf.hint


def test_opensm_default_routing_engine_is_minhop() -> None:
    null = dataclasses.replace(converged("sm02"), conf=parse_opensm_conf("routing_engine (null)\n"))
    minhop = dataclasses.replace(DESIRED["sm02"], conf_pairs=(("routing_engine", "minhop"),))
    finding = check_subnet([null], {"sm02": minhop, "sm01": DESIRED["sm01"]})["sm02"]
    assert [f.status for f in finding if f.check == "sm.routing_engine"] == [Status.PASS]


@pytest.mark.parametrize(
    ("partitions", "statuses"),
    [
        ("Default=0x7fff, ipoib : ALL=full ;\n", [Status.PASS, Status.FAIL]),  # compute missing
        (
            "Default=0x7fff, ipoib : ALL=full ;\ncompute=0x0001, ipoib, mtu=5 : ALL=full ;\n"
            "extra=0x0002 : ALL ;\n",
            [Status.PASS, Status.PASS, Status.FAIL],
        ),
        (
            "Default=0x7fff, ipoib : ALL=full ;\ncompute=0x0001, ipoib, mtu=4 : ALL=full ;\n",
            [Status.PASS, Status.FAIL],
        ),
        (None, [Status.FAIL, Status.FAIL]),  # no partitions.conf at all
    ],
)
def test_partitions_are_judged_rule_by_rule(partitions: str | None, statuses: list[Status]) -> None:
    rules = None if partitions is None else parse_partitions_conf(partitions)
    shown = dataclasses.replace(converged("sm02"), partitions=rules)
    findings = check_subnet([converged("sm01"), shown], DESIRED)["sm02"]
    partition_findings = [f for f in findings if f.check == "sm.partitions"]
    assert [f.status for f in partition_findings] == statuses
    assert all("--tags partitions" in f.hint for f in partition_findings if f.status == Status.FAIL)


def test_an_unreachable_node_is_errors_there_and_the_master_cannot_be_proven() -> None:
    gone = SmEvidence(
        "sm02", *(Unreadable("collection", "ssh: connect refused"),) * 6, unreachable="connect refused"
    )
    result = judged(converged("sm01"), gone)
    assert set(result["sm02"]) == set(SM_CHECKS) - {"sm.master"}
    assert all(statuses == [Status.ERROR] for statuses in result["sm02"].values())
    assert result["sm01"]["sm.master"] == [Status.ERROR]
    assert all(
        set(statuses) == {Status.PASS} for check, statuses in result["sm01"].items() if check != "sm.master"
    )


def test_unreadable_service_state_is_an_error_never_a_pass() -> None:
    shown = dataclasses.replace(
        converged("sm02"), enabled=Unreadable("systemctl is-enabled opensm", "exit 1")
    )
    assert not_passing(converged("sm01"), shown)["sm02"] == {"sm.service": [Status.ERROR]}


def test_without_priorities_any_one_master_passes_and_is_judged_on_every_node() -> None:
    plain = FabricIntent.model_validate({"kind": "ib", "roce_tos": 104})
    wanted = {node: desired_subnet_manager(plain, node) for node in GUIDS}
    shown = [
        dataclasses.replace(
            converged(node),
            own=info(node, MASTER if node == "sm02" else STANDBY, 0),
            master=info("sm02", MASTER, 0),
        )
        for node in GUIDS
    ]
    shown = [
        dataclasses.replace(
            e, conf=parse_opensm_conf("".join(f"{k} {v}\n" for k, v in wanted[e.node].conf_pairs))
        )
        for e in shown
    ]
    shown = [
        dataclasses.replace(e, partitions=parse_partitions_conf("\n".join(wanted[e.node].partition_lines)))
        for e in shown
    ]
    result = check_subnet(shown, wanted)
    assert {node: [f.status for f in fs if f.check == "sm.master"] for node, fs in result.items()} == {
        "sm01": [Status.PASS],
        "sm02": [Status.PASS],
    }
    both = [dataclasses.replace(e, own=info(e.node, MASTER, 0)) for e in shown]
    assert all(
        [f.status for f in fs if f.check == "sm.master"] == [Status.FAIL]
        for fs in check_subnet(both, wanted).values()
    )


def test_with_the_intended_master_left_out_the_standby_judges_the_master_it_follows() -> None:
    alone = check_subnet([converged("sm02")], DESIRED)["sm02"]
    master = [f for f in alone if f.check == "sm.master"]
    assert [f.status for f in master] == [Status.PASS]
    assert master[0].actual.endswith("(sm01 is not in this run)")
    low = dataclasses.replace(converged("sm02"), master=info("sm01", MASTER, priority=9))
    assert [f.status for f in check_subnet([low], DESIRED)["sm02"] if f.check == "sm.master"] == [Status.FAIL]
    lost = dataclasses.replace(converged("sm02"), master=NoAnswer("sminfo", "sminfo: iberror: failed: query"))
    assert [f.status for f in check_subnet([lost], DESIRED)["sm02"] if f.check == "sm.master"] == [
        Status.FAIL
    ]
    unread = dataclasses.replace(converged("sm02"), master=Unreadable("sminfo", "exit 127"))
    assert [f.status for f in check_subnet([unread], DESIRED)["sm02"] if f.check == "sm.master"] == [
        Status.ERROR
    ]
