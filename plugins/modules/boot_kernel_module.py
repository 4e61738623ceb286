#!/usr/bin/python
"""Ansible module boot_kernel_module: a kernel module loaded now and listed for systemd-modules-load.

One module call per host does what took three tasks (lsmod, modprobe, the boot file): the play's cost
on the controller is per task and host, so this is one worker and one payload instead of four. With
skip_when_dmabuf it first reads whether the host can do GPUDirect RDMA by dma-buf, and then needs no
module (role gpu_rdma for `nccl.gdr_mechanism: any`).
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: boot_kernel_module
short_description: Load a kernel module when lsmod lacks it and list it in /etc/modules-load.d
version_added: "0.1.0"
description:
  - Reads C(lsmod); runs C(modprobe NAME) only when the module is not listed.
  - Writes C(boot_file) (one comment line and the module name, root:root 0644) only when its content,
    owner or mode differ, so systemd-modules-load loads the module again at boot.
  - Check mode reports the load and the file change it would make and changes nothing; C(--diff) shows
    the file and the load.
options:
  name:
    description: Kernel module name (letters, digits, C(_) and C(-)).
    type: str
    required: true
  boot_file:
    description: Absolute path of the systemd-modules-load file.
    type: path
    required: true
  comment:
    description: First line of the boot file, without the leading C(#).
    type: str
    default: Managed by Ansible
  skip_when_dmabuf:
    description:
      - Load nothing and write no boot file when the host can do GPUDirect RDMA by dma-buf instead
        (role gpu_rdma, C(nccl.gdr_mechanism) C(any)), read with C(uname -r) (kernel 5.12 or later) and
        C(modinfo -F license nvidia) (NVIDIA's open GPU kernel module, C(Dual MIT/GPL)). Read in check
        mode too; the result's C(dmabuf) and C(dmabuf_reason) say what was found.
    type: bool
    default: false
author: fabcheck contributors (!UNKNOWN)
"""

EXAMPLES = r"""
- name: GPUDirect RDMA now and at boot
  fabcheck.fabric.boot_kernel_module:
    name: nvidia_peermem
    boot_file: /etc/modules-load.d/fabcheck-nvidia-peermem.conf
"""

RETURN = r"""
loaded:
  description: Whether the module was loaded (or, in check mode, would be).
  type: bool
  returned: always
boot_file_changed:
  description: Whether the boot file was written or its owner or mode fixed (or would be).
  type: bool
  returned: always
dmabuf:
  description: Whether the host can do GPUDirect RDMA by dma-buf (then nothing was loaded).
  type: bool
  returned: when skip_when_dmabuf
dmabuf_reason:
  description: The kernel and GPU module flavour that decided C(dmabuf), in words.
  type: str
  returned: when skip_when_dmabuf
"""

import os  # noqa: E402  (Ansible modules put their documentation first)
import re  # noqa: E402
import tempfile  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

MODULE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
BOOT_FILE_MODE = 0o644
ARGUMENT_SPEC = {
    "name": {"type": "str", "required": True},
    "boot_file": {"type": "path", "required": True},
    "comment": {"type": "str", "default": "Managed by Ansible"},
    "skip_when_dmabuf": {"type": "bool", "default": False},
}
# dma-buf GPUDirect needs Linux >= 5.12 and NVIDIA's open GPU kernel module:
# NVIDIA/cloud-native-docs:gpu-operator/gpu-operator-rdma.rst@52dcb7b8d956784344e241df476de17094a4574c;
# its license is "Dual MIT/GPL":
# NVIDIA/open-gpu-kernel-modules:kernel-open/nvidia/nv.c@df1c9a3de2be4b130f4fc7680f7198193d8ac6ad.
# The same rule as fabcheck.parsers.gpudirect (host.gpudirect); a test ties the two.
DMABUF_MIN_KERNEL = (5, 12)
OPEN_MODULE_LICENSE = "Dual MIT/GPL"
MODINFO_NOT_FOUND = "Module nvidia not found."
KERNEL_RELEASE = re.compile(r"^([0-9]{1,4})\.([0-9]{1,4})")


def listed_modules(lsmod_output: str) -> set[str]:
    """Names in `lsmod` output: the first column of every line after the header."""
    lines = lsmod_output.splitlines()[1:]
    return {line.split()[0] for line in lines if line.strip()}


