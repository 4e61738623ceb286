"""NVUE renders and the NVUE mock's config trees judged by NVIDIA's NVUE OpenAPI, per release
(fabcheck.switch.nvue_openapi over the nvueschema package's models, walked strictly: an unknown key is
an error although the models themselves ignore it)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from mockswitches import MockSwitches, mock_switches
from test_nvue_render import NON_DEFAULT_INTENT, nvue_desired

from fabcheck.cli import main
from fabcheck.cli import render as render_cli
from fabcheck.switch import nvue_openapi
from fabcheck.switch.connect import connect
from fabcheck.switch.driver import push
from fabcheck.switch.platforms.nvue import SHOW_CONFIG, NvueDriver
from fabcheck.switch.render import RenderedConfig, render_switch

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "data" / "real" / "nvue"
PORTS = ("swp1", "swp2", "swp3", "swp4")
MOCK_RELEASES = {"oa-511": "5.11.0", "oa-516": "5.16.0", "oa-58": "5.8.0"}
# The releases fabcheck's NVUE renders are judged against: every one the package carries from CL 5.6
# (the PFC watchdog) on; the package's 0.1.0 carries 5.0-5.18.
JUDGED = [f"5.{minor}" for minor in range(6, 19)]


def test_the_package_carries_the_releases_fabcheck_judges() -> None:
    assert set(JUDGED) <= set(nvue_openapi.releases())
    assert render_cli.nvue_default_releases() == tuple(JUDGED)


@pytest.mark.parametrize("intent", [None, NON_DEFAULT_INTENT], ids=["default", "non-default"])
@pytest.mark.parametrize("release", JUDGED)
def test_every_render_line_is_in_nvidias_schema_of_the_release(
    intent: dict[str, Any] | None, release: str
) -> None:
    lines = render_switch(nvue_desired(intent)).lines
    assert nvue_openapi.lines_problems(lines, release) == []


def test_before_5_6_the_watchdog_lines_are_refused_by_name() -> None:
    lines = render_switch(nvue_desired()).lines
    problems = nvue_openapi.lines_problems(lines, "5.5")
    assert {p.line for p in problems} == {line for line in lines if "pfc-watchdog" in line}
    assert all("is not a key of" in p.problem and "NVUE 5.5" in p.problem for p in problems)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (
            "nv set qos egress-scheduler default-global traffic-class 0 bw-percent 101",
            "less than or equal to 100",
        ),
        ("nv set qos egress-scheduler default-global traffic-class 0 mode wfq", "'dwrr' or 'strict'"),
        (
            "nv set qos egress-schedular default-global traffic-class 0 mode dwrr",
            "'egress-schedular' is not a key",
        ),
        # the show table's word is not the set command's (NVUE OpenAPI: enable|disable)
        ("nv set interface swp1 qos pfc-watchdog state enabled", "'enable' or 'disable'"),
        ("nv set qos mapping default-global dscp 26 switch-priority 9", "less than or equal to 7"),
        ("nv set qos pfc default-global tx on", "'enable' or 'disable'"),
        ("nv set qos pfc-watchdog robustness 0", "greater than or equal to 1"),
        ("nv set qos congestion-control default-global traffic-class 3 probability", "needs a value"),
        ("nv set system config auto-save enable on", "'enable' is not a key"),  # 5.9 form on 5.11
        ("nv unset qos roce", "not an `nv set` line"),
    ],
)
def test_a_line_outside_the_schema_is_refused_naming_it(line: str, problem: str) -> None:
    (found,) = nvue_openapi.lines_problems([line], "5.11")
    assert found.line == line and problem in found.problem and f"line 1 `{line}`" in str(found)


def test_a_release_the_package_lacks_is_unavailable_never_valid() -> None:
    with pytest.raises(nvue_openapi.NvueSchemaUnavailable, match=r"no NVUE model of Cumulus Linux 5\.99"):
        nvue_openapi.lines_problems(["nv set qos roce mode lossless"], "5.99")
    lines = render_switch(nvue_desired()).lines
    verdict = render_cli.validate_nvue_render(RenderedConfig("leaf01", "nvue", "\n".join(lines)), ("5.99",))
    assert verdict.status == render_cli.NOT_VALIDATED and "CL 5.99: NOT validated" in verdict.messages[0]


def test_without_the_package_nothing_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvue_openapi, "releases", lambda: ())
    verdict = render_cli.validate_nvue_render(render_switch(nvue_desired()))
    assert verdict.status == render_cli.NOT_VALIDATED and "not installed" in verdict.summary


# -- fabcheck render --validate --------------------------------------------------------------------------


def example(tmp_path: Path) -> Path:
    folder = tmp_path / "inventory"
    shutil.copytree(REPO / "inventory" / "example", folder)
    return folder


def test_render_validate_judges_the_nvue_render(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["render", "-i", str(example(tmp_path)), "--platform", "nvue", "--validate", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    record = json.loads(captured.out)
    assert record["validation"]["status"] == "valid"
    assert "CL 5.6, 5.7" in record["validation"]["summary"] and "5.18" in record["validation"]["summary"]


def test_render_validate_refuses_a_line_and_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = render_cli.render_switch

    def broken(desired: Any) -> RenderedConfig:
        rendered = real(desired)
        return RenderedConfig(
            rendered.switch, rendered.platform, rendered.text.replace("bw-percent 47", "bw-percent 470")
        )

    monkeypatch.setattr(render_cli, "render_switch", broken)
    inventory = str(example(tmp_path))
    code = main(["render", "-i", inventory, "--platform", "nvue", "--validate", "--nvue-release", "5.16"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "REFUSED" in err and "CL 5.16: line" in err and "bw-percent 470" in err


def test_render_validate_with_a_release_the_package_lacks_is_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["render", "-i", str(example(tmp_path)), "--platform", "nvue", "--validate", "--nvue-release", "6.0"]
    )
    err = capsys.readouterr().err
    assert code == 3, err
    assert "CL 6.0: NOT validated" in err


# -- the mock's config-tree answers, against the same models ----------------------------------------------


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MockSwitches]:
    names = dict.fromkeys(MOCK_RELEASES, "nvue")
    with mock_switches(
        tmp_path_factory.mktemp("nvue-openapi"), names, 244, releases=MOCK_RELEASES
    ) as switches:
        yield switches


@pytest.mark.parametrize("name", MOCK_RELEASES)
def test_the_mocks_config_tree_after_a_push_is_in_the_schema_of_its_release(
    lab: MockSwitches, name: str
) -> None:
    release = ".".join(MOCK_RELEASES[name].split(".")[:2])
    conn = connect(lab.login(name))
    try:
        driver = NvueDriver(conn)
        push(
            driver,
            render_switch(nvue_desired(None, name=name, host_ports=PORTS[:3], uplinks=PORTS[3:])),
            check=False,
        )
        documents = json.loads(driver.command(SHOW_CONFIG))
        major_minor = tuple(int(part) for part in release.split("."))
        auto_save = "state disabled" if major_minor >= (5, 10) else "enable off"
        driver.command(f"nv set system config auto-save {auto_save}")
        driver.command("nv config apply -y")
        with_system = json.loads(driver.command(SHOW_CONFIG))
    finally:
        conn.disconnect()
    tree = next(document["set"] for document in documents if "set" in document)
    assert tree["qos"] and tree["interface"]
    assert nvue_openapi.tree_problems(tree, release) == []
    tree = next(document["set"] for document in with_system if "set" in document)
    assert tree["system"]["config"]["auto-save"] and nvue_openapi.tree_problems(tree, release) == []


def test_the_tree_walk_is_strict_where_the_models_are_not() -> None:
    tree = {"qos": {"egress-scheduler": {"default-global": {"traffic-class": {"0": {"bw-percnt": 12}}}}}}
    (problem,) = nvue_openapi.tree_problems(tree, "5.11")
    assert "bw-percnt: not a key of" in problem
    assert nvue_openapi.root_model("5.11").model_validate(tree)  # the model alone lets it through
    dump = json.loads((REAL / "nvue-api-cl55-factory-qos.json").read_text())
    assert nvue_openapi.tree_problems({"qos": dump["qos"], "system": dump["system"]}, "5.5") == []
    assert yaml.safe_dump(dump["qos"]["roce"]) == "enable: 'off'\n"
