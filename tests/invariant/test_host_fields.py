"""The invariant, host half: every NIC setting role roce_host owns (fabcheck.checks.host.owned.
HOST_OWNED_FIELDS), drifted alone on one NIC of an in-process mock host, gives both signals. The roce_nic
module's check mode (what `site.yml --check --diff` shows) plans and diffs that setting alone, on that
NIC, and changes nothing on the host; and the gate's host checks (the collection's sections read with
fabcheck's parsers, judged by the declared checks) fail exactly the check that owns it on exactly that
NIC or its port, and nothing else. And the reverse: every host check that judges a NIC value either
judges an owned setting or is declared with who owns that value (FOREIGN_NIC_VALUES).

The mock host is the lab's (fabcheck_lab.mockhost, rail8 profile) on tmp folders, no namespaces and no
root: its tools run in-process on the node's state and /sys/class tree, the module's sysfs paths point
at that tree, and the converged state is the module's own apply (not check mode) of the desired record.
"""

from __future__ import annotations

import contextlib
import io
import shlex
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fabcheck.checks import host as checks
from fabcheck.checks.host.owned import (
    FOREIGN_NIC_VALUES,
    HOST_OWNED_FIELDS,
    NOT_SETTINGS,
    HostOwnedField,
    host_owned_fields_markdown,
)
from fabcheck.checks.model import Status
from fabcheck.collect import host as collect
from fabcheck.collect.host import HostCollection
from fabcheck.collect.script import Section
from fabcheck.desired.nic import PERSIST_PATHS, DesiredHost, DesiredNic, desired_host
from fabcheck.gate import host_stage
from fabcheck.intent.model import Dcqcn, FabricIntent
from fabcheck.parsers.nic_persist import CONFIG_FORMAT
from fabcheck_lab.mockhost import MockNodePaths, prepare_node
from fabcheck_lab.mockhost import layout as mock_layout
from fabcheck_lab.mockhost.tools import dispatch
from fabcheck_lab.mockhost.tools.common import Delegate, Node, ToolError
from tests.roles.roce_host_code import apply_code

HOST = "gpu01"
RAILS = {0: "mlx5_0", 1: "mlx5_1"}
DRIFTED, DRIFTED_NETDEV = "mlx5_1", "ens2np0"  # the second rail NIC: a drift on it must not touch mlx5_0
# Every optional setting managed, so each owned field has a value to drift away from.
# The mock NIC's part and firmware as the lab pins them (its factory state holds these parameters), so
# host.nic_firmware and host.nic_fw_config are judged on the converged host, not skipped.
FIRMWARE_PIN = {
    "psid": "MT_0000000838",
    "version": "28.39.1002",
    "config": {"LINK_TYPE_P1": "ETH", "ATS_ENABLED": False, "CNP_DSCP_P1": 48, "CNP_802P_PRIO_P1": 6},
}
INTENT = FabricIntent(
    rails=RAILS,
    dcqcn=Dcqcn(min_time_between_cnps=4, rp_params={"rpg_gd": 11, "rpg_min_rate": 10}),
    nic_firmware=[FIRMWARE_PIN],
)
SYSFS_PREFIX = "/sys/class/"


class MockHost:
    """One mock node on tmp folders; its tools are called in-process, as argv, with their exit code,
    stdout and stderr, the way the module's runner and the collection script see them."""

    def __init__(self, root: Path) -> None:
        self.paths = MockNodePaths.under(root)
        prepare_node(self.paths, name=HOST, profile="rail8", index=0, address="127.0.0.1", peers={})
        self.node_root = self.paths.sys_class

    def node(self) -> Node:
        return Node(self.paths.state, self.paths.sys_class, self.paths.etc)

    def run(
        self, argv: list[str], tools: dict[str, Callable[[Node, list[str]], int]] | None = None
    ) -> tuple[int, str, str]:
        tools = dispatch.state_tools() if tools is None else tools
        if argv[0] not in tools:
            return 127, "", f"{argv[0]}: not found\n"
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                rc = tools[argv[0]](self.node(), list(argv[1:]))
            except ToolError as exc:
                (stdout if exc.stdout else stderr).write(exc.message)
                rc = exc.code
        return rc, stdout.getvalue(), stderr.getvalue()

    def sysfs(self, path: str) -> Path:
        """The node's file for a /sys/class path."""
        assert path.startswith(SYSFS_PREFIX), path
        return self.paths.sys_class / path.removeprefix(SYSFS_PREFIX)

    def tree(self) -> dict[str, bytes]:
        """Every file of the node's state and /sys/class tree (check mode must leave them as they were)."""
        files = {}
        for folder in (self.paths.state, self.paths.sys_class):
            for path in sorted(folder.rglob("*")):
                if path.is_file() and not path.is_symlink():
                    files[str(path)] = path.read_bytes()
        return files


