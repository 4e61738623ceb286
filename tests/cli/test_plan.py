"""`fabcheck plan` run in process: the BOM it prints for catalog and generic switches, --json that reads
back as the plan, --markdown, --compare roce,ib, and every value it cannot use refused with one line
naming the option (exit 2) before anything is printed or written.

The reference figures: NVIDIA DGX SuperPOD H100 RA, "Table 4. Compute fabric component count"
(https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/network-fabrics.html):
1 SU (32 nodes, 256 GPUs) 8 leaf and 4 spine QM9700, 256 leaf-spine cables; 4 SU (128 nodes) 32 leaf
and 16 spine, 1024 leaf-spine cables. DGX SuperPOD B200 RA
(https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-b200/latest/dgx-superpod-architecture.html):
16 SU (4096 GPUs) 128 leaf, 128 spine, 64 core.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fabcheck.cli import main
from fabcheck.fabricplan.planfile import plan_from_json

ROCE_512 = ("plan", "--fabric", "roce", "--gpus", "512", "--gpus-per-node", "8", "--nic-gbps", "400")
IB = ("plan", "--fabric", "ib", "--gpus-per-node", "8", "--nic-gbps", "400", "--switch", "qm9700")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def test_roce_on_the_sn5600_prints_the_bom(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *ROCE_512, "--switch", "sn5600")
    assert (code, err) == (0, "")
    table = rows(out)
    # 64 nodes x 8 rails = 512 host links of 400G; a leaf has 128 ports of 400G: 64 down, 64 up.
    assert ["switches", "leaf", "8"] in table and ["spine", "4"] in table and ["total", "12"] in table
    assert ["links", "host", "(NIC", "to", "leaf)", "512"] in table and [
        "leaf",
        "to",
        "spine",
        "512",
    ] in table
    # NIC modules: one per host link; switch modules: one per used 2x400G cage (32 down + 32 up a leaf,
    # 64 a spine): 8 x 64 + 4 x 64.
    assert ["transceivers", "NIC", "ends", "512"] in table and ["switch", "cages", "768"] in table
    assert ["cables", "1024"] in table
    assert "\ndesign: 2 tiers, non-blocking (1:1), rail-optimised\n" in out
    assert "\nleaves: 1 per rail (1 group of nodes, up to 64 host links a leaf)\n" in out


@pytest.mark.parametrize(
    ("gpus", "leaves", "spines", "cores", "leaf_spine"),
    [("256", 8, 4, 0, 256), ("1024", 32, 16, 0, 1024), ("4096", 128, 128, 64, 4096)],
)
def test_infiniband_matches_the_superpod_reference_designs(
    capsys: pytest.CaptureFixture[str], gpus: str, leaves: int, spines: int, cores: int, leaf_spine: int
) -> None:
    code, out, _err = run(capsys, *IB, "--gpus", gpus, "--json")
    assert code == 0
    document = json.loads(out)
    assert document["switches"] == {
        "leaf": leaves,
        "spine": spines,
        "core": cores,
        "total": leaves + spines + cores,
    }
    assert document["links"]["leaf_spine"] == leaf_spine
    assert document["links"]["host"] == int(gpus)


def test_json_echoes_the_inputs_and_reads_back_as_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run(capsys, *ROCE_512, "--switch", "sn5600", "--json")
    assert code == 0
    document = json.loads(out)
    for key in ("switches", "links", "transceivers", "cables", "input", "plan"):
        assert key in document
    echoed = document["input"]
    assert (echoed["fabric"], echoed["gpus"], echoed["gpus_per_node"], echoed["nics_per_node"]) == (
        "roce",
        512,
        8,
        8,
    )
    assert echoed["leaf_switch"]["name"] == "sn5600" and echoed["oversubscription"] == 1
    plan = plan_from_json(document, "<stdout>")
    assert len(plan.cables) == document["cables"] == 1024
    assert document["plan"]["cabling"][0] == {"a": "gpu01:mlx5_0", "b": "leaf-01-r0:1", "tier": "host"}


def test_generic_switch_oversubscribed_and_not_rail_optimised(capsys: pytest.CaptureFixture[str]) -> None:
    argv = (*ROCE_512, "--switch-ports", "64", "--switch-port-gbps", "800", "--platform", "sonic")
    code, out, _err = run(capsys, *argv, "--oversubscription", "3", "--no-rail-optimised", "--json")
    assert code == 0
    document = json.loads(out)
    leaf = document["input"]["leaf_switch"]
    assert (leaf["name"], leaf["cages"], leaf["cage_gbps"], leaf["platform"]) == ("generic", 64, 800, "sonic")
    assert document["input"]["rail_optimised"] is False and document["input"]["oversubscription"] == 3
    # 128 ports of 400G, 3:1: 96 down, 32 up; 512 host links on ceil(512 / 96) = 6 leaves.
    assert document["switches"]["leaf"] == 6
    assert document["links"]["leaf_spine"] * 3 >= document["links"]["host"]


def test_markdown_is_written_besides_the_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "plan.md"
    code, out, _err = run(capsys, *ROCE_512, "--switch", "sn5600", "--markdown", str(target))
    assert code == 0 and "bill of materials" in out
    text = target.read_text()
    assert text.startswith("# Fabric plan: roce, 512 GPUs\n")
    assert "| switches | leaf | 8 |" in text and "|  | switch cages | 768 |" in text


def test_compare_prints_both_fabrics_with_differences(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("plan", "--compare", "roce,ib", "--gpus", "512", "--gpus-per-node", "8", "--nic-gbps", "400")
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, "")
    assert "roce: sn5600 (NVIDIA Spectrum-4 SN5600), 2 tiers" in out
    assert "ib: qm9700 (NVIDIA Quantum-2 QM9700), 2 tiers" in out
    table = rows(out)
    # 128 ports of 400G on an SN5600 against 64 on a QM9700: twice the switches, the same optics.
    assert ["switches", "leaf", "8", "16", "+100.0%"] in table
    assert ["total", "12", "24", "+100.0%"] in table
    assert ["cables", "1024", "1024", "+0.0%"] in table


def test_compare_takes_each_sides_own_model_and_writes_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("plan", "--compare", "ib,roce", "--gpus", "4096", "--gpus-per-node", "8", "--nic-gbps", "400")
    code, out, _err = run(capsys, *argv, "--switch", "7060x6-64pe", "--json")
    assert code == 0
    document = json.loads(out)
    assert document["compare"] == ["ib", "roce"]
    assert document["roce"]["input"]["leaf_switch"]["name"] == "7060x6-64pe"
    assert document["ib"]["input"]["leaf_switch"]["name"] == "qm9700"  # the catalog's default at 400G
    ib, roce = document["ib"]["switches"]["total"], document["roce"]["switches"]["total"]
    assert document["difference_percent"]["switches"]["total"] == round((roce - ib) * 100 / ib, 1)


REFUSALS = [
    (("--gpus", "0"), "--gpus '0': expected a whole number, at least 1"),
    (("--gpus", "-8"), "--gpus '-8': expected a whole number"),
    (("--gpus", "many"), "--gpus 'many': expected a whole number"),
    (("--gpus", "100"), "--gpus 100: expected a multiple of --gpus-per-node 8 (whole nodes: 96 or 104)"),
    (("--gpus", "512", "--gpus-per-node", "0"), "--gpus-per-node '0'"),
    (("--gpus", "512", "--nics-per-node", "0"), "--nics-per-node '0'"),
    (("--gpus", "512", "--nic-gbps", "0"), "--nic-gbps '0'"),
    (
        ("--gpus", "512", "--nic-gbps", "800"),
        "--switch qm9700: NVIDIA Quantum-2 QM9700 cannot carry --nic-gbps 800",
    ),
    (("--gpus", "65544"), "--gpus: 65544 GPUs need"),
    (
        ("--gpus", "512", "--spine-switch", "sn5600"),
        "--spine-switch sn5600: NVIDIA Spectrum-4 SN5600 is a RoCE (Ethernet) switch, not ib; "
        "--fabric ib takes qm9700, q3400",
    ),
    (("--gpus", "512", "--switch-ports", "64"), "--switch and --switch-ports: give one"),
    (
        ("--gpus", "512", "--oversubscription", "0.5"),
        "--oversubscription '0.5': expected a number, at least 1",
    ),
    (("--gpus", "512", "--oversubscription", "nan"), "--oversubscription 'nan'"),
    (("--gpus", "512", "--oversubscription", "inf"), "--oversubscription 'inf'"),
]


@pytest.mark.parametrize(("extra", "expected"), REFUSALS, ids=[" ".join(e) for e, _ in REFUSALS])
def test_an_infiniband_plan_it_cannot_make_is_one_line(
    capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], expected: str
) -> None:
    argv = [*IB]
    for option, value in zip(extra[::2], extra[1::2], strict=True):
        if option in argv:
            argv[argv.index(option) + 1] = value
        else:
            argv += [option, value]
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("fabcheck: ") and "Traceback" not in err
    assert expected in err, err


GENERIC_NVUE = ("--switch-ports", "64", "--switch-port-gbps", "800", "--platform", "nvue")
OTHER_REFUSALS = [
    (("plan", "--gpus", "8"), "--fabric: expected roce or ib (or --compare roce,ib for both)"),
    (("plan", "--fabric", "fc"), "--fabric fc: expected one of roce, ib"),
    ((*ROCE_512,), "--switch: expected a model (qm9700, q3400, sn5600, 7060x6-64pe)"),
    (
        (*ROCE_512, "--switch", "qm9700"),
        "--switch qm9700: NVIDIA Quantum-2 QM9700 is an InfiniBand switch, not roce; "
        "--fabric roce takes sn5600, 7060x6-64pe",
    ),
    (
        (*ROCE_512, "--switch", "sn9999"),
        "--switch sn9999: expected one of qm9700, q3400, sn5600, 7060x6-64pe",
    ),
    ((*ROCE_512, "--switch", "sn5600", "--platform", "eos"), "--platform: only with --switch-ports"),
    ((*ROCE_512, "--switch-ports", "64"), "--switch-ports P and --switch-port-gbps B: give both"),
    ((*ROCE_512, "--switch-ports", "64", "--switch-port-gbps", "0"), "--switch-port-gbps '0'"),
    ((*ROCE_512, "--switch-ports", "64", "--switch-port-gbps", "300"), "cannot carry --nic-gbps 400 links"),
    (
        (*ROCE_512, "--switch-ports", "64", "--switch-port-gbps", "800", "--platform", "junos"),
        "--platform junos",
    ),
    (
        ("plan", "--fabric", "ib", "--gpus", "8", "--gpus-per-node", "8", "--nic-gbps", "400", *GENERIC_NVUE),
        "--platform nvue: an Ethernet switch platform; --fabric ib has none",
    ),
    (
        ("plan", "--compare", "roce", "--gpus", "8"),
        "--compare roce: expected two fabrics, roce,ib or ib,roce",
    ),
    (("plan", "--compare", "roce,roce", "--gpus", "8"), "--compare roce,roce: expected two fabrics"),
    (("plan", "--compare", "roce,fc", "--gpus", "8"), "--compare fc: expected one of roce, ib"),
    ((*ROCE_512, "--compare", "roce,ib"), "--fabric and --compare: give one"),
    (("plan", "--compare", "roce,ib", "--gpus", "8", "--gpus-per-node", "8"), "--nic-gbps: required"),
    (
        ("plan", "--compare", "roce,ib", "--gpus", "8", "--gpus-per-node", "8", "--nic-gbps", "1600"),
        "--nic-gbps: no roce switch in the catalog breaks out to 1600G links",
    ),
]


@pytest.mark.parametrize(("argv", "expected"), OTHER_REFUSALS, ids=[e for _, e in OTHER_REFUSALS])
def test_other_refusals_are_one_line(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], expected: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("fabcheck: ") and "Traceback" not in err
    assert expected in err, err


def test_a_markdown_path_it_cannot_write_is_refused_before_planning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(
        capsys, *ROCE_512, "--switch", "sn5600", "--markdown", str(tmp_path / "no" / "plan.md")
    )
    assert (code, out) == (2, "")
    assert "--markdown" in err and "expected a file path to write in an existing directory" in err


def test_one_switch_when_every_host_link_fits(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run(capsys, "plan", *ROCE_512[1:3], "--gpus", "64", *ROCE_512[5:], "--switch", "sn5600")
    assert code == 0
    assert "\ndesign: 1 tier, no uplinks\nleaves: one switch carries all 64 host links\n" in out
    table = rows(out)
    # 64 host links of 400G on one SN5600: 32 cages of 2x400G used, no uplinks.
    assert ["switches", "leaf", "1"] in table and ["spine", "0"] in table
    assert ["switch", "cages", "32"] in table and ["cables", "64"] in table
    assert ["leaf", "1", "128", "64", "50%"] in table


def test_not_rail_optimised_says_how_the_nics_sit(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run(
        capsys, *ROCE_512, "--switch", "sn5600", "--no-rail-optimised", "--oversubscription", "3"
    )
    assert code == 0
    assert "\ndesign: 2 tiers, oversubscribed 3:1, not rail-optimised\n" in out
    assert "\nleaves: 6, each node's NICs on consecutive ports (up to 96 host links a leaf)\n" in out


def test_help_names_the_exit_codes_and_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["plan", "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "exit codes:" in text and "\n  2  a value the plan cannot use" in text
    assert "\n  fabcheck plan --compare roce,ib --gpus 512" in text
    assert "qm9700, q3400, sn5600, 7060x6-64pe" in " ".join(text.split())  # --switch's models


def test_inventory_writes_the_cabling_map(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "inv"
    code, out, _err = run(capsys, *ROCE_512, "--switch", "sn5600", "--inventory", str(target))
    assert code == 0
    assert out.endswith(f"inventory written: {target / 'hosts.yml'}, {target / 'group_vars/all.yml'}\n")
    hosts = yaml.safe_load((target / "hosts.yml").read_text())["all"]["children"]
    nodes = hosts["gpu_hosts"]["hosts"]
    assert len(nodes) == 64 and sum(len(node["fabric_links"]) for node in nodes.values()) == 512
    assert nodes["gpu01"]["fabric_links"]["mlx5_0"] == "leaf-01-r0:swp1s0"  # NVUE names the 2x400G lanes
    switches = hosts["switches"]["children"]["switches_nvue"]["hosts"]
    assert len(switches) == 12
    uplinks = sum(len(s.get("fabric_links", {})) for s in switches.values())
    assert uplinks == 512  # every leaf-spine cable, declared once at its lower end
    intent = yaml.safe_load((target / "group_vars/all.yml").read_text())["fabric_intent"]
    assert intent["kind"] == "roce" and intent["link"] == {"speed_gbps": 400}


def test_inventory_json_keeps_stdout_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ("plan", "--fabric", "ib", "--gpus", "256", "--gpus-per-node", "8", "--nic-gbps", "400")
    code, out, err = run(capsys, *argv, "--switch", "qm9700", "--json", "--inventory", str(tmp_path))
    assert code == 0 and json.loads(out)["switches"]["total"] == 12
    assert err.startswith("inventory written: ")
    hosts = yaml.safe_load((tmp_path / "hosts.yml").read_text())["all"]["children"]
    assert sorted(hosts["ib_switches"]["children"]) == ["ib_leaves", "ib_spines"]


def test_inventory_is_not_overwritten_unless_told(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = (*ROCE_512, "--switch", "sn5600", "--inventory", str(tmp_path))
    assert run(capsys, *argv)[0] == 0
    (tmp_path / "hosts.yml").write_text("# edited\n")
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "") and "hosts.yml exists; not overwritten without --overwrite" in err
    assert (tmp_path / "hosts.yml").read_text() == "# edited\n"
    assert run(capsys, *argv, "--overwrite")[0] == 0
    assert (tmp_path / "hosts.yml").read_text().startswith("# Written by `fabcheck plan --inventory`")


INVENTORY_REFUSALS = [
    (
        (*ROCE_512, "--switch-ports", "64", "--switch-port-gbps", "800"),
        "--platform: switch model generic of leaf-01-r0 names no Ethernet platform",
    ),
    (
        ("plan", "--compare", "roce,ib", "--gpus", "8", "--gpus-per-node", "8", "--nic-gbps", "400"),
        "--inventory: one fabric's plan only; give --fabric instead of --compare",
    ),
]


@pytest.mark.parametrize(("argv", "expected"), INVENTORY_REFUSALS, ids=["no platform", "compare"])
def test_an_inventory_it_cannot_write_leaves_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: tuple[str, ...], expected: str
) -> None:
    code, out, err = run(capsys, *argv, "--inventory", str(tmp_path / "inv"))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and expected in err, err
    assert not (tmp_path / "inv").exists()


def test_overwrite_needs_an_inventory(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *ROCE_512, "--switch", "sn5600", "--overwrite")
    assert (code, out) == (2, "") and "--overwrite: only with --inventory DIR" in err


@pytest.mark.parametrize(
    ("argv", "summary"),
    [
        (
            ("--fabric", "ib", "--gpus", "256", "--switch", "qm9700"),
            "IB switches: 8 leaf, 4 spine (ib_switches); cabling map: 256 host-to-switch and 256 "
            "switch-to-switch cable(s) (fabric_links)",
        ),
        (
            ("--fabric", "roce", "--gpus", "512", "--switch", "sn5600"),
            "switches: 12 nvue (8 leaf, 4 spine); cabling map: 512 host-to-switch and 512 switch-to-switch "
            "cable(s) (fabric_links)",
        ),
    ],
    ids=["ib", "roce"],
)
def test_the_written_inventory_passes_intent_check(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: tuple[str, ...], summary: str
) -> None:
    """End to end through the real loader: the plan's switches and every cable, as `intent check` reads
    them. An Ethernet switch's address and login are what a plan cannot know: set here as a user would."""
    common = ("--gpus-per-node", "8", "--nic-gbps", "400", "--inventory", str(tmp_path))
    assert run(capsys, "plan", *argv, *common)[0] == 0
    if "roce" in argv:
        (tmp_path / "group_vars" / "switches.yml").write_text(
            'switch_address: "{{ inventory_hostname }}.mgmt"\nswitch_username: admin\n'
        )
    code, out, err = run(capsys, "intent", "check", "-i", str(tmp_path))
    assert (code, err) == (0, ""), out
    assert f"  {summary}\n" in out
