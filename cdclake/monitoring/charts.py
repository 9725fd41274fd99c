"""Small trend charts as inline SVG, drawn on the server: no script, no CDN, nothing to download.

A chart is a polyline over the last batches (a missing value breaks the line), with the newest
point marked and, for the larger chart, the maximum and the newest value written beside it.
"""

from __future__ import annotations

from html import escape
from typing import Any


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _points(values: list[float | None], width: float, height: float, pad: float) -> list[list[tuple[float, float]]]:
    """Runs of (x, y) for the non-missing values, scaled to the box (0 at the bottom)."""
    top = max((v for v in values if v is not None), default=0.0) or 1.0
    step = (width - 2 * pad) / max(len(values) - 1, 1)
    runs: list[list[tuple[float, float]]] = [[]]
    for i, value in enumerate(values):
        if value is None:
            if runs[-1]:
                runs.append([])
            continue
        y = height - pad - (max(value, 0.0) / top) * (height - 2 * pad)
        runs[-1].append((round(pad + i * step, 1), round(y, 1)))
    return [r for r in runs if r]


def sparkline(
    values: list[Any], *, title: str, width: int = 96, height: int = 22, color: str = "#3b6ea8", label: str = ""
) -> str:
    """A tiny line chart of ``values`` (oldest first); ``title`` is its tooltip and accessible name."""
    numbers = [_number(v) for v in values]
    shapes = []
    runs = _points(numbers, width, height, 2)
    for run in runs:
        if len(run) == 1:
            x, y = run[0]
            shapes.append(f'<circle cx="{x}" cy="{y}" r="1.5" fill="{color}"/>')
        else:
            pts = " ".join(f"{x},{y}" for x, y in run)
            shapes.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.5"/>')
    if runs:
        x, y = runs[-1][-1]
        shapes.append(f'<circle cx="{x}" cy="{y}" r="2" fill="{color}"/>')
    if not shapes:
        shapes.append(f'<line x1="2" y1="{height - 2}" x2="{width - 2}" y2="{height - 2}" stroke="#c9d1d9"/>')
    name = escape(title, quote=True)
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{name}" data-chart="{escape(label, quote=True)}"><title>{name}</title>{"".join(shapes)}</svg>'
    )


def chart(values: list[Any], *, title: str, label: str, unit: str = "", color: str = "#3b6ea8") -> str:
    """A larger chart with its name, the newest value and the maximum, for the drill-down page."""
    numbers = [_number(v) for v in values]
    present = [v for v in numbers if v is not None]
    newest = next((v for v in reversed(numbers) if v is not None), None)

    def show(v: float | None) -> str:
        if v is None:
            return "—"
        text = f"{v:,.0f}" if abs(v) >= 100 or v == int(v) else f"{v:,.1f}"
        return f"{text}{unit}"

    caption = f"{escape(title)}: last {escape(show(newest))}, max {escape(show(max(present) if present else None))}"
    svg = sparkline(
        values, title=f"{title} over the last {len(values)} batches", width=240, height=56, color=color, label=label
    )
    return f'<figure class="chart"><figcaption>{caption}</figcaption>{svg}</figure>'
