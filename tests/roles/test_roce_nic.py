"""The roce_nic module: its reader, its plan, and what it does when a write fails.

Its own mlnx_qos reader agrees with fabcheck's parser on every recorded sample (the module runs on
targets, so it cannot import fabcheck), its plan writes exactly what differs from the intent, and on a
fake host whose Nth write fails (every N) it reports the writes made and puts that NIC back.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest
from conftest import CORPUS
from roce_host_code import apply_code

from fabcheck.parsers.mlnx_qos import parse_mlnx_qos

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def roce_nic() -> ModuleType:
    """The module's apply code (module_utils/roce_nic_apply.py, which the module imports)."""
    return apply_code()


def run(code: ModuleType, host: FakeHost) -> dict:
    """What the module does for its NIC concerns: converge over the host's commands and parameters."""
    return code.converge(host.run_command, host.params, host.check_mode)


def params(**overrides: object) -> dict:
    # The desired record as fabcheck.desired derives it for the default intent (the applier derives
    # nothing: the bitmap and the map are given).
    base = {
        "devices": ["mlx5_0"],
        "trust": "dscp",
        "pfc_bitmap": [0, 0, 0, 1, 0, 0, 0, 0],
        "dscp_to_priority": {"26": 3, "48": 6},
        "ecn_priority": 3,
        "cnp_dscp": 48,
        "cnp_priority": 6,
        "np_enable": True,
        "rp_enable": True,
        "min_time_between_cnps": None,
        "rp_params": {},
        "roce_tos": 106,
        "mtu": 9000,
        "pfc_storm_prevention_ms": 100,
        "rollback_on_failure": True,
    }
    return {**base, **overrides}


SAMPLES = sorted((CORPUS / "nic-state").glob("mlnx_qos-*.txt"))
# Samples the module's reader is meant to refuse (an excerpt, not whole `mlnx_qos -i IF` output), each
# with the reason. Any other sample that it cannot read is a failure, never a skip.
EXPECTED_UNREADABLE: dict[str, str] = {}
# Every sample compares trust and PFC; these many must also compare a DSCP map (all four recorded do).
MIN_COMPARED = 4


def compare_with_reference(roce_nic: ModuleType, sample: Path) -> set[str]:
    """Assert the module's reading of one sample equals fabcheck's; return the fields compared."""
    text = sample.read_text()
    reference = parse_mlnx_qos(text, sample.name)
    trust, pfc, mapping = roce_nic.parse_mlnx_qos(text)
    assert trust == reference.trust
    assert pfc == list(reference.pfc_enabled)
    compared = {"trust", "pfc"}
    if reference.dscp2prio:
        assert mapping == dict(reference.dscp2prio)
        compared.add("dscp2prio")
    else:
        assert mapping is None or mapping == {}, "the module read a DSCP map fabcheck's parser did not"
    return compared


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_module_reader_agrees_with_the_fabcheck_parser(roce_nic: ModuleType, sample: Path) -> None:
    if sample.name in EXPECTED_UNREADABLE:
        with pytest.raises(ValueError):
            roce_nic.parse_mlnx_qos(sample.read_text())
        return
    compare_with_reference(roce_nic, sample)


def test_enough_samples_were_actually_compared(roce_nic: ModuleType) -> None:
    assert set(EXPECTED_UNREADABLE) <= {s.name for s in SAMPLES}, "an expected-unreadable sample is gone"
    readable = [s for s in SAMPLES if s.name not in EXPECTED_UNREADABLE]
    with_map = [s for s in readable if "dscp2prio" in compare_with_reference(roce_nic, s)]
    assert len(readable) >= MIN_COMPARED, f"only {len(readable)} mlnx_qos samples compared"
    assert len(with_map) >= MIN_COMPARED, f"only {len(with_map)} samples compared a DSCP map"


