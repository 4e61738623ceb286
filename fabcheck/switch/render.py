"""Render a desired switch state with the Jinja2 templates of its platform (`templates/<folder>/`, the
folder its record in fabcheck.intent.platforms names).

The templates only spell the desired record in the platform's terms: every value comes from the
record, none from a constant in a template. Undefined names are errors, never empty strings.
The output is always the whole switch: a push scoped to some concerns (`--tags pfc`) is narrowed by
the driver, against the running state (fabcheck.switch.concerns), never here.
"""

from __future__ import annotations

import functools
import importlib.resources
from dataclasses import dataclass
from pathlib import Path

import jinja2

from fabcheck.desired.switch import DesiredSwitch, Unrepresentable
from fabcheck.errors import FabcheckError
from fabcheck.intent.platforms import PLATFORMS, UnknownPlatform, platform_named


def _templates_dir() -> Path:
    """The switch templates: inside the installed package (the wheel ships the top-level templates/ as
    fabcheck/templates), else the checkout's templates/ next to the package (editable installs, tests)."""
    packaged = importlib.resources.files("fabcheck") / "templates"
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "templates"


TEMPLATES = _templates_dir()
ENTRY_TEMPLATE = "switch.j2"  # templates/<folder>/switch.j2 renders one whole switch


class RenderError(FabcheckError):
    """A platform without templates, or a template that cannot render the desired state."""


@dataclass(frozen=True)
class RenderedConfig:
    """What would be pushed: the platform's own config text (commands, CLI lines or CONFIG_DB JSON)."""

    switch: str
    platform: str
    text: str

    @property
    def lines(self) -> list[str]:
        return [line for line in self.text.splitlines() if line.strip()]


def template_folder(platform: str) -> Path:
    """templates/<folder>/ of the platform's record; a RenderError when it has no entry template."""
    try:
        folder = TEMPLATES / platform_named(platform).template_folder
    except UnknownPlatform as err:
        raise RenderError(str(err)) from None
    if not (folder / ENTRY_TEMPLATE).is_file():
        raise RenderError(
            f"platform {platform}: no {ENTRY_TEMPLATE} in {folder} (platforms: {', '.join(PLATFORMS)})"
        )
    return folder


@functools.cache
def _environment(platform: str) -> jinja2.Environment:
    folder = template_folder(platform)
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(folder)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # switch CLI text, not HTML
    )


def render_switch(desired: DesiredSwitch) -> RenderedConfig:
    """Pure: the desired state of one switch -> the whole config text its platform takes."""
    try:
        template = _environment(desired.platform).get_template(ENTRY_TEMPLATE)
        text = template.render(switch=desired)
    except jinja2.TemplateError as err:
        where = f"{getattr(err, 'filename', None) or desired.platform}:{getattr(err, 'lineno', '?')}"
        raise RenderError(f"{where}: cannot render switch {desired.name}: {err}") from None
    except Unrepresentable as err:
        where = f"platform {desired.platform}"
        raise RenderError(f"{where}: cannot render switch {desired.name}: {err}") from None
    return RenderedConfig(desired.name, desired.platform, text)
