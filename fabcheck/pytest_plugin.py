"""pytest plugin: the gate's host checks as parametrised pytest tests, next to your own testinfra tests.

    pytest -p fabcheck --fabcheck-inventory inventory/lab --hosts ssh://root@10.0.0.1,paramiko://gpu02
    pytest -p fabcheck --fabcheck-inventory inventory/lab -k "gpu01 and host.pfc" -n 4

One test per (node, check), named `test_fabcheck[NODE-CHECK]`: a check that fails on one of its
subjects fails, one that could not run is a pytest error, one that does not apply is skipped. Each
host is collected once per session (per xdist worker), in one round trip, through the testinfra URL
`--hosts` gives it (testinfra's own option; `--connection` picks a backend for the hosts it does not
name) or fabcheck's native ssh. Your tests get the same evidence and the testinfra host from the
`fabcheck` fixture:

    def test_nic_mtu(fabcheck):
        assert fabcheck.evidence.netdevs["ens1np0"].mtu == 9000
        assert fabcheck.host.file("/etc/fabcheck/roce-nic.json").exists

The plugin is registered under the name `fabcheck` (entry point pytest11) and does nothing without
`--fabcheck-inventory`.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # pytest loads this plugin in every session: fabcheck itself only when it is used
    from fabcheck.checks.model import Finding, Status
    from fabcheck.collect.backends import Collector
    from fabcheck.collect.host import HostCollection
    from fabcheck.gate import host_stage as validate
    from fabcheck.gate import snapshot
    from fabcheck.intent.loader import HostEntry

DEFAULT_TIMEOUT_S = 30.0  # fabcheck.collect.host.TimeLimits().command_s, pinned by a test
DEFAULT_COUNTER_WINDOW_S = 5  # fabcheck.desired.nic.DEFAULT_COUNTER_WINDOW_S, pinned by a test
CHECKS_MODULE = Path(__file__).with_name("pytest_checks.py")
NODE_PROPERTY = "fabcheck_node"  # the inventory node a test ran on
TEST_PROPERTY = "fabcheck_test"  # its name without the testinfra host parameter


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fabcheck", "fabcheck gate checks")
    group.addoption("--fabcheck-inventory", metavar="INV", help="Ansible inventory with the fabric intent")
    group.addoption("--fabcheck-limit", metavar="PATTERN", help="only these hosts, as ansible --limit")
    group.addoption(
        "--fabcheck-timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help="seconds each host's collection may run once connected (enforced on the host too)",
    )
    group.addoption(
        "--fabcheck-counter-window",
        type=_counter_window,
        default=DEFAULT_COUNTER_WINDOW_S,
        metavar="S",
        help="seconds between the two readings of each NIC's error, FEC and flap counters (0: lifetime "
        f"totals, one reading; default {DEFAULT_COUNTER_WINDOW_S})",
    )
    group.addoption(
        "--fabcheck-snapshot",
        metavar="DIR",
        help="judge the outputs `fabcheck validate --save-snapshot DIR` recorded (no connection)",
    )
    group.addoption(
        "--fabcheck-no-builtin",
        action="store_true",
        help="run only your tests (the fabcheck fixture still serves the evidence)",
    )
    group.addoption("--fabcheck-results", metavar="FILE", help="write every test's outcome to FILE as JSON")


def _counter_window(text: str) -> int:
    import argparse

    from fabcheck.desired.nic import counter_window

    try:
        return counter_window(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


@dataclass(frozen=True)
class Case:
    """One (node, check) of the gate: its findings on that node."""

    node: str
    check: str
    findings: tuple[Finding, ...]

    @property
    def id(self) -> str:
        return f"{self.node}-{self.check}"


@dataclass(frozen=True)
class HostFacts:
    """What the `fabcheck` fixture gives a test: the node, its testinfra host, and what fabcheck read."""

    node: str
    host: Any  # testinfra.host.Host
    result: validate.HostResult
    collection: HostCollection | None  # the raw sections of the round trip

    @property
    def evidence(self) -> Any:  # fabcheck.checks.host.HostEvidence, or None when nothing came back
        return self.result.evidence


class Gate:
    """The session's hosts and their results: the gate's own plan and run (plan_gate, then run_gate with
    the host stage), read on first use, once (thread-safe)."""

    def __init__(self, config: pytest.Config) -> None:
        from fabcheck.collect.backends import testinfra as backends
        from fabcheck.collect.ssh import TimeLimits
        from fabcheck.gate.plan import plan_gate
        from fabcheck.gate.sources import reachable_targets
        from fabcheck.intent.loader import load_inventory

        self.config = config
        self.inventory = load_inventory(config.getoption("fabcheck_inventory"))
        window = config.getoption("fabcheck_counter_window")
        plan = plan_gate(self.inventory, config.getoption("fabcheck_limit"), ("host",), window)
        targets = reachable_targets(plan.hosts)
        named = config.getoption("hosts", None)
        self.urls = backends.assign_urls(backends.parse_urls(named), targets) if named else {}
        if named:  # with --hosts, the run is the hosts it names (as testinfra's own tests are)
            plan = dataclasses.replace(plan, hosts=tuple(h for h in plan.hosts if h.name in self.urls))
        self.plan = plan
        self.hosts: list[HostEntry] = list(plan.hosts)
        self.limits = TimeLimits(command_s=config.getoption("fabcheck_timeout"))
        self._lock = threading.Lock()
        self._results: dict[str, validate.HostResult] | None = None
        self._tape: snapshot.Recording | None = None

    def collector(self) -> Collector | None:
        """The hosts' live collector (None under --fabcheck-snapshot: the snapshot serves them)."""
        from fabcheck.collect.backends import testinfra as backends

        if self.config.getoption("fabcheck_snapshot"):
            return None
        backend = self.config.getoption("connection", None) or backends.NATIVE
        return backends.TestinfraCollector(backend, self.urls, self.inventory.source)

    def results(self) -> Mapping[str, validate.HostResult]:
        from fabcheck.gate import snapshot
        from fabcheck.gate.fabric import run_gate
        from fabcheck.gate.stages import Reads

        with self._lock:
            if self._results is None:
                saved = self.config.getoption("fabcheck_snapshot")
                self._tape = snapshot.replay(Path(saved)) if saved else snapshot.Recording()
                reads = Reads(host=self.collector())
                run = run_gate(
                    self.inventory,
                    self.plan,
                    self.limits,
                    reads=reads,
                    tape=self._tape,
                )
                self._results = {result.host: result for result in run.hosts}
            return self._results

    def collection(self, node: str) -> HostCollection | None:
        from fabcheck.gate import host_stage

        self.results()
        assert self._tape is not None
        record = self._tape.read_of(host_stage.STAGE_NAME, node)
        return None if record is None else host_stage.host_restore(record, node)

    def cases(self) -> list[Case]:
        cases = []
        for result in self.results().values():
            by_check: dict[str, list[Finding]] = {}
            for finding in result.findings:
                by_check.setdefault(finding.check, []).append(finding)
            cases += [Case(str(result.host), check, tuple(found)) for check, found in by_check.items()]
        return cases

    def node_of(self, testinfra_host: Any) -> str | None:
        """The inventory host a testinfra host (the `host` fixture) reaches."""
        wanted = testinfra_host.backend.get_pytest_id()
        backend = self.config.getoption("connection", None) or "ssh"
        for entry in self.hosts:
            url = self.urls.get(entry.name) or _default_url(entry, backend, self.inventory.source)
            if url and _pytest_id(url) == wanted:
                return entry.name
        return None


