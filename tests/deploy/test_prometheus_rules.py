"""deploy/prometheus: the alert rules pass `promtool check rules`, their unit tests pass `promtool test
rules`, and every metric they (and their tests) name is one fabcheck.report.metrics writes."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from promtool import run_promtool

from fabcheck.report import metrics

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = DEPLOY / "fabcheck.rules.yml"
RULE_TESTS = DEPLOY / "fabcheck.rules.test.yml"
WRITTEN = {
    *metrics.LINK_METRICS.values(),
    metrics.BER_METRIC,
    metrics.PAUSE_METRIC,
    metrics.QUEUE_DROPS_METRIC,
    metrics.WINDOW_METRIC,
    metrics.CHECK_METRIC,
    *(metric for metric, _help in metrics.RDMA_METRICS.values()),
    "fabcheck_run_status",
    "fabcheck_run_timestamp_seconds",
    "fabcheck_run_duration_seconds",
}


def test_promtool_checks_the_rules() -> None:
    done = run_promtool("check", "rules", str(RULES))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 11 rules found" in done.stdout


def test_promtool_runs_the_rules_unit_tests() -> None:
    done = run_promtool("test", "rules", RULE_TESTS.name, cwd=DEPLOY)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_alert_has_a_unit_test_that_fires_it() -> None:
    alerts = {
        rule["alert"] for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]
    }
    fired = {
        case["alertname"]
        for test in yaml.safe_load(RULE_TESTS.read_text())["tests"]
        for case in test["alert_rule_test"]
        if case["exp_alerts"]
    }
    assert fired == alerts


def test_the_rules_name_only_metrics_fabcheck_writes() -> None:
    named = set(re.findall(r"\bfabcheck_[a-z_]+", RULES.read_text() + RULE_TESTS.read_text()))
    selectors = set(re.findall(r'__name__=~"([^"]+)"', RULES.read_text()))
    # each name regex matches what it is meant to: CNPs sent and handled; the three RDMA sequence
    # counters; five error-frame families, uncorrectable blocks and uncorrected symbols
    assert sorted(len({m for m in WRITTEN if re.fullmatch(regex, m)}) for regex in selectors) == [2, 3, 7]
    prefixes = {"fabcheck_link_", "fabcheck_rdma_cnp_"}  # the regexes' own text
    assert {name for name in named if name not in prefixes} <= WRITTEN