@pytest.fixture(scope="module")
def roce_nic() -> ModuleType:
    return apply_code()


def module_params(desired: DesiredHost) -> dict[str, Any]:
    return desired.roce_nic_args() | {"rollback_on_failure": True}


def converge(code: ModuleType, mock: MockHost, desired: DesiredHost, check_mode: bool) -> dict:
    """What the roce_nic module does on the mock host (its sysfs paths pointed at the node's tree)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(code, "SYS_NET", str(mock.paths.sys_class / "net"))
        patch.setattr(code, "SYS_IB", str(mock.paths.sys_class / "infiniband"))
        return code.converge(mock.run, module_params(desired), check_mode)


# ---- the collection, as the script would print it on this host ------------------------------------


def _section(mock: MockHost, argv: list[str]) -> Section:
    if argv[:2] == ["command", "-v"]:
        return Section(0, f"/usr/bin/{argv[2]}\n")
    if argv[0] == "lspci":  # a process tool of the node (it prints capabilities to root only)
        return Section(*mock.run(argv, dispatch.simple_tools()))
    if argv == ["cat", "/proc/cmdline"]:  # nodeinit binds the node's file over /proc/cmdline
        return Section(0, (mock.paths.state / mock_layout.CMDLINE_FILE).read_text())
    if argv[:3] == ["grep", "-H", ""] and argv[3].startswith(collect.PCI_DEVICES + "/*/"):
        return _pci_grep(mock, argv[3:])
    if argv[0] == "cat":
        path = argv[1]
        if path.startswith(SYSFS_PREFIX):
            try:
                return Section(0, mock.sysfs(path).read_text())
            except FileNotFoundError:
                return Section(1, "", f"cat: {path}: No such file or directory\n")
    if argv[:2] == ["systemctl", "is-active"]:
        try:
            return Section(*mock.run(argv))
        except Delegate:  # a unit the node does not define (no IMEX here): systemctl's answer for it
            return Section(3, "inactive\n")
    if argv[:4] == ["grep", "-r", "-H", ""]:
        folder = mock.sysfs(argv[4])
        lines = [
            f"{SYSFS_PREFIX}{path.relative_to(mock.paths.sys_class)}:{line}\n"
            for path in sorted(folder.rglob("*"))
            if path.is_file()
            for line in path.read_text().splitlines()
        ]
        return Section(0, "".join(lines))
    return Section(*mock.run(argv))


def _pci_grep(mock: MockHost, patterns: list[str]) -> Section:
    """`grep -H "" /sys/bus/pci/devices/*/FILE...` as the script's glob expands it on the node, whose
    /sys/bus/pci/devices is the state folder nodeinit binds there."""
    folder = mock.paths.state / mock_layout.PCI_DEVICES_DIR
    lines = [
        f"{collect.PCI_DEVICES}/{path.parent.name}/{path.name}:{line}\n"
        for pattern in patterns
        for path in sorted(folder.glob(pattern.removeprefix(collect.PCI_DEVICES + "/")))
        for line in path.read_text().splitlines()
    ]
    return Section(0, "".join(lines))


def persisted(desired: DesiredHost) -> dict[str, Section]:
    """The boot files role roce_host leaves (a host file, no NIC setting: not drifted here)."""
    import json

    settings = checks.boot_settings(desired)
    boot_file = json.dumps({"format": CONFIG_FORMAT, "settings": settings}, indent=2, sort_keys=True)
    listing = "".join(PERSIST_PATHS[key] + "\n" for key in collect.PERSIST_FILE_ORDER)
    return {
        collect.PERSIST_CONFIG: Section(0, boot_file + "\n"),
        collect.PERSIST_UNIT_STATE: Section(0, "enabled\n"),
        collect.PERSIST_FILES: Section(0, listing),
    }


def collected(mock: MockHost, desired: DesiredHost) -> HostCollection:
    """Every probe's section for every port and netdev `rdma link` shows on the mock host."""
    priority = INTENT.lossless.priority
    sections: dict[str, Section] = persisted(desired)
    links = _section(mock, ["rdma", "link"])
    sections[collect.RDMA_LINK] = links
    words = [line.split() for line in links.stdout.splitlines()]
    ports = [w[1] for w in words]
    netdevs = [w[w.index("netdev") + 1] for w in words if "netdev" in w]
    subjects = {"host": [""], "port": ports, "netdev": netdevs}
    # The counter window as the script reports it once waited (a counter probe is read before and after).
    sections[collect.COUNTER_WINDOW] = Section(0, "1\n")
    for probe in collect.HOST_PROBES:
        if probe.name in sections:
            continue
        for subject in subjects[probe.scope]:
            for first in (True, False) if probe.counter else (False,):
                name = probe.section(subject, first=first)
                argv = shlex.split(collect.section_command(name, priority))
                sections[name] = _section(mock, argv)
    return HostCollection(HOST, sections, complete=True, priority=priority)