def _default_url(entry: HostEntry, backend: str, source: str) -> str | None:
    from fabcheck.collect.backends import testinfra as backends
    from fabcheck.gate.sources import reachable_targets

    targets = reachable_targets([entry])
    if not targets or backend not in backends.TESTINFRA_BACKENDS:
        return None
    return backends.url_for(backend, targets[0], source)


def _pytest_id(url: str) -> str | None:
    import testinfra.backend

    try:
        return str(testinfra.backend.get_backend(url).get_pytest_id())
    except Exception:  # a URL testinfra cannot take names no test host
        return None


_GATE = pytest.StashKey[Gate]()


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("fabcheck_inventory"):
        return
    from fabcheck.errors import FabcheckError

    try:
        config.stash[_GATE] = Gate(config)
    except FabcheckError as err:
        raise pytest.UsageError(f"fabcheck: {err}") from None
    if not config.getoption("fabcheck_no_builtin") and str(CHECKS_MODULE) not in config.args:
        config.args.append(str(CHECKS_MODULE))
    if config.getoption("fabcheck_results") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(ResultsFile(Path(config.getoption("fabcheck_results"))))


def gate_of(config: pytest.Config) -> Gate:
    gate = config.stash.get(_GATE, None)
    if gate is None:
        raise pytest.UsageError("fabcheck: give --fabcheck-inventory INV to use the fabcheck checks")
    return gate


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "fabcheck_case" not in metafunc.fixturenames:
        return
    cases = gate_of(metafunc.config).cases()
    metafunc.parametrize("fabcheck_case", cases, ids=[case.id for case in cases], indirect=True)