def test_a_reader_that_always_refuses_cannot_pass(
    roce_nic: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(text: str) -> None:
        raise ValueError("no 'Priority trust state' or PFC 'enabled' line")

    monkeypatch.setattr(roce_nic, "parse_mlnx_qos", refuse)
    for sample in SAMPLES:
        with pytest.raises(ValueError):
            compare_with_reference(roce_nic, sample)


def nic_at(roce_nic: ModuleType, **state: str) -> object:
    current = {
        "trust": "dscp",
        "pfc": "0,0,0,1,0,0,0,0",
        "roce_np/enable/3": "1",
        "roce_rp/enable/3": "1",
        "roce_np/cnp_dscp": "48",
        "roce_np/cnp_802p_prio": "6",
        "mtu": "9000",
        "traffic_class/1": "106",
        "rdma_cm_tos/1": "106",
        "pfc_storm_prevention": "100",
    }
    current.update(state)
    return roce_nic.Nic(dev="mlx5_0", netdev="ens1np0", ports=["1"], state=current, dscp2prio={26: 3, 48: 6})


def test_a_nic_at_the_intent_needs_no_change(roce_nic: ModuleType) -> None:
    assert roce_nic.plan(nic_at(roce_nic), params()) == []


def test_only_what_differs_is_written_with_argv_commands(roce_nic: ModuleType) -> None:
    nic = nic_at(roce_nic, trust="pcp", pfc="0,0,0,0,0,0,0,0", mtu="1500", **{"traffic_class/1": "0"})
    nic.state["pfc_storm_prevention"] = "8000"
    nic.dscp2prio = None  # hidden while trust is pcp
    changes = {c.key: c for c in roce_nic.plan(nic, params())}
    assert set(changes) == {"trust", "dscp2prio", "pfc", "mtu", "traffic_class/1", "pfc_storm_prevention"}
    storm = changes["pfc_storm_prevention"]
    assert storm.argv == ["ethtool", "--set-tunable", "ens1np0", "pfc-prevention-tout", "100"]
    assert storm.undo_argv == ["ethtool", "--set-tunable", "ens1np0", "pfc-prevention-tout", "8000"]
    assert roce_nic.concern_of("pfc_storm_prevention") == "pfc"
    assert changes["trust"].argv == ["mlnx_qos", "-i", "ens1np0", "--trust", "dscp"]
    assert changes["pfc"].argv == ["mlnx_qos", "-i", "ens1np0", "--pfc", "0,0,0,1,0,0,0,0"]
    assert changes["dscp2prio"].argv[-4:] == ["--dscp2prio", "set,26,3", "--dscp2prio", "set,48,6"]
    assert changes["traffic_class/1"].sysfs == ("/sys/class/infiniband/mlx5_0/tc/1/traffic_class", "106")
    assert (changes["mtu"].before, changes["mtu"].after) == ("1500", "9000")


def test_pfc_only_turns_nic_congestion_control_off(roce_nic: ModuleType) -> None:
    changes = {c.key: c for c in roce_nic.plan(nic_at(roce_nic), params(np_enable=False, rp_enable=False))}
    assert set(changes) == {"roce_np/enable/3", "roce_rp/enable/3"}
    assert changes["roce_np/enable/3"].after == "0"


@pytest.mark.parametrize("name", ["../mlx5_0", "..", "mlx5_0; reboot", "", "a b"])
def test_unsafe_names_are_refused(roce_nic: ModuleType, name: str) -> None:
    with pytest.raises(roce_nic.NicError):
        roce_nic.check_name("RDMA device", name)


def test_out_of_range_values_are_refused(roce_nic: ModuleType) -> None:
    with pytest.raises(roce_nic.NicError, match=re.escape("ecn_priority=9: out of range, allowed 0..7")):
        roce_nic.check_params(params(ecn_priority=9))
    with pytest.raises(roce_nic.NicError, match=re.escape("rp_params.bogus: unknown")):
        roce_nic.check_params(params(rp_params={"bogus": 1}))
    assert roce_nic.traffic_class_value("Global tclass=106") == "106"


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ({"pfc_bitmap": [0, 0, 0, 1]}, "pfc_bitmap=[0, 0, 0, 1]: must be 8 flags, each 0 or 1"),
        ({"pfc_bitmap": [0, 0, 0, 2, 0, 0, 0, 0]}, "pfc_bitmap="),
        ({"dscp_to_priority": {"x": 3}}, "dscp_to_priority.x: the key must be a DSCP number 0..63"),
        ({"dscp_to_priority": {"64": 3}}, "dscp_to_priority key=64: out of range, allowed 0..63"),
        ({"dscp_to_priority": {"26": 8}}, "dscp_to_priority.26=8: out of range, allowed 0..7"),
        ({"pfc_storm_prevention_ms": 9000}, "pfc_storm_prevention_ms=9000: out of range, allowed 0..8000"),
        ({"trust": "vlan"}, "trust='vlan': allowed dscp, pcp"),
    ],
)
def test_a_bad_settings_value_is_refused_naming_its_key(
    roce_nic: ModuleType, override: dict, named: str
) -> None:
    with pytest.raises(roce_nic.NicError, match=re.escape(named)):
        roce_nic.check_params(params(**override))