# This intent asks nothing of NVLink (fabric_intent.nvlink.gpus null): the NVLink checks are named skips
# here, judged on their own in tests/checks/host/test_host_nvlink.py.
NOT_ASKED = frozenset({checks.NVLINK, checks.NVLINK_FABRIC, checks.IMEX, checks.FABRIC_MANAGER})


def not_passing(mock: MockHost, desired: DesiredHost) -> set[tuple[str, str, str]]:
    result = host_stage.judge(collected(mock, desired), INTENT, desired)
    skipped = {f for f in result.findings if f.check in NOT_ASKED and f.status is Status.SKIP and f.actual}
    asked = [f for f in result.findings if f not in skipped]
    return {(f.check, f.subject, f.status.value) for f in asked if f.status is not Status.PASS}


# ---- the converged host and one drift per owned field ----------------------------------------------


@pytest.fixture
def host(roce_nic: ModuleType, tmp_path: Path) -> tuple[MockHost, DesiredHost]:
    mock = MockHost(tmp_path / HOST)
    desired = desired_host(INTENT, HOST)
    applied = converge(roce_nic, mock, desired, check_mode=False)
    assert "failed" not in applied and applied["changed"], applied
    assert mock.run(["modprobe", "nvidia_peermem"])[0] == 0  # role gpu_rdma's part: not a NIC setting
    return mock, desired


def _mlnx_qos(*flags: str) -> Callable[[MockHost], None]:
    def drift(mock: MockHost) -> None:
        assert mock.run(["mlnx_qos", "-i", DRIFTED_NETDEV, *flags])[0] == 0

    return drift


def _echo(value: str, rel: str) -> Callable[[MockHost], None]:
    def drift(mock: MockHost) -> None:
        path = mock.sysfs(f"/sys/class/{rel}")
        assert path.is_file(), path
        path.write_text(value + "\n")

    return drift


def _tool(*argv: str) -> Callable[[MockHost], None]:
    def drift(mock: MockHost) -> None:
        rc, out, err = mock.run(list(argv))
        assert rc == 0, (argv, out, err)

    return drift