@pytest.fixture
def fabcheck_case(request: pytest.FixtureRequest) -> Case:
    """One (node, check). A check that could not run errors here, in setup: a pytest error."""
    from fabcheck.checks.model import Status

    case: Case = request.param
    outcome = outcome_of({finding.status.value for finding in case.findings})
    if outcome == "skip":
        pytest.skip("; ".join(f"{f.subject}: {f.actual}" for f in case.findings)[:500])
    if outcome == "error":
        pytest.fail(describe(case, Status.ERROR), pytrace=False)  # in setup: reported as an error
    return case


def outcome_of(statuses: set[str]) -> str:
    """The pytest outcome of one (node, check) from its findings' statuses, as validate's verdict
    ranks them: a failure outranks an error, an error a pass; only skips is a skip."""
    if "fail" in statuses:
        return "fail"
    if "error" in statuses or not statuses:
        return "error"
    return "pass" if "pass" in statuses else "skip"


def describe(case: Case, status: Status) -> str:
    """The findings of one status, each with what was expected, what the node showed and the fix."""
    lines = [f"{case.check} on {case.node}:"]
    for finding in case.findings:
        if finding.status is status:
            lines.append(f"  {finding.subject}: expected {finding.expected}; actual {finding.actual}")
            if finding.hint:
                lines.append(f"    fix: {finding.hint}")
    return "\n".join(lines)


@pytest.fixture
def fabcheck(request: pytest.FixtureRequest, host: Any) -> HostFacts:
    """The node the testinfra `host` reaches, with the evidence fabcheck collected from it."""
    gate = gate_of(request.config)
    node = gate.node_of(host)
    if node is None:
        known = ", ".join(h.name for h in gate.hosts) or "none"
        raise pytest.UsageError(
            f"fabcheck: testinfra host {host.backend.get_pytest_id()} is no GPU host of this run ({known})"
        )
    return HostFacts(node, host, gate.results()[node], gate.collection(node))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Name the node a test judges in its reports (--fabcheck-results, xdist passes it on)."""
    gate = item.config.stash.get(_GATE, None)
    params = getattr(getattr(item, "callspec", None), "params", {})
    node = None
    if "fabcheck_case" in params:
        node = params["fabcheck_case"].node
    elif gate is not None and "_testinfra_host" in params:
        node = gate.node_of(params["_testinfra_host"])
        item.user_properties.append(
            (TEST_PROPERTY, name_without_host(item.nodeid, params["_testinfra_host"]))
        )
    if node is not None:
        # A plain str: xdist serialises reports, and inventory names are ansible's tagged strings.
        item.user_properties.append((NODE_PROPERTY, str(node)))


def name_without_host(nodeid: str, testinfra_host: Any) -> str:
    """The node id without the testinfra host parameter: one name for the same test on every node."""
    host_id = str(testinfra_host.backend.get_pytest_id())
    base, bracket, params = nodeid.partition("[")
    params = params[:-1] if params.endswith("]") else params
    for spelled in (f"{host_id}-", f"-{host_id}", host_id):
        if spelled in params:
            params = params.replace(spelled, "", 1)
            break
    return f"{base}[{params}]" if bracket and params else base


class ResultsFile:
    """Writes each test's outcome (pass, fail, error, skip) with its node and message, at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tests: dict[str, dict[str, Any]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        outcome = _outcome(report)
        if outcome is None:
            return
        entry = self.tests.setdefault(report.nodeid, {"nodeid": report.nodeid, "outcome": "pass"})
        properties = dict(report.user_properties)
        for key, name in ((NODE_PROPERTY, "node"), (TEST_PROPERTY, "name")):
            if key in properties:
                entry[name] = properties[key]
        if _RANK[outcome] > _RANK[entry["outcome"]]:
            entry["outcome"] = outcome
            entry["message"] = _message(report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        data = {"tests": list(self.tests.values())}
        self.path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


_RANK = {"pass": 0, "skip": 1, "fail": 2, "error": 3}


def _outcome(report: pytest.TestReport) -> str | None:
    if report.skipped:
        return "skip"
    if report.failed:
        return "fail" if report.when == "call" else "error"
    return "pass" if report.when == "call" else None


def _message(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr or "")
    return text[:1000]
