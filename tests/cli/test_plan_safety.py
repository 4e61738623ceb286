"""`fabcheck plan` writes only inside the directory or file it is given: a symbolic link (dangling or
not) where it would write is refused in one line (exit 2) and its target left untouched, with or without
--overwrite; --markdown refuses an existing file unless --overwrite. A --gpus far beyond what three tiers
hold is refused at once (by arithmetic, before any switch is built), and a non-ASCII digit is one line."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from fabcheck.cli import main
from fabcheck.fabricplan.catalog import CATALOG
from fabcheck.fabricplan.model import PlanError, PlanInput
from fabcheck.fabricplan.sizing import plan_fabric

ROCE_16 = (
    "plan", "--fabric", "roce", "--gpus", "16", "--gpus-per-node", "8", "--nic-gbps", "400",
    "--switch", "sn5600",
)  # fmt: skip


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_dangling_hosts_link_is_refused_and_nothing_written_outside(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, overwrite: bool
) -> None:
    inventory, outside = tmp_path / "inv", tmp_path / "out"
    inventory.mkdir()
    outside.mkdir()
    (inventory / "hosts.yml").symlink_to(outside / "secret.yml")
    flags = ("--overwrite",) if overwrite else ()
    code, out, err = run(capsys, *ROCE_16, "--inventory", str(inventory), *flags)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "hosts.yml is a symbolic link; not written through it" in err
    assert list(outside.iterdir()) == [] and not (inventory / "group_vars").exists()


def test_overwrite_never_replaces_a_links_target(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    inventory = tmp_path / "inv"
    inventory.mkdir()
    target = tmp_path / "precious.yml"
    target.write_text("keep me\n")
    (inventory / "hosts.yml").symlink_to(target)
    code, _, err = run(capsys, *ROCE_16, "--inventory", str(inventory), "--overwrite")
    assert code == 2 and "symbolic link" in err
    assert target.read_text() == "keep me\n" and (inventory / "hosts.yml").is_symlink()


def test_a_linked_group_vars_directory_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    inventory, outside = tmp_path / "inv", tmp_path / "out"
    inventory.mkdir()
    outside.mkdir()
    (inventory / "group_vars").symlink_to(outside, target_is_directory=True)
    code, _, err = run(capsys, *ROCE_16, "--inventory", str(inventory))
    assert code == 2 and "group_vars is a symbolic link" in err
    assert list(outside.iterdir()) == [] and not (inventory / "hosts.yml").exists()


def test_the_writer_itself_refuses_a_link(tmp_path: Path) -> None:
    """write_plan_inventory called directly (not through the CLI's early check)."""
    from fabcheck.fabricplan.inventory import write_plan_inventory

    plan = plan_fabric(PlanInput("roce", 16, 8, 8, 400, CATALOG["sn5600"], CATALOG["sn5600"]))
    (tmp_path / "hosts.yml").symlink_to(tmp_path / "elsewhere.yml")
    for overwrite in (False, True):
        with pytest.raises(PlanError, match=r"hosts\.yml is a symbolic link"):
            write_plan_inventory(plan, tmp_path, overwrite=overwrite)
    assert not (tmp_path / "elsewhere.yml").exists()


def test_overwrite_replaces_a_plain_file_in_place(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    inventory = tmp_path / "inv"
    assert run(capsys, *ROCE_16, "--inventory", str(inventory))[0] == 0
    hosts = inventory / "hosts.yml"
    hosts.write_text("stale\n")
    assert run(capsys, *ROCE_16, "--inventory", str(inventory), "--overwrite")[0] == 0
    assert "fabric_links" in hosts.read_text() and not hosts.is_symlink()
    assert sorted(p.name for p in inventory.iterdir()) == ["group_vars", "hosts.yml"]  # no temp file left
    assert oct(hosts.stat().st_mode & 0o777) == oct(0o644 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_markdown_refuses_an_existing_file_unless_overwrite(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "plan.md"
    path.write_text("mine\n")
    code, out, err = run(capsys, *ROCE_16, "--markdown", str(path))
    assert (
        (code, out) == (2, "")
        and "--markdown: " in err
        and "exists; not overwritten without --overwrite" in err
    )
    assert path.read_text() == "mine\n"
    assert run(capsys, *ROCE_16, "--markdown", str(path), "--overwrite")[0] == 0
    assert path.read_text().startswith("# Fabric plan: roce, 16 GPUs")


@pytest.mark.parametrize("overwrite", [False, True])
def test_markdown_refuses_a_link(capsys: pytest.CaptureFixture[str], tmp_path: Path, overwrite: bool) -> None:
    target = tmp_path / "target.md"
    target.write_text("keep\n")
    link = tmp_path / "plan.md"
    link.symlink_to(target)
    dangling = tmp_path / "dangling.md"
    dangling.symlink_to(tmp_path / "nowhere.md")
    flags = ("--overwrite",) if overwrite else ()
    for path in (link, dangling):
        code, out, err = run(capsys, *ROCE_16, "--markdown", str(path), *flags)
        assert (code, out) == (2, "") and "is a symbolic link; not written through it" in err
    assert target.read_text() == "keep\n" and not (tmp_path / "nowhere.md").exists()


@pytest.mark.parametrize("gpus", ["8000000", "99999999999999999999992"])
def test_a_huge_gpu_count_is_refused_at_once(capsys: pytest.CaptureFixture[str], gpus: str) -> None:
    started = time.monotonic()
    code, out, err = run(capsys, *ROCE_16[:4], gpus, *ROCE_16[5:])
    assert time.monotonic() - started < 2  # it built every leaf and cable first: 46 s, or killed
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert f"--gpus: {gpus} GPUs need " in err and "at most 524288 GPUs with these switches" in err


def test_the_refusal_is_the_same_below_and_far_above_the_build() -> None:
    """Same exact maximum by arithmetic as the three-tier build gives: the largest count plans."""
    sn5600 = CATALOG["sn5600"]
    with pytest.raises(PlanError, match="at most 524288 GPUs"):
        plan_fabric(PlanInput("roce", 524296, 8, 8, 400, sn5600, sn5600))
    qm9700 = CATALOG["qm9700"]
    with pytest.raises(PlanError, match=r"need 65 pods of 32 leaves.*at most 65536 GPUs"):
        plan_fabric(PlanInput("ib", 65544, 8, 8, 400, qm9700, qm9700))
    assert plan_fabric(PlanInput("ib", 65536, 8, 8, 400, qm9700, qm9700)).tiers == 3


@pytest.mark.parametrize("value", ["²", "٣", "1²", "-3", "0x10"])
def test_a_count_that_is_not_ascii_digits_is_one_line(capsys: pytest.CaptureFixture[str], value: str) -> None:
    code, out, err = run(capsys, *ROCE_16[:4], value, *ROCE_16[5:])
    assert (code, out) == (2, "")
    assert err == f"fabcheck: --gpus {value!r}: expected a whole number, at least 1\n"