ECN = f"net/{DRIFTED_NETDEV}/ecn"
DRIFTS: dict[tuple[str, str], Callable[[MockHost], None]] = {
    ("trust", "trust"): _mlnx_qos("--trust", "pcp"),
    ("pfc_priorities", "pfc"): _mlnx_qos("--pfc", "0,0,0,0,1,0,0,0"),
    ("dscp_to_priority_pairs", "dscp2prio"): _mlnx_qos("--dscp2prio", "set,26,0"),
    ("np_enable", "roce_np/enable/<ecn_priority>"): _echo("0", f"{ECN}/roce_np/enable/3"),
    ("rp_enable", "roce_rp/enable/<ecn_priority>"): _echo("0", f"{ECN}/roce_rp/enable/3"),
    ("cnp_dscp", "roce_np/cnp_dscp"): _echo("40", f"{ECN}/roce_np/cnp_dscp"),
    ("cnp_priority", "roce_np/cnp_802p_prio"): _echo("2", f"{ECN}/roce_np/cnp_802p_prio"),
    ("min_time_between_cnps", "roce_np/min_time_between_cnps"): _echo(
        "0", f"{ECN}/roce_np/min_time_between_cnps"
    ),
    ("rp_param_pairs", "roce_rp/<param>"): _echo("7", f"{ECN}/roce_rp/rpg_gd"),
    ("roce_tos", "traffic_class/<port>"): _echo("0", f"infiniband/{DRIFTED}/tc/1/traffic_class"),
    ("roce_tos", "rdma_cm_tos/<port>"): _tool("cma_roce_tos", "-d", DRIFTED, "-p", "1", "-t", "0"),
    ("netdev_mtu", "mtu"): _tool("ip", "link", "set", "dev", DRIFTED_NETDEV, "mtu", "1500"),
    ("pfc_storm_prevention_ms", "pfc_storm_prevention"): _tool(
        "ethtool", "--set-tunable", DRIFTED_NETDEV, "pfc-prevention-tout", "8000"
    ),
}


def _key(owned: HostOwnedField) -> tuple[str, str]:
    return owned.field, owned.setting


def _matches(setting: str, key: str) -> bool:
    """A module key (`roce_np/enable/3`, `traffic_class/1`) is the declared setting with its <...>."""
    declared, shown = setting.split("/"), key.split("/")
    return len(declared) == len(shown) and all(
        d.startswith("<") or d == s for d, s in zip(declared, shown, strict=True)
    )


IDS = [f"{owned.field}:{owned.setting}" for owned in HOST_OWNED_FIELDS]


def test_every_owned_field_has_a_drift_and_every_drift_a_field() -> None:
    assert set(DRIFTS) == {_key(owned) for owned in HOST_OWNED_FIELDS}
    assert len(set(DRIFTS)) == len(HOST_OWNED_FIELDS)  # one declaration per setting


def test_every_desired_nic_field_is_owned_foreign_or_no_setting() -> None:
    """Each field of the desired NIC record is declared exactly once: owned (a module setting), judged
    though no role writes it (its owner said), or no setting of its own (why)."""
    from dataclasses import fields

    owned = {owned.field for owned in HOST_OWNED_FIELDS}
    foreign = {f.field for f in FOREIGN_NIC_VALUES if f.field}
    assert (
        owned & foreign == set()
        and owned & set(NOT_SETTINGS) == set()
        and foreign & set(NOT_SETTINGS) == set()
    )
    assert owned | foreign | set(NOT_SETTINGS) == {field.name for field in fields(DesiredNic)}


def test_every_host_check_of_a_nic_value_judges_an_owned_setting_or_names_its_owner() -> None:
    """The reverse: a per-NIC / per-port host check that judges a value either judges a setting the
    roles own (and declares role roce_host) or is declared with the value's owner."""
    by_id = {check.id: check for check in checks.HOST_CHECK_DECLS}
    owning = {name for owned in HOST_OWNED_FIELDS for name in (owned.check, *owned.also)}
    foreign = {f.check: f for f in FOREIGN_NIC_VALUES}
    presence = {checks.RDMA_DEVICE, checks.PORT_STATE}  # judge that a NIC is there and up, not a value
    judging = {check.id for check in checks.HOST_CHECK_DECLS if check.scope in ("nic", "port")} - presence
    for check_id in judging:
        assert (check_id in owning) or (check_id in foreign), f"{check_id} judges a NIC value nobody owns"
        if check_id in foreign:
            assert foreign[check_id].owner, check_id
        if check_id in owning and check_id not in foreign:
            assert by_id[check_id].role == "roce_host", check_id
    for owned in HOST_OWNED_FIELDS:
        assert by_id[owned.check].role == "roce_host", owned
    assert set(foreign) <= judging


