"""Bar charts drawn on the server, as inline SVG: no script, no library, nothing fetched.

Each chart is one image to assistive technology (role="img", named by its <title> and
described by its <desc> through aria-labelledby), carries its numbers as text on the
bars, and sits beside a table of the same numbers on the page. Every text in it is
escaped here; colours are presentation attributes (the CSP allows no inline style)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from markupsafe import Markup, escape

BLUE, RED, GREEN = "#0b57d0", "#a4161a", "#0a6b2b"  # the site's link, fail and pass colours (style.css)
WIDTH = 640
FONT = 14


@dataclass(frozen=True)
class Series:
    name: str
    values: list[float]
    fill: str = BLUE


def _number(value: float) -> str:
    return f"{value:g}"


def _clip(text: str, room: int) -> str:
    """At most ``room`` narrow characters' width (a wide one, Hangul say, counts two)."""
    used = 0
    for i, char in enumerate(text):
        used += 2 if ord(char) >= 0x1100 else 1
        if used > room:
            return text[:i].rstrip() + "…"
    return text


def _svg(chart_id: str, title: str, desc: str, height: int, body: list[str]) -> Markup:
    ident = escape(chart_id)
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'aria-labelledby="{ident}-title {ident}-desc" viewBox="0 0 {WIDTH} {height}" width="100%" '
        f'preserveAspectRatio="xMinYMin meet" font-size="{FONT}" font-family="system-ui, sans-serif">'
        f'<title id="{ident}-title">{escape(title)}</title><desc id="{ident}-desc">{escape(desc)}</desc>'
        + "".join(body) + "</svg>")


def _legend(series: list[Series], y: int) -> list[str]:
    out, x = [], 0
    for s in series:
        out.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{escape(s.fill)}"/>'
                   f'<text x="{x + 18}" y="{y + 11}" fill="#1a1a1a">{escape(s.name)}</text>')
        x += 30 + 8 * len(s.name)
    return out


def columns(chart_id: str, title: str, desc: str, labels: list[str], values: list[float], *,
            fill: str = BLUE) -> Markup:
    """Vertical bars, one per label (a histogram's bins), each with its value above it."""
    top, plot, bottom = 20, 160, 24
    most = max(values, default=0) or 1
    slot = WIDTH / max(len(values), 1)
    body = [f'<line x1="0" y1="{top + plot}" x2="{WIDTH}" y2="{top + plot}" stroke="#767676"/>']
    for i, (label, value) in enumerate(zip(labels, values)):
        height = round(plot * value / most, 1)
        x, middle = round(i * slot + slot * 0.15, 1), round(i * slot + slot / 2, 1)
        body.append(f'<g><title>{escape(label)}: {escape(_number(value))}</title>'
                    f'<rect x="{x}" y="{top + plot - height}" width="{round(slot * 0.7, 1)}" height="{height}" '
                    f'fill="{escape(fill)}"/>'
                    f'<text x="{middle}" y="{top + plot - height - 4}" text-anchor="middle" fill="#1a1a1a">'
                    f'{escape(_number(value))}</text>'
                    f'<text x="{middle}" y="{top + plot + 17}" text-anchor="middle" fill="#4a4a4a">'
                    f'{escape(_clip(label, 12))}</text></g>')
    return _svg(chart_id, title, desc, top + plot + bottom, body)


def bars(chart_id: str, title: str, desc: str, labels: list[str], series: list[Series], *, most: float,
         unit: str = "", shown: Callable[[float], str] = _number) -> Markup:
    """Horizontal bars, one row per label and one bar per series in it, each bar with its
    value at its end; ``most`` is the full length (100 for percents)."""
    label_room, bar_room, bar, gap = 230, 340, 16, 12
    legend = 24 if len(series) > 1 else 0
    row = bar * len(series) + gap
    body = _legend(series, 0) if legend else []
    for i, label in enumerate(labels):
        y = legend + i * row
        texts = "; ".join(f"{s.name} {shown(s.values[i])}{unit}" for s in series)
        body.append(f'<g><title>{escape(label)}: {escape(texts)}</title>'
                    f'<text x="0" y="{y + bar * len(series) / 2 + 4}" fill="#1a1a1a">{escape(_clip(label, 30))}</text>')
        for j, s in enumerate(series):
            value = s.values[i]
            length = round(bar_room * min(value, most) / most, 1) if most else 0
            top = y + j * bar
            body.append(f'<rect x="{label_room}" y="{top + 1}" width="{length}" height="{bar - 2}" '
                        f'fill="{escape(s.fill)}"/>'
                        f'<text x="{label_room + length + 4}" y="{top + bar - 4}" fill="#1a1a1a">'
                        f'{escape(shown(value) + unit)}</text>')
        body.append("</g>")
    return _svg(chart_id, title, desc, legend + len(labels) * row, body)
