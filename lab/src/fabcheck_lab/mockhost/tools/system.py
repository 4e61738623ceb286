"""Mock ``lsmod``, ``modprobe``, ``modinfo`` and ``sysctl`` over the node's state (``/proc/sys`` is
read-only)."""

from __future__ import annotations

import getopt
from pathlib import Path

from .common import Node, ToolError, getopt_message, out

KERNEL = "6.8.0-mock"
# module -> (size, users) as lsmod shows them; which ones are loaded lives in modules.json
MODULES = {
    "nvidia_peermem": (16384, ""),
    "nvidia": (9719808, "nvidia_peermem"),
    "mlx5_ib": (483328, ""),
    "ib_uverbs": (196608, "nvidia_peermem,rdma_ucm,mlx5_ib"),
    "ib_core": (487424, "rdma_cm,ib_ipoib,iw_cm,ib_umad,rdma_ucm,ib_uverbs,mlx5_ib,ib_cm"),
    "mlx5_core": (2441216, "mlx5_ib"),
}


def loaded_modules(node: Node) -> dict[str, bool]:
    state = node.load("modules.json", {})
    return {name: bool(state.get(name, False)) for name in MODULES}


def lsmod(node: Node, args: list[str]) -> int:
    lines = ["Module                  Size  Used by"]
    loaded = loaded_modules(node)
    for name, (size, users) in MODULES.items():
        if loaded[name]:
            live = [u for u in users.split(",") if u and loaded.get(u, True)]
            lines.append(f"{name:<19} {size:>8}  {len(live)} {','.join(live)}".rstrip())
    out("\n".join(lines) + "\n")
    return 0


def modprobe(node: Node, args: list[str]) -> int:
    try:
        opts, names = getopt.gnu_getopt(args, "rqv", ["remove", "quiet", "verbose"])
    except getopt.GetoptError as exc:
        raise ToolError(getopt_message("modprobe", exc) + "\n", 1) from None
    remove = any(flag in ("-r", "--remove") for flag, _ in opts)
    if not names:
        raise ToolError("modprobe: ERROR: missing parameters. See -h.\n", 1)
    state = node.load("modules.json", {})
    available = set(node.load("modules_available.json", list(MODULES)))
    for name in names if remove else names[:1]:
        name = name.replace("-", "_")
        if name not in available:
            raise ToolError(
                f"modprobe: FATAL: Module {name} not found in directory /lib/modules/{KERNEL}\n", 1
            )
        state[name] = not remove
    node.save("modules.json", state)
    return 0


# The GPU kernel module's flavour (gpu_module.json, "proprietary" unless the lab's dmabuf-host switch
# set "open") decides its license: MODULE_LICENSE("Dual MIT/GPL") in
# NVIDIA/open-gpu-kernel-modules:kernel-open/nvidia/nv.c@df1c9a3de2be4b130f4fc7680f7198193d8ac6ad,
# "NVIDIA" for the proprietary one:
# https://us.download.nvidia.com/XFree86/Linux-x86_64/515.43.04/README/kernel_open.html; nvidia_peermem
# declares "Dual BSD/GPL" (kernel-open/nvidia-peermem/nvidia-peermem.c, same commit).
GPU_MODULE_LICENSES = {"open": "Dual MIT/GPL", "proprietary": "NVIDIA"}
MODULE_LICENSES = {"nvidia_peermem": "Dual BSD/GPL"}


def gpu_module_flavour(node: Node) -> str:
    return str(node.load("gpu_module.json", {}).get("flavour", "proprietary"))


def modinfo(node: Node, args: list[str]) -> int:
    """kmod's `modinfo -F FIELD NAME`: the value alone; a module that is not installed is "Module NAME
    not found." on stderr with exit 1, as in
    kmod-project/kmod:tools/modinfo.c@84fa569b2eb3230284168d59863330bafb07bc52.
    Only the license field of the GPU modules is modelled; anything else is refused."""
    try:
        opts, names = getopt.gnu_getopt(args, "F:", ["field="])
    except getopt.GetoptError as exc:
        raise ToolError(getopt_message("modinfo", exc) + "\n", 1) from None
    fields = [value for flag, value in opts if flag in ("-F", "--field")]
    if not names:
        raise ToolError("modinfo: ERROR: missing module or filename.\n", 1)
    if fields != ["license"]:
        raise ToolError("modinfo: the lab models only `modinfo -F license NAME`\n", 1)
    available = set(node.load("modules_available.json", list(MODULES)))
    lines = []
    for raw in names:
        name = raw.replace("-", "_")
        if name not in available:
            raise ToolError(f"modinfo: ERROR: Module {raw} not found.\n", 1)
        if name == "nvidia":
            lines.append(GPU_MODULE_LICENSES[gpu_module_flavour(node)])
        elif name in MODULE_LICENSES:
            lines.append(MODULE_LICENSES[name])
        else:
            raise ToolError(f"modinfo: the lab does not model the license of {name}\n", 1)
    out("".join(line + "\n" for line in lines))
    return 0