def test_an_unmanaged_storm_timeout_is_neither_read_nor_written(roce_nic: ModuleType) -> None:
    nic = nic_at(roce_nic)
    del nic.state["pfc_storm_prevention"]
    assert roce_nic.plan(nic, params(pfc_storm_prevention_ms=None)) == []


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("pfc-prevention-tout: 100\n", "100"),
        ("pfc-prevention-tout: 0\n", "0"),
        ("pfc-prevention-tout: 8000", "8000"),
    ],
)
def test_the_module_reads_the_tunable_line_as_fabcheck_does(
    roce_nic: ModuleType, text: str, value: str
) -> None:
    from fabcheck.parsers.ethtool_tunable import parse_pfc_prevention_tout

    assert roce_nic.parse_tunable(text) == value == str(parse_pfc_prevention_tout(text, "t"))


@pytest.mark.parametrize("text", ["", "rx-copybreak: 256\n", "pfc-prevention-tout: Unknown format\n"])
def test_the_module_refuses_what_is_not_the_tunable_line(roce_nic: ModuleType, text: str) -> None:
    with pytest.raises(ValueError):
        roce_nic.parse_tunable(text)


def test_module_knows_the_same_dcqcn_parameters_as_the_intent(roce_nic: ModuleType) -> None:
    # The module runs on targets without fabcheck, so it carries its own copy of the list.
    from fabcheck.intent.model import DCQCN_RP_PARAMS

    assert tuple(roce_nic.RP_PARAMS) == DCQCN_RP_PARAMS


# ---- a failed write: a fake host whose Nth write fails -------------------------------------------

NICS = {"mlx5_0": "ens1np0", "mlx5_1": "ens2np0"}
FAILURE_PARAMS = {"devices": sorted(NICS), "min_time_between_cnps": 4, "rp_params": {"rpg_ai_rate": 10}}
# Factory-like NIC state that differs from the intent in every setting the module manages: trust pcp
# (so the DSCP map is hidden until trust is dscp), DSCPs 26 and 48 on the wrong priorities, PFC off.
SYSFS_BEFORE = {
    "ecn/roce_np/enable/3": "0",
    "ecn/roce_rp/enable/3": "1",
    "ecn/roce_np/cnp_dscp": "40",
    "ecn/roce_np/cnp_802p_prio": "2",
    "ecn/roce_np/min_time_between_cnps": "0",
    "ecn/roce_rp/rpg_ai_rate": "5",
    "mtu": "1500",
}
STORM_BEFORE = 8000  # mlx5's factory timeout (ms)
WRITES_PER_NIC = 12  # trust, dscp2prio, pfc, 5 ecn attributes, mtu, traffic_class, cma_roce_tos, storm


class WriteRefused(Exception):
    pass


