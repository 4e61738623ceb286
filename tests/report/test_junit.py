"""`--junit-xml`: a testsuite per node, unique `check[subject]` testcases, failure/error/skipped with
expected, actual and hint; counts that add up; parseable by xml.etree and by junitparser."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from reportdata import fabric_run

from fabcheck.checks.model import errored, failed
from fabcheck.report import junit
from fabcheck.report.model import NodeKind, Run, Subject


def parsed(run: Run) -> ET.Element:
    return ET.fromstring(junit.render(run).encode("utf-8"))


def test_one_suite_per_node_with_counts_that_add_up() -> None:
    root = parsed(fabric_run())
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["gpu01", "gpu02", "gpu03", "gpu04"]
    for suite in [root, *suites]:
        cases = suite.iter("testcase")
        outcomes = [
            [child.tag for child in case if child.tag in ("failure", "error", "skipped")] for case in cases
        ]
        assert all(len(o) <= 1 for o in outcomes)
        flat = [o[0] if o else "pass" for o in outcomes]
        assert int(suite.get("tests")) == len(flat)
        assert int(suite.get("failures")) == flat.count("failure")
        assert int(suite.get("errors")) == flat.count("error")
        assert int(suite.get("skipped")) == flat.count("skipped")
    gpu02 = suites[1]
    assert (gpu02.get("failures"), gpu02.get("errors"), gpu02.get("tests")) == ("3", "0", "7")
    for suite in suites:
        assert suite.get("time") is not None and suite.get("timestamp") and suite.get("hostname")
        for case in suite.iter("testcase"):
            assert case.get("classname") == suite.get("name") and case.get("time") is not None


def test_failure_carries_expected_actual_and_hint() -> None:
    root = parsed(fabric_run())
    case = root.find("testsuite[@name='gpu02']/testcase[@name='host.trust[mlx5_0]']")
    assert case is not None
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "host.trust"
    assert failure.get("message") == "expected trust dscp; actual trust pcp"
    assert failure.text.splitlines() == [
        "expected: trust dscp",
        "actual:   trust pcp",
        "hint:     role roce_host sets it fleet-wide; on this host: `mlnx_qos -i ens1np0 --trust dscp`",
    ]
    error = root.find("testsuite[@name='gpu04']/testcase/error")
    assert error is not None and "Connection refused" in error.get("message")
    skipped = root.find("testsuite[@name='gpu03']/testcase/skipped")
    assert skipped is not None and skipped.get("message") == "IB intent"


def test_repeated_check_and_subject_get_unique_names_and_empty_nodes_an_error() -> None:
    twice = Subject(
        "gpu09",
        NodeKind.HOST,
        (
            errored("host.collection", "gpu09", "timeout on the host", "not reported", "install coreutils"),
            errored("host.collection", "gpu09", "one round trip", "refused", "check ssh"),
        ),
    )
    root = parsed(Run("validate", (twice, Subject("leaf01", NodeKind.SWITCH, ()))))
    names = [c.get("name") for c in root.iter("testcase")]
    assert names == ["host.collection[gpu09]", "host.collection[gpu09] #2", "node.checked[leaf01]"]
    assert len(set(names)) == len(names)
    assert root.find("testsuite[@name='leaf01']/testcase/error") is not None


def test_control_characters_from_a_host_stay_valid_xml() -> None:
    hostile = failed("host.mtu", "ens1\x00", "9000", "\x1b[31m9\x00000\x7f", "hint\x08")
    text = junit.render(Run("validate", (Subject("gpu01", NodeKind.HOST, (hostile,)),)))
    root = ET.fromstring(text.encode("utf-8"))
    case = root.find("testsuite/testcase")
    assert case is not None and case.get("name") == "host.mtu[ens1\\x00]"
    assert "\\x1b[31m9\\x00000" in case.find("failure").get("message")


def test_junitparser_reads_it(tmp_path: Path) -> None:
    junitparser = pytest.importorskip(
        "junitparser", reason="dev dependency junitparser is not installed (pyproject test extra)"
    )
    path = tmp_path / "gate.xml"
    path.write_text(junit.render(fabric_run()), encoding="utf-8")
    xml = junitparser.JUnitXml.fromfile(str(path))
    suites = {suite.name: suite for suite in xml}
    assert set(suites) == {"gpu01", "gpu02", "gpu03", "gpu04"}
    assert (suites["gpu02"].tests, suites["gpu02"].failures, suites["gpu04"].errors) == (7, 3, 1)
    outcomes = {case.name: [type(r).__name__ for r in case.result] for suite in xml for case in suite}
    assert outcomes["host.trust[mlx5_0]"] == ["Failure"]
    assert outcomes["host.collection[gpu04]"] == ["Error"]
    assert outcomes["host.ecn_enable[mlx5_0]"] == ["Skipped"]
