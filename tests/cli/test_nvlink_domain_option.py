"""`fabcheck analyze --nvlink-domain NAME=HOST,HOST` and `--scope`: the analyze Options the NCCL analyzers
read (which hosts share an NVLink domain; whether a table is judged as a fabric or an NVLink proof)."""

from __future__ import annotations

import argparse

import pytest

from fabcheck.analyze import SCOPE_FABRIC, SCOPE_NODE, Options
from fabcheck.cli import main
from fabcheck.cli.analyze import nvlink_domain, nvlink_plan
from fabcheck.errors import UsageError
from fabcheck.intent.nvlink import NvlinkDomain, NvlinkPlan


def test_a_domain_is_its_name_and_hosts_in_order() -> None:
    domain = nvlink_domain("rack1=gpu02, gpu01")
    assert domain == NvlinkDomain("rack1", ("gpu02", "gpu01"), ("gpu02", "gpu01"))
    assert domain.declared


@pytest.mark.parametrize("text", ["rack1", "=gpu01", "rack1=", "rack1= , ", "rack1=gpu01,gpu01"])
def test_a_malformed_domain_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        nvlink_domain(text)


def test_a_host_in_two_domains_is_refused_naming_both() -> None:
    with pytest.raises(UsageError, match="'gpu02' is in NVLink domains 'rack1' and 'rack2'"):
        nvlink_plan([nvlink_domain("rack1=gpu01,gpu02"), nvlink_domain("rack2=gpu02,gpu03")])
    with pytest.raises(UsageError, match="'rack1' given twice"):
        nvlink_plan([nvlink_domain("rack1=gpu01"), nvlink_domain("rack1=gpu03")])


def test_options_map_each_host_to_its_domain_and_a_lone_host_to_itself() -> None:
    options = Options(nvlink_domains=nvlink_plan([nvlink_domain("rack1=gpu01,gpu02")]))
    assert options.nvlink_domain_of("gpu02") == "rack1"
    assert options.nvlink_domain_of("gpu09") == "gpu09"
    assert Options().nvlink_domains == NvlinkPlan() and Options().scope == SCOPE_FABRIC


def test_the_cli_passes_domains_and_scope_to_the_analyzer(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Options] = []

    def spy(kind: str, lines: object, source: str, intent: object, options: Options | None = None) -> object:
        seen.append(options or Options())
        raise UsageError("stop here")

    monkeypatch.setattr("fabcheck.cli.analyze.analyze", spy)
    argv = ["analyze", "nccl-tests", "-", "--nvlink-domain", "r1=a,b", "--nvlink-domain", "r2=c"]
    assert main([*argv, "--scope", "node"]) == 2
    assert seen and seen[0].scope == SCOPE_NODE
    assert [(d.name, d.hosts) for d in seen[0].nvlink_domains.domains] == [("r1", ("a", "b")), ("r2", ("c",))]


def test_the_cli_refuses_a_bad_domain_with_usage_exit(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["analyze", "nccl-tests", "-", "--nvlink-domain", "rack1"])
    assert exit_.value.code == 2
    assert "NAME=HOST,HOST" in capsys.readouterr().err


def test_a_log_s_short_hostname_finds_its_fqdn_member() -> None:
    from fabcheck.analyze import Options
    from fabcheck.intent.nvlink import NvlinkDomain, NvlinkPlan

    plan = NvlinkPlan((NvlinkDomain("rack1", ("tray01.rack1.example.com", "tray02.rack1.example.com"), ()),))
    options = Options(nvlink_domains=plan)
    assert options.nvlink_domain_of("tray01") == "rack1"
    assert options.nvlink_domain_of("tray02.rack1.example.com") == "rack1"
    assert options.nvlink_domain_of("tray03") == "tray03"