class FakeHost:
    """Stands in for AnsibleModule and the host: mlnx_qos, ip link, cma_roce_tos, ethtool's PFC storm
    tunable and a sysfs tree.

    Every write (a setting command or a sysfs write) is numbered from 1; those in fail_at fail. With
    partial, a failing mlnx_qos call with several --dscp2prio sets applies the first one, then fails,
    as the real tool does (one netlink request per set).
    """

    def __init__(self, root: Path, roce_nic: ModuleType, **overrides: object) -> None:
        self.root, self.roce_nic = root, roce_nic
        self.params = params(**{**FAILURE_PARAMS, **overrides})
        self.check_mode = False
        self.fail_at: set[int] = set()
        self.partial = False
        self.refuse_next_read = False  # the next plain `mlnx_qos -i IF` after a write fails once
        self.writes: list[str] = []
        self.qos: dict[str, dict] = {}
        self.tos: dict[str, int] = {}
        self.storm: dict[str, int] = {}
        for dev, netdev in NICS.items():
            self.storm[netdev] = STORM_BEFORE
            mapping = {dscp: dscp >> 3 for dscp in range(64)} | {26: 0, 48: 5}
            self.qos[netdev] = {"trust": "pcp", "pfc": [0] * 8, "map": mapping}
            self.tos[dev] = 0
            for rel, value in SYSFS_BEFORE.items():
                self.put(root / "net" / netdev / rel, value)
            self.put(root / "infiniband" / dev / "ports" / "1" / "link_layer", "Ethernet")
            self.put(root / "infiniband" / dev / "tc" / "1" / "traffic_class", "Global tclass=0")
            (root / "infiniband" / dev / "device" / "net" / netdev).mkdir(parents=True)

    @staticmethod
    def put(path: Path, value: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")

    def attempt(self, what: str) -> None:
        self.writes.append(what)
        if len(self.writes) in self.fail_at:
            raise WriteRefused(what)

    # -- the AnsibleModule surface the module uses
    def run_command(self, argv: list[str]) -> tuple[int, str, str]:
        try:
            if argv[0] == "mlnx_qos":
                if self.refuse_next_read and self.writes and not argv[3:]:
                    self.refuse_next_read = False
                    return 1, "", "Netlink error: Device or resource busy\n"
                return 0, self.mlnx_qos(argv[2], argv[3:]), ""
            if argv[:3] == ["ip", "link", "set"]:
                self.attempt(" ".join(argv))
                (self.root / "net" / argv[4] / "mtu").write_text(argv[6] + "\n")
                return 0, "", ""
            if argv[0] == "cma_roce_tos":
                if "-t" in argv:
                    self.attempt(" ".join(argv))
                    self.tos[argv[2]] = int(argv[argv.index("-t") + 1])
                return 0, f"{self.tos[argv[2]]}\n", ""
            if argv[0] == "ethtool" and argv[3:4] == ["pfc-prevention-tout"]:
                if argv[1] == "--set-tunable":
                    self.attempt(" ".join(argv))
                    self.storm[argv[2]] = int(argv[4])
                    return 0, "", ""
                return 0, f"pfc-prevention-tout: {self.storm[argv[2]]}\n", ""
        except WriteRefused:
            if argv[0] == "ethtool":
                return 255, "", "pfc-prevention-tout: Operation not supported\n"
            return 1, "", "Operation not permitted\n"
        return 127, "", f"{argv[0]}: not found\n"

    def mlnx_qos(self, netdev: str, flags: list[str]) -> str:
        state = self.qos[netdev]
        if flags:
            try:
                self.attempt(f"mlnx_qos -i {netdev} {' '.join(flags)}")
            except WriteRefused:
                sets = [flags[i + 1] for i, flag in enumerate(flags) if flag == "--dscp2prio"]
                if self.partial and len(sets) > 1:
                    self.set_dscp(state, sets[0])
                raise
            for flag, value in zip(flags[::2], flags[1::2], strict=True):
                if flag == "--trust":
                    state["trust"] = value
                elif flag == "--pfc":
                    state["pfc"] = [int(v) for v in value.split(",")]
                elif flag == "--dscp2prio":
                    self.set_dscp(state, value)
        lines = [f"Priority trust state: {state['trust']}"]
        if state["trust"] == "dscp":
            lines.append("dscp2prio mapping:")
            for prio in range(8):
                dscps = "".join(f"{d:02d}," for d, p in sorted(state["map"].items()) if p == prio)
                lines.append(f"\tprio:{prio} dscp:{dscps}")
        lines += ["PFC configuration:", "\tpriority    0   1   2   3   4   5   6   7"]
        lines.append("\tenabled     " + "".join(f"{v:<4d}" for v in state["pfc"]))
        return "\n".join(lines) + "\n"

    @staticmethod
    def set_dscp(state: dict, action: str) -> None:
        _set, dscp, prio = action.split(",")
        state["map"][int(dscp)] = int(prio)
        state["trust"] = "dscp"  # mlx5: the first DSCP application entry turns trust to dscp

    def write_sys(self, path: str, value: str) -> None:
        try:
            self.attempt(f"echo {value} > {path}")
        except WriteRefused:
            raise self.roce_nic.NicError(f"`echo {value} > {path}` failed: Read-only file system") from None
        Path(path).write_text(value + "\n")

    # -- what the test compares
    def observe(self, dev: str) -> dict[str, object]:
        """Every setting of one NIC, keyed as the module keys them."""
        netdev = NICS[dev]
        qos = self.qos[netdev]
        values: dict[str, object] = {
            "trust": qos["trust"],
            "pfc": tuple(qos["pfc"]),
            "dscp2prio": tuple(sorted(qos["map"].items())),
            "rdma_cm_tos/1": self.tos[dev],
            "pfc_storm_prevention": self.storm[netdev],
        }
        for rel in SYSFS_BEFORE:
            values[rel.removeprefix("ecn/")] = (self.root / "net" / netdev / rel).read_text().strip()
        tc = (self.root / "infiniband" / dev / "tc" / "1" / "traffic_class").read_text()
        values["traffic_class/1"] = int(tc.removeprefix("Global tclass=").strip())
        return values


@pytest.fixture
def host(roce_nic: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeHost:
    fake = FakeHost(tmp_path, roce_nic)
    monkeypatch.setattr(roce_nic, "SYS_NET", str(tmp_path / "net"))
    monkeypatch.setattr(roce_nic, "SYS_IB", str(tmp_path / "infiniband"))
    monkeypatch.setattr(roce_nic, "write_sys", fake.write_sys)
    return fake


def configured(roce_nic: ModuleType, root: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, dict]:
    """Every NIC's settings after a run with no failure, on a fresh fake host."""
    fake = FakeHost(root, roce_nic)
    with monkeypatch.context() as patch:
        patch.setattr(roce_nic, "SYS_NET", str(root / "net"))
        patch.setattr(roce_nic, "SYS_IB", str(root / "infiniband"))
        patch.setattr(roce_nic, "write_sys", fake.write_sys)
        result = run(roce_nic, fake)
    assert "failed" not in result and len(fake.writes) == WRITES_PER_NIC * len(NICS), fake.writes
    return {dev: fake.observe(dev) for dev in NICS}


def test_a_clean_run_writes_each_difference_once_and_a_rerun_nothing(
    roce_nic: ModuleType, host: FakeHost
) -> None:
    before = {dev: host.observe(dev) for dev in NICS}
    result = run(roce_nic, host)
    assert result["changed"] is True and "failed" not in result
    assert len(host.writes) == len(result["writes"]) == WRITES_PER_NIC * len(NICS)
    for dev in NICS:
        after = host.observe(dev)
        assert {key for key in after if after[key] != before[dev][key]} == set(result["nics"][dev]["changed"])
    assert all(not w["rolled_back"] for w in result["writes"])
    host.writes.clear()
    again = run(roce_nic, host)
    assert again["changed"] is False and host.writes == [] and again["writes"] == []


def test_check_mode_writes_nothing(roce_nic: ModuleType, host: FakeHost) -> None:
    host.check_mode = True
    result = run(roce_nic, host)
    assert result["changed"] is True and host.writes == [] and result["writes"] == []


TOTAL_WRITES = WRITES_PER_NIC * len(NICS)


@pytest.mark.parametrize("n", range(1, TOTAL_WRITES + 1))
def test_nth_write_fails_the_nic_is_put_back_and_the_writes_are_reported(
    roce_nic: ModuleType, host: FakeHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int
) -> None:
    target = configured(roce_nic, tmp_path / "reference", monkeypatch)
    before = {dev: host.observe(dev) for dev in NICS}
    host.fail_at = {n}
    result = run(roce_nic, host)

    failing_index, made_on_it = divmod(n - 1, WRITES_PER_NIC)  # writes on the failing NIC before it
    failing, earlier = sorted(NICS)[failing_index], sorted(NICS)[:failing_index]
    assert result["failed"] is True
    assert result["changed"] is (n > 1)
    assert len(result["writes"]) == n - 1
    assert [w["nic"] for w in result["writes"]] == [d for d in earlier for _ in range(WRITES_PER_NIC)] + [
        failing
    ] * made_on_it
    assert all(w["rolled_back"] is (w["nic"] == failing) for w in result["writes"])
    entry = result["nics"][failing]
    assert entry["rolled_back"] is True and entry["rollback_ok"] is True, entry
    assert entry["rollback"]["undone"] == [c for c in reversed(entry["changed"])]
    assert len(entry["changed"]) == made_on_it
    # The failing NIC reads exactly as before the run; NICs finished before it keep the intent.
    assert host.observe(failing) == before[failing]
    for dev in earlier:
        assert host.observe(dev) == target[dev]
    for dev in sorted(NICS)[failing_index + 1 :]:
        assert host.observe(dev) == before[dev] and dev not in result["nics"]
    msg = result["msg"]
    assert msg.startswith(f"{failing} ({NICS[failing]}): ") and host.writes[n - 1].split(" > ")[0] in msg
    if made_on_it:
        assert f"Writes made on {failing} before it: " in msg
        assert all(f"{key} " in msg for key in entry["changed"])
        assert f"Rolled back ({', '.join(entry['rollback']['undone'])}); rollback succeeded" in msg
    else:
        assert f"Nothing written on {failing}" in msg and "rollback succeeded" in msg
    if earlier:
        assert f"Configured before this NIC and kept: {earlier[0]} (" in msg


@pytest.mark.parametrize("n", range(1, TOTAL_WRITES + 1))
def test_without_rollback_the_writes_made_stay_and_are_reported(
    roce_nic: ModuleType, host: FakeHost, n: int
) -> None:
    host.params["rollback_on_failure"] = False
    failing = sorted(NICS)[(n - 1) // WRITES_PER_NIC]
    before = host.observe(failing)
    host.fail_at = {n}
    result = run(roce_nic, host)
    assert result["failed"] is True and result["changed"] is (n > 1)
    assert len(host.writes) == n, "nothing is written after the failure"
    entry = result["nics"][failing]
    after = host.observe(failing)
    assert {key for key in after if after[key] != before[key]} == set(entry["changed"])
    assert entry["rolled_back"] is False and "rollback" not in entry
    assert not any(w["rolled_back"] for w in result["writes"])
    if entry["changed"]:
        assert "Not rolled back (rollback_on_failure: false)" in result["msg"]


@pytest.mark.parametrize("n", range(2, WRITES_PER_NIC + 1))
def test_a_failed_rollback_is_reported_as_failed(roce_nic: ModuleType, host: FakeHost, n: int) -> None:
    host.fail_at = {n, n + 1}  # the write, then the first write-back (of the newest write before it)
    result = run(roce_nic, host)
    entry = result["nics"]["mlx5_0"]
    newest = entry["changed"][-1]
    assert result["failed"] is True and result["changed"] is True
    assert entry["rolled_back"] is True and entry["rollback_ok"] is False
    assert newest not in entry["rollback"]["undone"]
    assert entry["rollback"]["errors"] and host.writes[n].split(" > ")[0] in entry["rollback"]["errors"][0]
    assert "Rollback FAILED" in result["msg"] and "is not as before the run" in result["msg"]
    assert "rollback succeeded" not in result["msg"]
    written_back = [w["setting"] for w in result["writes"] if w["rolled_back"]]
    assert written_back == [k for k in entry["changed"] if k in entry["rollback"]["undone"]]
    if newest != "dscp2prio":  # a map left behind under trust pcp is hidden, as on the real tool
        assert newest in entry["rollback"]["still_different"]


def test_a_write_that_failed_half_way_is_put_back_too(roce_nic: ModuleType, host: FakeHost) -> None:
    before = host.observe("mlx5_0")
    host.partial = True
    host.fail_at = {2}  # trust, then the DSCP map: 26 set, 48 refused
    result = run(roce_nic, host)
    entry = result["nics"]["mlx5_0"]
    assert entry["failed_write"] == "dscp2prio" and entry["changed"] == ["trust"]
    assert entry["rollback"]["undone"] == ["dscp2prio", "trust"] and entry["rollback_ok"] is True
    assert host.observe("mlx5_0") == before


def test_a_setting_whose_old_value_cannot_be_written_back_fails_the_rollback(
    roce_nic: ModuleType, host: FakeHost
) -> None:
    (host.root / "net" / "ens1np0" / "mtu").write_text("unknown\n")
    host.fail_at = {8}  # the write after the mtu (min_time_between_cnps)
    result = run(roce_nic, host)
    entry = result["nics"]["mlx5_0"]
    assert "mtu" in entry["changed"] and entry["rollback_ok"] is False
    assert "mtu: the previous value 'unknown' cannot be written back" in entry["rollback"]["errors"]
    assert entry["rollback"]["still_different"]["mtu"] == {"before_run": "unknown", "now": "9000"}


def test_a_read_that_fails_between_writes_rolls_back_too(roce_nic: ModuleType, host: FakeHost) -> None:
    before = host.observe("mlx5_0")
    host.refuse_next_read = True  # the DSCP map, hidden under trust pcp, is read again after trust
    result = run(roce_nic, host)
    entry = result["nics"]["mlx5_0"]
    assert result["failed"] is True and result["changed"] is True
    assert entry["failed_write"] is None and entry["changed"] == ["trust"]
    assert entry["rollback"]["undone"] == ["trust"] and entry["rollback_ok"] is True
    assert result["msg"].startswith("mlx5_0: `mlnx_qos -i ens1np0` failed (rc=1): Netlink error")
    assert host.observe("mlx5_0") == before
