"""The boot files of role roce_host: what puts the same NIC settings back after a reboot or driver reload.

Stdlib only; used by the roce_nic module. Four files, each written only when its content differs:
the settings (the module's own parameters, as the role got them from fabcheck's desired state), the
applier (roce_nic_apply.py, the very file the module imports), a oneshot systemd unit that runs it at
boot, and a udev rule that runs it for one RDMA device when that device appears (driver load or
reload). The unit is then enabled. The caller reloads systemd and udev when their file changed.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass

from ansible_collections.fabcheck.fabric.plugins.module_utils.roce_nic_apply import (
    NicError,
    Runner,
    config_text,
)

MANAGED = "# Managed by fabcheck role roce_host (tag persist): edits are overwritten by the next run."


@dataclass(frozen=True)
class BootFile:
    label: str  # config, applier, unit, rule
    path: str
    text: str
    summarised: bool = False  # the diff shows a checksum instead of the text (the applier's ~800 lines)


def unit_text(interpreter: str, paths: dict) -> str:
    # Before network-pre.target (pulled in with Wants=, as systemd.special(7) asks of such units): trust,
    # PFC and the MTU are in place before any network is configured on the RoCE netdevs. NICs whose driver
    # comes up later are handled by the udev rule.
    return (
        f"{MANAGED}\n"
        "[Unit]\n"
        "Description=fabcheck: RoCE NIC settings of the fabric intent (trust, PFC, DSCP map, ECN, ToS, MTU)\n"
        f"ConditionPathExists={paths['config']}\n"
        "After=systemd-modules-load.service systemd-udev-trigger.service\n"
        "Wants=network-pre.target\n"
        "Before=network-pre.target\n"
        "\n"
        "[Service]\n"
        "Type=oneshot\n"
        "RemainAfterExit=yes\n"
        f"ExecStart={interpreter} {paths['applier']} --config {paths['config']}\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


def rule_text(interpreter: str, paths: dict) -> str:
    # The RDMA device's add event: mlx5_ib registers it on top of the netdev, so both exist by then.
    run = f"{interpreter} {paths['applier']} --config {paths['config']} --device %k"
    return f'{MANAGED}\nACTION=="add", SUBSYSTEM=="infiniband", RUN+="{run}"\n'


def boot_files(params: dict, applier_source: str, interpreter: str) -> list[BootFile]:
    paths = params["persist_paths"]
    return [
        BootFile("config", paths["config"], config_text(params)),
        BootFile("applier", paths["applier"], applier_source, summarised=True),
        BootFile("unit", paths["unit"], unit_text(interpreter, paths)),
        BootFile("rule", paths["rule"], rule_text(interpreter, paths)),
    ]


def check_paths(paths: object) -> dict:
    if not isinstance(paths, dict) or set(paths) != {"config", "applier", "unit", "rule"}:
        raise NicError(f"persist_paths must name exactly config, applier, unit and rule, not {paths!r}")
    for label, path in paths.items():
        if not isinstance(path, str) or not os.path.isabs(path) or any(c in path for c in ' "\n%'):
            raise NicError(f"persist_paths.{label} = {path!r}: an absolute path without blanks, quotes or %")
    return paths


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise NicError(f"cannot read {path}: {exc.strerror}") from None


def write_text(path: str, text: str) -> None:
    """Through a temporary file and a rename: a reader (udev, systemd) never sees half a file."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o755, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".fabcheck-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        raise NicError(f"cannot write {path}: {exc.strerror}") from None


def summary(text: str | None) -> str:
    if text is None:
        return ""
    digest = hashlib.sha256(text.encode()).hexdigest()
    return f"({len(text.splitlines())} lines, sha256 {digest})\n"


def unit_enabled(runner: Runner, unit: str) -> bool:
    rc, out, err = runner(["systemctl", "is-enabled", unit])
    if rc == 0:
        return out.strip() == "enabled"
    if rc == 1 or "No such file" in err:  # disabled, or a unit file not written yet (check mode)
        return False
    raise NicError(f"`systemctl is-enabled {unit}` failed (rc={rc}): {err.strip() or out.strip()}")


def persist(runner: Runner, params: dict, check_mode: bool, applier_source: str, interpreter: str) -> dict:
    """Write the boot files that differ and enable the unit; the module's `persist` result and diffs."""
    paths = check_paths(params["persist_paths"])
    result: dict = {"changed": [], "diff": [], "reload_units": False, "reload_udev": False}
    for boot in boot_files(params, applier_source, interpreter):
        current = read_text(boot.path)
        if current == boot.text:
            continue
        result["changed"].append(boot.label)
        show = summary if boot.summarised else (lambda text: text or "")
        result["diff"].append(
            {
                "before_header": boot.path if current is not None else f"{boot.path} (absent)",
                "after_header": boot.path,
                "before": show(current),
                "after": show(boot.text),
            }
        )
        if not check_mode:
            write_text(boot.path, boot.text)
    result["reload_units"] = "unit" in result["changed"]
    result["reload_udev"] = "rule" in result["changed"]
    unit = os.path.basename(paths["unit"])
    if not unit_enabled(runner, unit):
        result["changed"].append("enabled")
        if not check_mode:
            rc, out, err = runner(["systemctl", "enable", unit])
            if rc != 0:
                raise NicError(f"`systemctl enable {unit}` failed (rc={rc}): {err.strip() or out.strip()}")
    return result
