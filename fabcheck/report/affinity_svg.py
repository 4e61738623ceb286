"""The GPU-NIC affinity picture of one host, as inline SVG: the `nvidia-smi topo -m` matrix with GPUs as
rows and NICs as columns, each cell printing the link class. The cell of each GPU's rail NIC (its
nearest NICs when the desired state names no rails) and the GPU's row label are filled with the verdict
of that GPU's `topo.gpu_nic_affinity` finding; pairs no check judged stay neutral."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from fabcheck.checks.model import Finding, Status
from fabcheck.checks.topo import CHECK as AFFINITY_CHECK
from fabcheck.report.model import Affinity
from fabcheck.report.palette import NEUTRAL, SOLID, UNJUDGED
from fabcheck.report.textsafe import xml_text

CELL_W, CELL_H = 84, 30
LABEL_W, HEADER_H, LEGEND_H, PAD = 72, 34, 34, 8


def judged_pairs(affinity: Affinity) -> dict[str, tuple[str, ...]]:
    """GPU label -> the NIC names its affinity finding is about."""
    topo = affinity.topo
    pairs: dict[str, tuple[str, ...]] = {}
    if affinity.rails:
        for index, nic in sorted(affinity.rails.items()):
            gpu = f"GPU{index}"
            if gpu in topo.gpus:
                pairs[gpu] = (nic,) if nic in topo.nics else ()
        return pairs
    for gpu in topo.gpus:
        pairs[gpu] = topo.nearest_nics(gpu)[0]
    return pairs


def gpu_verdicts(findings: Iterable[Finding]) -> dict[str, Status]:
    return {f.subject: f.status for f in findings if f.check == AFFINITY_CHECK}


def render(host: str, affinity: Affinity, findings: Iterable[Finding]) -> str:
    topo = affinity.topo
    verdicts = gpu_verdicts(findings)
    pairs = judged_pairs(affinity)
    width = PAD * 2 + LABEL_W + CELL_W * max(1, len(topo.nics))
    height = PAD * 2 + HEADER_H + CELL_H * len(topo.gpus) + LEGEND_H
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="affinity" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{_attr(host)} GPU-NIC affinity">',
        '<g font-family="sans-serif" font-size="12" text-anchor="middle" dominant-baseline="central">',
    ]
    for column, nic in enumerate(topo.nics):
        x = PAD + LABEL_W + column * CELL_W
        out.append(_text(x + CELL_W / 2, PAD + HEADER_H / 2, nic, weight="bold"))
    for row, gpu in enumerate(topo.gpus):
        y = PAD + HEADER_H + row * CELL_H
        status = verdicts.get(gpu)
        label_fill = SOLID[status] if status is not None else NEUTRAL
        out.append(_rect(PAD, y, LABEL_W, CELL_H, label_fill, f"{gpu}: {_said(status)}"))
        out.append(_text(PAD + LABEL_W / 2, y + CELL_H / 2, gpu, weight="bold", light=status is not None))
        for column, nic in enumerate(topo.nics):
            x = PAD + LABEL_W + column * CELL_W
            link = topo.link(gpu, nic)
            judged = nic in pairs.get(gpu, ())
            fill = (SOLID[status] if status is not None else UNJUDGED) if judged else NEUTRAL
            title = f"{gpu} - {nic}: {link}" + (f" ({_said(status)})" if judged else "")
            out.append(_rect(x, y, CELL_W, CELL_H, fill, title))
            out.append(_text(x + CELL_W / 2, y + CELL_H / 2, link, light=judged))
    out.append(_legend(PAD, height - PAD - LEGEND_H / 2))
    out += ["</g>", "</svg>"]
    return "\n".join(out)


def _said(status: Status | None) -> str:
    return "not judged" if status is None else status.value


def _rect(x: float, y: float, w: float, h: float, fill: str, title: str) -> str:
    return (
        f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" fill="{fill}" stroke="#ffffff" '
        f'stroke-width="2"><title>{_attr(title)}</title></rect>'
    )


def _text(x: float, y: float, text: str, weight: str = "normal", light: bool = False) -> str:
    colour = "#ffffff" if light else "#222222"
    return f'<text x="{x:g}" y="{y:g}" font-weight="{weight}" fill="{colour}">{_attr(text)}</text>'


def _legend(x: float, y: float) -> str:
    items = [(SOLID[Status.PASS], "pass"), (SOLID[Status.FAIL], "fail"), (SOLID[Status.ERROR], "error")]
    items.append((UNJUDGED, "not judged"))
    parts = []
    for index, (fill, name) in enumerate(items):
        left = x + index * 96
        parts.append(f'<rect x="{left:g}" y="{y - 7:g}" width="14" height="14" fill="{fill}"/>')
        parts.append(f'<text x="{left + 20:g}" y="{y:g}" text-anchor="start" fill="#222222">{name}</text>')
    return "\n".join(parts)


def _attr(text: str) -> str:
    return escape(xml_text(text), quote=True)