def boot_file_text(name: str, comment: str) -> str:
    return f"# {comment}\n{name}\n"


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def write_atomic(module: AnsibleModule, path: str, text: str) -> None:
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".fabcheck-")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
    module.atomic_move(temporary, path)


def ensure_loaded(module: AnsibleModule, name: str) -> bool:
    """True when the module was not listed by lsmod (and is loaded now, outside check mode)."""
    rc, out, err = module.run_command(["lsmod"])
    if rc != 0:
        module.fail_json(msg=f"lsmod failed (rc {rc}): {err.strip() or out.strip()}")
    if name in listed_modules(out):
        return False
    if not module.check_mode:
        rc, out, err = module.run_command(["modprobe", name])
        if rc != 0:
            module.fail_json(msg=f"modprobe {name} failed (rc {rc}): {err.strip() or out.strip()}")
    return True


def dmabuf_verdict(kernel: str, license_text: str | None) -> tuple[bool, str]:
    """Whether a host with this `uname -r` and nvidia module license (None: no module) can do dma-buf."""
    missing = []
    match = KERNEL_RELEASE.match(kernel)
    if match is None or (int(match.group(1)), int(match.group(2))) < DMABUF_MIN_KERNEL:
        missing.append(f"kernel {kernel} (< {'.'.join(map(str, DMABUF_MIN_KERNEL))})")
    if license_text is None:
        missing.append("no nvidia kernel module installed")
    elif license_text != OPEN_MODULE_LICENSE:
        missing.append(f"nvidia kernel module with license {license_text!r}, not the open one")
    if missing:
        return False, "no dma-buf: " + "; ".join(missing)
    return True, f"dma-buf: kernel {kernel}, open GPU kernel module (license {OPEN_MODULE_LICENSE})"


def read_dmabuf(module: AnsibleModule) -> tuple[bool, str]:
    """`uname -r` and `modinfo -F license nvidia` on the host, as host.gpudirect reads them."""
    rc, out, err = module.run_command(["uname", "-r"])
    if rc != 0 or not out.strip():
        module.fail_json(msg=f"uname -r failed (rc {rc}): {err.strip() or out.strip()}")
    kernel = out.strip().splitlines()[0].strip()
    rc, out, err = module.run_command(["modinfo", "-F", "license", "nvidia"])
    if rc != 0 and MODINFO_NOT_FOUND in err:
        return dmabuf_verdict(kernel, None)
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    if rc != 0 or len(lines) != 1:
        module.fail_json(msg=f"modinfo -F license nvidia failed (rc {rc}): {err.strip() or out.strip()}")
    return dmabuf_verdict(kernel, lines[0])


def ensure_boot_file(module: AnsibleModule, path: str, text: str, diff: dict) -> bool:
    before = read_text(path)
    changed = before != text
    if changed:
        diff.update(before=before or "", after=text, before_header=path, after_header=path)
        if not module.check_mode:
            write_atomic(module, path, text)
    if module.check_mode and before is None:
        return changed  # nothing on disk to own or chmod yet
    changed = module.set_owner_if_different(path, "root", changed)
    changed = module.set_group_if_different(path, "root", changed)
    return module.set_mode_if_different(path, BOOT_FILE_MODE, changed)


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    name, path = module.params["name"], module.params["boot_file"]
    if not MODULE_NAME.match(name):
        module.fail_json(msg=f"name: invalid kernel module name {name!r} (letters, digits, _ and -)")
    if not os.path.isabs(path):
        module.fail_json(msg=f"boot_file: {path!r} is not an absolute path")
    if module.params["skip_when_dmabuf"]:
        dmabuf, reason = read_dmabuf(module)
        if dmabuf:
            module.exit_json(
                changed=False, loaded=False, boot_file_changed=False, dmabuf=True, dmabuf_reason=reason
            )
        extra = {"dmabuf": False, "dmabuf_reason": reason}
    else:
        extra = {}
    loaded = ensure_loaded(module, name)
    file_diff: dict = {}
    file_changed = ensure_boot_file(module, path, boot_file_text(name, module.params["comment"]), file_diff)
    diffs = [file_diff] if file_diff else []
    if loaded:
        diffs.append({"before": f"{name}: not loaded\n", "after": f"{name}: loaded\n"})
    result = {"changed": loaded or file_changed, "loaded": loaded, "boot_file_changed": file_changed, **extra}
    module.exit_json(**result, **({"diff": diffs} if diffs else {}))


if __name__ == "__main__":
    main()
