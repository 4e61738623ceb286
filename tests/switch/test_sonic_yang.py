"""SONiC's own YANG models (vendor/sonic-yang) judge every SONiC render, through yanglint.

yanglint is a test requirement (scripts/setup installs Debian's libyang-tools): without it these tests
fail with the install hint, they do not skip.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabcheck.cli import main
from fabcheck.cli import render as render_cli
from fabcheck.switch import sonic_yang
from fabcheck.switch.render import RenderedConfig
from fabcheck.switch.sonic_patch import compute_patch
from fabcheck.switch.sonic_yang import SonicYangError, parse_statements, to_yang, validate_config_db
from fabcheck_lab.mockswitch.sonic_db import apply_patch, factory_config_db

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden"
SONIC_PORTS = ["Ethernet0", "Ethernet4", "Ethernet8"]
NON_DEFAULT_INTENT: dict[str, Any] = {
    "lossless": {"dscp": [24], "priority": 4, "pfc": True},
    "cnp": {"dscp": 46, "priority": 5},
    "roce_tos": 98,
    "congestion_control": "pfc_only",
    "ecn": {"min_bytes": 200000, "max_bytes": 2000000, "probability": 50},
    "mtu": {"netdev": 9000, "rdma": 4096, "switch": 9100},
}


def golden(name: str) -> dict[str, Any]:
    return json.loads((GOLDEN / f"sonic-{name}.json").read_text())


@pytest.fixture(autouse=True)
def fresh_caches() -> Iterator[None]:
    """The yanglint version and the schema are cached per process; a test that swaps yanglint must not
    leave its answer to the next."""
    yield
    sonic_yang.yanglint_version.cache_clear()
    sonic_yang.table_schemas.cache_clear()


# -- every render validates ---------------------------------------------------------------------------


@pytest.mark.parametrize("intent", ["default", "non-default"])
def test_the_golden_renders_are_valid_sonic_yang(intent: str) -> None:
    fragment = golden(intent)
    verdict = validate_config_db(fragment, fragment=True)
    assert verdict.valid, verdict.messages
    assert verdict.messages == ()
    assert set(verdict.tables) == set(fragment) and verdict.unchecked == ()
    assert verdict.yanglint.startswith("2.")


def test_a_fragment_passes_only_because_the_switch_owns_lanes_and_speed() -> None:
    """Without fabcheck-fragment.yang (a full CONFIG_DB), the render lacks what the switch sets (the
    stock buffer profiles BUFFER_QUEUE names, PORT lanes): proof that the fragment mode relaxes exactly
    that, and the models are really applied."""
    verdict = validate_config_db(golden("default"), fragment=False)
    assert not verdict.valid  # BUFFER_QUEUE names the switch's stock profiles, absent from a fragment
    assert any('Invalid leafref value "egress_lossless_profile"' in m for m in verdict.messages), (
        verdict.messages
    )
    without_queues = {t: e for t, e in golden("default").items() if t != "BUFFER_QUEUE"}
    verdict = validate_config_db(without_queues, fragment=False)
    assert not verdict.valid
    assert any('Mandatory node "lanes"' in m for m in verdict.messages), verdict.messages


def test_the_factory_config_db_and_it_with_the_render_over_it_are_valid() -> None:
    factory = factory_config_db("leaf01", ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"])
    verdict = validate_config_db(factory, fragment=False)
    assert verdict.valid, verdict.messages
    assert verdict.unchecked == () and "DEVICE_METADATA" in verdict.tables
    pushed = copy.deepcopy(factory)
    for table, entries in golden("non-default").items():
        for key, fields in entries.items():
            pushed.setdefault(table, {}).setdefault(key, {}).update(fields)
    verdict = validate_config_db(pushed, fragment=False)
    assert verdict.valid, verdict.messages


# -- broken fragments are refused with yanglint's message -------------------------------------------------


def test_pfc_enable_9_is_refused_with_yanglints_pattern_message() -> None:
    fragment = golden("default")
    fragment["PORT_QOS_MAP"]["Ethernet4"]["pfc_enable"] = "9"
    verdict = validate_config_db(fragment, fragment=True)
    assert not verdict.valid
    assert verdict.messages[0].startswith("libyang err : Unsatisfied pattern")
    assert '"9" does not conform to "([0-7](,[0-7])*)?"' in verdict.messages[0]
    assert "PORT_QOS_MAP_LIST[ifname='Ethernet4']/pfc_enable" in verdict.messages[0]
    assert "REFUSED" in verdict.summary()


def test_a_queue_naming_a_wred_profile_that_does_not_exist_is_refused() -> None:
    fragment = golden("default")
    fragment["QUEUE"]["Ethernet0|3"]["wred_profile"] = "NO_SUCH_PROFILE"
    verdict = validate_config_db(fragment, fragment=True)
    assert not verdict.valid
    assert 'Invalid leafref value "NO_SUCH_PROFILE"' in verdict.messages[0]
    assert "QUEUE_LIST[ifname='Ethernet0'][qindex='3']/wred_profile" in verdict.messages[0]


@pytest.mark.parametrize(
    ("table", "key", "field", "value", "message"),
    [
        ("PFC_WD", "Ethernet0", "detection_time", "fast", 'Invalid non-number-encoded uint32 value "fast"'),
        (
            "WRED_PROFILE",
            "FABCHECK_ECN_TC3",
            "wred_green_enable",
            "yes",
            'Invalid non-boolean-encoded boolean value "yes"',
        ),
    ],
)
def test_a_value_that_is_not_of_its_type_reaches_yanglint_as_the_string_it_is(
    table: str, key: str, field: str, value: str, message: str
) -> None:
    fragment = golden("default")
    fragment[table][key][field] = value
    verdict = validate_config_db(fragment, fragment=True)
    assert not verdict.valid
    assert message in verdict.messages[0] and f"/{field}" in verdict.messages[0], verdict.messages


def test_an_out_of_range_value_is_refused() -> None:
    fragment = golden("default")
    fragment["PFC_WD"]["Ethernet8"]["detection_time"] = "50"  # sonic-pfcwd: range 100..5000
    verdict = validate_config_db(fragment, fragment=True)
    assert not verdict.valid
    assert "Unsatisfied range" in verdict.messages[0] and "detection_time" in verdict.messages[0]


def test_a_field_or_key_the_model_has_no_place_for_is_refused_by_name() -> None:
    fragment = golden("default")
    fragment["SCHEDULER"]["FABCHECK_TC0"]["colour"] = "blue"
    fragment["BUFFER_PG"]["Ethernet0|3|extra"] = {"profile": "NULL"}
    verdict = validate_config_db(fragment, fragment=True)
    assert not verdict.valid
    assert any("SCHEDULER|FABCHECK_TC0: field 'colour' is not in the model" in m for m in verdict.messages)
    assert any("BUFFER_PG: key 'Ethernet0|3|extra' fits no list" in m for m in verdict.messages)


def test_a_table_without_a_vendored_model() -> None:
    fragment = golden("default") | {"NO_SUCH_TABLE": {"x": {"y": "z"}}}
    verdict = validate_config_db(fragment, fragment=True)
    assert not verdict.valid and verdict.unchecked == ("NO_SUCH_TABLE",)
    # In a whole CONFIG_DB it is listed as unchecked, never passed silently.
    full = factory_config_db("leaf01", ["Ethernet0"]) | {"NO_SUCH_TABLE": {"x": {"y": "z"}}}
    verdict = validate_config_db(full, fragment=False)
    assert verdict.valid and verdict.unchecked == ("NO_SUCH_TABLE",)
    assert "not checked, no vendored model: NO_SUCH_TABLE" in verdict.summary()
    nothing = validate_config_db({"NO_SUCH_TABLE": {"x": {"y": "z"}}}, fragment=False)
    assert not nothing.valid and "nothing was validated" in nothing.messages[-1]


# -- the translation: sonic_yang_ext's rules --------------------------------------------------------------


def test_the_translation_follows_sonic_yang_ext() -> None:
    translation = to_yang(
        {
            "QUEUE": {"Ethernet0|3": {"scheduler": "S", "wred_profile": "W"}},
            "DSCP_TO_TC_MAP": {"M": {"26": "3", "48": "6"}},
            "WRED_PROFILE": {"W": {"green_min_threshold": "150000", "wred_green_enable": "true"}},
            "PFC_WD": {"Ethernet0": {"detection_time": "200"}, "GLOBAL": {"POLL_INTERVAL": "200"}},
            "PORT": {"Ethernet0": {"lanes": "0,1", "speed": "400000", "adv_speeds": "100000,400000"}},
        }
    )
    assert translation.problems == () and translation.unchecked == ()
    yang = translation.instance
    assert yang["sonic-queue:sonic-queue"]["sonic-queue:QUEUE"] == {
        "QUEUE_LIST": [{"ifname": "Ethernet0", "qindex": "3", "scheduler": "S", "wred_profile": "W"}]
    }
    assert yang["sonic-dscp-tc-map:sonic-dscp-tc-map"]["sonic-dscp-tc-map:DSCP_TO_TC_MAP"] == {
        "DSCP_TO_TC_MAP_LIST": [
            {"name": "M", "DSCP_TO_TC_MAP": [{"dscp": "26", "tc": 3}, {"dscp": "48", "tc": 6}]}
        ]
    }
    # RFC 7951: uint64 as a string, boolean as JSON true, uint32 (and the maps' uint8 tc) as a number.
    wred = yang["sonic-wred-profile:sonic-wred-profile"]["sonic-wred-profile:WRED_PROFILE"]
    assert wred["WRED_PROFILE_LIST"] == [
        {"name": "W", "green_min_threshold": "150000", "wred_green_enable": True}
    ]
    pfcwd = yang["sonic-pfcwd:sonic-pfcwd"]["sonic-pfcwd:PFC_WD"]["PFC_WD_LIST"]
    assert pfcwd == [
        {"ifname": "Ethernet0", "detection_time": 200},
        {"ifname": "GLOBAL", "POLL_INTERVAL": 200},
    ]
    port = yang["sonic-port:sonic-port"]["sonic-port:PORT"]["PORT_LIST"][0]
    assert port["adv_speeds"] == [100000, 400000] and port["speed"] == 400000 and port["lanes"] == "0,1"


def test_the_schema_comes_from_the_compiled_models() -> None:
    schemas = sonic_yang.table_schemas()
    assert {
        "PORT",
        "PORT_QOS_MAP",
        "DSCP_TO_TC_MAP",
        "TC_TO_QUEUE_MAP",
        "TC_TO_PRIORITY_GROUP_MAP",
        "MAP_PFC_PRIORITY_TO_QUEUE",
        "QUEUE",
        "SCHEDULER",
        "WRED_PROFILE",
        "BUFFER_POOL",
        "BUFFER_PROFILE",
        "BUFFER_PG",
        "BUFFER_QUEUE",
        "PFC_WD",
    } <= set(schemas)
    queue = schemas["QUEUE"]
    assert queue.module == "sonic-queue"
    assert [(m.name, m.keys) for m in queue.container.lists] == [
        ("QUEUE_LIST", ("ifname", "qindex")),
        ("VOQ_QUEUE_LIST", ("hostname", "asic_name", "ifname", "qindex")),
    ]
    assert schemas["BUFFER_PG"].container.lists[0].keys == ("port", "pg_num")
    assert schemas["PORT"].container.lists[0].leaves["adv_speeds"].leaf_list


def test_the_statement_reader() -> None:
    (module,) = parse_statements('module m {\n  leaf "a b" {\n    type string { pattern "x\\"y"; }\n  }\n}\n')
    assert module.keyword == "module" and module.argument == "m"
    leaf = module.children[0]
    assert (leaf.keyword, leaf.argument) == ("leaf", "a b")
    pattern = leaf.children[0].children[0]
    assert (pattern.keyword, pattern.argument) == ("pattern", 'x"y')
    with pytest.raises(SonicYangError, match="not closed"):
        parse_statements("module m { leaf a;")


# -- yanglint missing or too old ------------------------------------------------------------------------


def test_a_missing_yanglint_is_an_error_naming_scripts_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sonic_yang, "YANGLINT", "yanglint-not-installed-here")
    sonic_yang.yanglint_version.cache_clear()
    sonic_yang.table_schemas.cache_clear()
    with pytest.raises(SonicYangError, match=r"scripts/setup.*libyang-tools"):
        validate_config_db(golden("default"), fragment=True)


def test_a_yanglint_older_than_2_1_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    old = tmp_path / "yanglint"
    old.write_text("#!/bin/sh\necho 'yanglint 1.0.184'\n")
    old.chmod(0o755)
    monkeypatch.setattr(sonic_yang, "YANGLINT", str(old))
    sonic_yang.yanglint_version.cache_clear()
    with pytest.raises(SonicYangError, match=r"yanglint 1\.0\.184 is older than 2\.1"):
        sonic_yang.yanglint_version()


# -- fabcheck render --validate ----------------------------------------------------------------------------


def inventory(tmp_path: Path, intent: dict[str, Any] | None = None) -> Path:
    """inventory/example (leaf01 NVUE, leaf02 EOS) with a SONiC leaf03 beside them (its switch_ports)."""
    folder = tmp_path / "inventory"
    shutil.copytree(REPO / "inventory" / "example", folder)
    hosts = yaml.safe_load((folder / "hosts.yml").read_text())
    hosts["all"]["children"]["switches"]["children"]["switches_sonic"] = {
        "hosts": {
            "leaf03": {
                "switch_address": "203.0.113.3",
                "switch_ports": SONIC_PORTS,
                "switch_uplinks": ["Ethernet120"],
            }
        }
    }
    (folder / "hosts.yml").write_text(yaml.safe_dump(hosts))
    if intent:
        fabric = folder / "group_vars" / "all" / "fabric.yml"
        data = yaml.safe_load(fabric.read_text())
        data["fabric_intent"] = data["fabric_intent"] | intent
        fabric.write_text(yaml.safe_dump(data))
    return folder


@pytest.mark.parametrize("intent", [None, NON_DEFAULT_INTENT], ids=["default", "non-default"])
def test_render_validate_passes_a_sonic_render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], intent: dict[str, Any] | None
) -> None:
    code = main(
        ["render", "-i", str(inventory(tmp_path, intent)), "--limit", "leaf03", "--validate", "--json"]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    record = json.loads(captured.out)
    assert record["validation"]["status"] == "valid"
    assert "leaf03: SONiC YANG (fragment, yanglint 2." in captured.err and "valid" in captured.err
    pfc = json.loads(record["config"])["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"]
    assert pfc == ("4" if intent else "3")


def test_render_validate_judges_nvue_and_says_eos_is_not_validated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["render", "-i", str(inventory(tmp_path)), "--validate"])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "leaf01: valid against NVIDIA's NVUE OpenAPI" in err  # tests/switch/test_nvue_openapi.py
    assert "leaf02: validation is not available for platform eos" in err
    assert "leaf03: SONiC YANG (fragment" in err


def test_render_validate_refuses_a_broken_render_with_yanglints_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = render_cli.render_switch

    def broken(desired: Any) -> RenderedConfig:
        rendered = real(desired)
        config = json.loads(rendered.text)
        config["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] = "9"
        return RenderedConfig(rendered.switch, rendered.platform, json.dumps(config))

    monkeypatch.setattr(render_cli, "render_switch", broken)
    code = main(["render", "-i", str(inventory(tmp_path)), "--limit", "leaf03", "--validate"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "REFUSED" in err and 'Unsatisfied pattern - "9"' in err


def test_render_validate_without_yanglint_is_not_a_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sonic_yang, "YANGLINT", "yanglint-not-installed-here")
    sonic_yang.yanglint_version.cache_clear()
    sonic_yang.table_schemas.cache_clear()
    code = main(["render", "-i", str(inventory(tmp_path)), "--limit", "leaf03", "--validate"])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "NOT validated" in err and "scripts/setup" in err and "libyang-tools" in err


def test_render_without_validate_runs_no_yanglint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sonic_yang, "YANGLINT", "yanglint-not-installed-here")
    sonic_yang.yanglint_version.cache_clear()
    code = main(["render", "-i", str(inventory(tmp_path)), "--limit", "leaf03"])
    assert code == 0 and capsys.readouterr().err == ""


def test_render_validate_passes_a_non_default_lossless_queue_also_over_the_factory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Lossless priority 5: BUFFER_QUEUE names queue 5 with the lossless profile; `render --validate`
    passes it, and SONiC's YANG takes the factory CONFIG_DB with it pushed over (stock 5-6 split)."""
    intent = {"lossless": {"priority": 5, "dscp": [26], "pfc": True}}
    code = main(
        ["render", "-i", str(inventory(tmp_path, intent)), "--limit", "leaf03", "--validate", "--json"]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    record = json.loads(captured.out)
    assert record["validation"]["status"] == "valid"
    fragment = json.loads(record["config"])
    assert fragment["BUFFER_QUEUE"]["Ethernet0|5"] == {"profile": "egress_lossless_profile"}
    assert [key for key in fragment["BUFFER_QUEUE"] if key.startswith("Ethernet0|")] == ["Ethernet0|5"]
    ports = sorted(fragment["PORT"])
    factory = factory_config_db("leaf03", ports)
    pushed = apply_patch(factory, compute_patch(factory, fragment), ports)
    assert pushed["BUFFER_QUEUE"]["Ethernet0|3-4"] == {"profile": "egress_lossless_profile"}  # the switch's
    assert pushed["BUFFER_QUEUE"]["Ethernet0|6"] == {"profile": "q_lossy_profile"}  # split out of 5-6
    verdict = validate_config_db(pushed, fragment=False)
    assert verdict.valid, verdict.messages
