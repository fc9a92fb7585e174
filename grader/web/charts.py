"""Bar charts drawn on the server, as inline SVG: no script, no library, nothing fetched.

Each chart is one image to assistive technology (role="img", named by its <title> and
described by its <desc> through aria-labelledby), carries its numbers as text on the
bars, and sits beside a table of the same numbers on the page. Every text in it is
escaped here; colours are presentation attributes (the CSP allows no inline style).

A chart is as wide as its box and its text keeps its size (no viewBox scales it): bars
are laid out in percents of the width, and every label is written whole, wrapped onto
as many lines as it needs for the narrowest screen (a phone's), never cut."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from markupsafe import Markup, escape

BLUE, RED, GREEN = "#0b57d0", "#a4161a", "#0a6b2b"  # the site's link, fail and pass colours (style.css)
INK, MUTED = "#1a1a1a", "#4a4a4a"
FONT = 14          # px
LINE = 18          # px: a line of text
BAR = 16           # px: one bar's height
GAP = 14           # px: between two labels' groups of bars
NARROW = 8         # px a narrow character takes at most (a wide one, Hangul say, twice that)
PHONE = 340        # px of page a phone (390 px wide) leaves a chart
ROOM = 40          # narrow characters a line holds: 320 px, within a phone's width
PLOT = 85          # percent of the width the longest bar takes; the rest holds its value


@dataclass(frozen=True)
class Series:
    name: str
    values: list[float]
    fill: str = BLUE


def _number(value: float) -> str:
    return f"{value:g}"


def _width(text: str) -> int:
    """In narrow characters: a wide one (Hangul, say) counts two."""
    return sum(2 if ord(char) >= 0x1100 else 1 for char in text)


def wrap(text: str, room: int = ROOM) -> list[str]:
    """The whole of ``text`` on lines of at most ``room`` narrow characters, broken between
    words, and inside a word only where the word alone is longer than a line."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        while _width(word) > room:  # too long for any line: as much as fits, then the rest
            if line:
                lines.append(line)
                line = ""
            cut, used = 0, 0
            while used + _width(word[cut]) <= room:
                used += _width(word[cut])
                cut += 1
            lines.append(word[:cut])
            word = word[cut:]
        if not word:
            continue
        if line and _width(line) + 1 + _width(word) > room:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line or not lines:
        lines.append(line)
    return lines


def _svg(chart_id: str, title: str, desc: str, height: int, body: list[str]) -> Markup:
    ident = escape(chart_id)
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'aria-labelledby="{ident}-title {ident}-desc" width="100%" height="{height}" '
        f'font-size="{FONT}" font-family="system-ui, sans-serif">'
        f'<title id="{ident}-title">{escape(title)}</title><desc id="{ident}-desc">{escape(desc)}</desc>'
        + "".join(body) + "</svg>")


def _legend(series: list[Series]) -> list[str]:
    """One line per series: a phone has no room for two side by side."""
    return [f'<rect x="0" y="{i * LINE + 3}" width="12" height="12" fill="{escape(s.fill)}"/>'
            f'<text x="18" y="{i * LINE + 14}" fill="{INK}">{escape(s.name)}</text>'
            for i, s in enumerate(series)]


def _lines(texts: list[str], y: int, fill: str) -> list[str]:
    return [f'<text x="0" y="{y + (k + 1) * LINE - 4}" fill="{fill}">{escape(line)}</text>'
            for k, line in enumerate(texts)]


def bars(chart_id: str, title: str, desc: str, labels: list[str], series: list[Series], *, most: float,
         unit: str = "", shown: Callable[[float], str] = _number, notes: list[str] | None = None,
         beside: int = 0) -> Markup:
    """Horizontal bars, one group per label and one bar per series in it, each bar with its
    value at its end; ``most`` is the full length (100 for percents). Each label is written
    whole above its bars, wrapped, with its note (if any) in grey under it; ``beside`` (a
    percent of the width) puts short labels to the left of their bars instead, where every
    label fits there on a phone."""
    if beside and any(_width(label) * NARROW > beside * PHONE // 100 for label in labels):
        beside = 0
    start = beside + 2 if beside else 0    # percent of the width where the bars begin
    length_room = PLOT - start
    y = LINE * len(series) + 8 if len(series) > 1 else 0
    body = _legend(series) if len(series) > 1 else []
    for i, label in enumerate(labels):
        texts = "; ".join(f"{s.name} {shown(s.values[i])}{unit}" for s in series)
        note = notes[i] if notes else ""
        body.append(f'<g><title>{escape(label)}{escape(" (" + note + ")") if note else ""}: '
                    f'{escape(texts)}</title>')
        if beside:
            body.append(f'<text x="0" y="{y + BAR * len(series) // 2 + 5}" fill="{INK}">{escape(label)}</text>')
        else:
            above = wrap(label)
            body += _lines(above, y, INK)
            y += LINE * len(above)
            if note:
                below = wrap(note)
                body += _lines(below, y, MUTED)
                y += LINE * len(below)
            y += 2
        for j, s in enumerate(series):
            value = s.values[i]
            length = round(length_room * min(max(value, 0), most) / most, 2) if most else 0
            top = y + j * BAR
            body.append(f'<rect x="{start}%" y="{top + 1}" width="{length}%" height="{BAR - 2}" '
                        f'fill="{escape(s.fill)}"/>'
                        f'<text x="{round(start + length, 2)}%" dx="4" y="{top + BAR - 3}" fill="{INK}">'
                        f'{escape(shown(value) + unit)}</text>')
        body.append("</g>")
        y += BAR * len(series) + GAP
    return _svg(chart_id, title, desc, max(y - GAP + 4, LINE), body)
