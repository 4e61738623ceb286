"""Write a file the planner produces (inventory, Markdown) without following a link or clobbering one.

A path the user names may hold a symbolic link (dangling or not): writing through it would put the file
somewhere else, and with --overwrite replace the link's target. So a link is refused, an existing file is
refused unless overwriting, a new file is created with O_CREAT|O_EXCL|O_NOFOLLOW (a link or file that
appears meanwhile fails it), and an overwrite writes a temporary file in the same directory and renames it
over the old one (os.replace replaces the directory entry, never a link's target).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fabcheck.fabricplan.model import PlanError

NEW_FILE_MODE = 0o644  # as write_text would create it (before the umask)


def refuse_unsafe(path: Path, option: str, overwrite: bool, hint: str) -> None:
    """PlanError (one line naming `option`) when `path` is a link, not a plain file, or exists and
    `overwrite` is not set; `hint` says how to overwrite."""
    if path.is_symlink():
        raise PlanError(f"{option}: {path} is a symbolic link; not written through it (remove the link)")
    if os.path.lexists(path):
        if not path.is_file():
            raise PlanError(f"{option}: {path} exists and is not a plain file; not written")
        if not overwrite:
            raise PlanError(f"{option}: {path} exists; not overwritten {hint}")


def write_safely(path: Path, text: str, option: str, overwrite: bool, hint: str) -> None:
    """Write `text` to `path` as the module docstring says; PlanError naming `option` otherwise."""
    refuse_unsafe(path, option, overwrite, hint)
    data = text.encode("utf-8")
    try:
        if not overwrite:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, NEW_FILE_MODE)
            except FileExistsError:
                refuse_unsafe(path, option, overwrite, hint)  # appeared meanwhile: say what it is
                raise
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            return
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, NEW_FILE_MODE & ~umask)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as error:
        raise PlanError(f"{option}: cannot write {path}: {error.strerror or error}") from None