def test_the_converged_mock_host_passes_every_check_and_has_nothing_to_write(
    roce_nic: ModuleType, host: tuple[MockHost, DesiredHost]
) -> None:
    mock, desired = host
    assert not_passing(mock, desired) == set()
    again = converge(roce_nic, mock, desired, check_mode=True)
    assert again["changed"] is False and again["diff"] == [], again


@pytest.mark.parametrize("owned", HOST_OWNED_FIELDS, ids=IDS)
def test_one_drifted_setting_shows_in_check_mode_alone_and_check_mode_changes_nothing(
    roce_nic: ModuleType, host: tuple[MockHost, DesiredHost], owned: HostOwnedField
) -> None:
    mock, desired = host
    DRIFTS[_key(owned)](mock)
    before = mock.tree()
    result = converge(roce_nic, mock, desired, check_mode=True)
    assert mock.tree() == before, "check mode changed the host"
    assert result["writes"] == [] and result["changed"] is True, result
    changed = {dev: nic["changed"] for dev, nic in result["nics"].items() if nic["changed"]}
    assert set(changed) == {DRIFTED}, changed
    (own, *others) = changed[DRIFTED]
    assert _matches(owned.setting, own) and others == list(owned.rewrites), changed
    tag = next(check.tag for check in checks.HOST_CHECK_DECLS if check.id == owned.check)
    assert roce_nic.concern_of(own) == tag, "the module's concern of the setting is its check's tag"
    (diff,) = result["diff"]
    assert DRIFTED in diff["before_header"] and diff["before"] != diff["after"], diff


@pytest.mark.parametrize("owned", HOST_OWNED_FIELDS, ids=IDS)
def test_one_drifted_setting_fails_exactly_its_check_on_exactly_that_nic(
    host: tuple[MockHost, DesiredHost], owned: HostOwnedField
) -> None:
    mock, desired = host
    DRIFTS[_key(owned)](mock)
    shown = not_passing(mock, desired)
    # A setting the drift hides (the DSCP map under trust pcp) cannot be judged there: a skip saying
    # why on that NIC, never a pass and never a failure of its own.
    hidden = {o.check for o in HOST_OWNED_FIELDS if o.setting in owned.rewrites}
    skips = {(check, subject) for check, subject, status in shown if status == "skip"}
    assert skips == {(check, DRIFTED) for check in hidden}, shown
    failing = {(check, subject, status) for check, subject, status in shown if status != "skip"}
    assert {check for check, _subject, _status in failing} == {owned.check, *owned.also}, failing
    assert all(status == "fail" for _check, _subject, status in failing), failing
    assert {subject for _check, subject, _status in failing} <= {DRIFTED, f"{DRIFTED}/1"}, failing


def test_the_docs_list_every_host_owned_field_with_its_check_and_test() -> None:
    """docs/checks/host.md's table; `scripts/gen_docs` regenerates it."""
    tags = {check.id: check.tag for check in checks.HOST_CHECK_DECLS}
    readme = (Path(__file__).resolve().parents[2] / "docs" / "checks" / "host.md").read_text()
    start = "<!-- host-owned-fields (generated: fabcheck.checks.host.owned.host_owned_fields_markdown) -->\n"
    assert start in readme, "docs/checks/host.md lacks the host owned-field table"
    table = readme.split(start, 1)[1].split("\n<!-- /host-owned-fields -->", 1)[0]
    assert table == host_owned_fields_markdown(tags, "`tests/invariant/test_host_fields.py`")