def rmmod(node: Node, args: list[str]) -> int:
    """kmod's rmmod: a module another loaded one uses stays ("is in use by: ..."), one not loaded is
    an error; each refusal exits 1 and stops there."""
    names = [a for a in args if not a.startswith("-")]
    if not names:
        raise ToolError("rmmod: ERROR: missing module name.\n", 1)
    state, loaded = node.load("modules.json", {}), loaded_modules(node)
    for raw in names:
        name = raw.replace("-", "_")
        if not loaded.get(name, False):
            raise ToolError(f"rmmod: ERROR: Module {name} is not currently loaded\n", 1)
        users = [u for u in MODULES[name][1].split(",") if u and loaded.get(u, False)]
        if users:
            raise ToolError(f"rmmod: ERROR: Module {name} is in use by: {' '.join(users)}\n", 1)
        state[name] = loaded[name] = False
    node.save("modules.json", state)
    return 0


# --- sysctl -----------------------------------------------------------------------------------
def proc_sys_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def read_key(node: Node, key: str) -> str | None:
    stored = node.load("sysctl.json", {})
    if key in stored:
        return str(stored[key])
    try:
        return proc_sys_path(key).read_text().strip().replace("\t", " ")
    except OSError:
        return None


def write_key(node: Node, key: str, value: str) -> None:
    if not key.startswith("net."):
        raise ToolError(f'sysctl: setting key "{key}": Read-only file system\n', 255)
    if not proc_sys_path(key).exists():
        raise ToolError(
            f"sysctl: cannot stat /proc/sys/{key.replace('.', '/')}: No such file or directory\n", 255
        )
    stored = node.load("sysctl.json", {})
    stored[key] = value.strip()
    node.save("sysctl.json", stored)


def assignments_from_file(path: Path) -> list[tuple[str, str]]:
    pairs = []
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith(("#", ";")) and "=" in line:
            key, value = line.lstrip("-").split("=", 1)
            pairs.append((key.strip(), value.strip()))
    return pairs


def system_files(node: Node) -> list[Path]:
    confs = sorted((node.etc / "sysctl.d").glob("*.conf")) if (node.etc / "sysctl.d").is_dir() else []
    main_conf = node.etc / "sysctl.conf"
    return confs + ([main_conf] if main_conf.exists() else [])


def sysctl(node: Node, args: list[str]) -> int:
    try:
        opts, words = getopt.gnu_getopt(
            args, "nwpqeab", ["values", "write", "load", "quiet", "system", "all"]
        )
    except getopt.GetoptError as exc:
        raise ToolError(getopt_message("sysctl", exc) + "\n", 255) from None
    flags = {f for f, _ in opts}
    value_only = bool(flags & {"-n", "--values", "-b"})
    quiet = bool(flags & {"-q", "--quiet"})
    if flags & {"-a", "--all"}:
        raise ToolError("sysctl: -a is not available on a lab node\n", 255)
    pairs: list[tuple[str, str]] = []
    if flags & {"-p", "--load"}:
        files = [Path(w) for w in words] or [node.etc / "sysctl.conf"]
        for path in files:
            pairs += assignments_from_file(path)
        words = []
    if "--system" in flags:
        for path in system_files(node):
            out(f"* Applying {path} ...\n")
            pairs += assignments_from_file(path)
    lines = []
    for word in words:
        if "=" in word:
            key, value = word.split("=", 1)
            pairs.append((key, value))
            continue
        value = read_key(node, word)
        if value is None:
            raise ToolError(
                f"sysctl: cannot stat /proc/sys/{word.replace('.', '/')}: No such file or directory\n", 255
            )
        lines.append(value if value_only else f"{word} = {value}")
    for key, value in pairs:
        write_key(node, key, value)
        if not quiet:
            lines.append(value if value_only else f"{key} = {value}")
    out("".join(line + "\n" for line in lines))
    return 0
