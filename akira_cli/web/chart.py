"""Tokens and cost over the night as an inline SVG, with the budget's line when it has one. The
points go with it (`data-points`), so the page's script draws it again as the stream brings
LLM calls and the run's totals after each step (`assets.py`, the same scales)."""

from __future__ import annotations

import json
from html import escape

from akira_cli.web.timeline import Point, seconds_between

WIDTH, HEIGHT, PAD = 600, 180, 30


def chart(start: str, points: list[Point], now: Point, max_tokens: int | None, max_cost: float | None) -> str:
    """Two lines over the run's time from `start` (cost solid, tokens dashed), each against its
    own budget (the dotted line at the top of its scale, when there is one)."""
    series = [Point(start, 0, 0.0), *points, now]
    start = series[0].ts
    xs = [max(0.0, seconds_between(start, point.ts) or 0.0) for point in series]
    span = max(xs[-1], 1.0)
    shown = json.dumps(
        [[round(xv, 3), p.tokens, round(p.cost_usd, 6)] for xv, p in zip(xs, series, strict=True)]
    )
    parts = [
        f'<svg id="usage-chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="cost and tokens over time" data-start="{escape(start)}" data-points="{escape(shown)}" '
        f'data-max-tokens="{max_tokens if max_tokens is not None else ""}" '
        f'data-max-cost="{max_cost if max_cost is not None else ""}">',
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#fff" stroke="#d0d7de"/>',
    ]
    for name, values, cap, style in (
        ("cost", [p.cost_usd for p in series], max_cost, 'stroke="#0969da" stroke-width="2"'),
        ("tokens", [float(p.tokens) for p in series], max_tokens, 'stroke="#8250df" stroke-dasharray="5 3"'),
    ):
        top = max([*values, float(cap or 0), 1e-9])
        path = " ".join(f"{x(xv, span):.1f},{y(v, top):.1f}" for xv, v in zip(xs, values, strict=True))
        parts.append(f'<polyline class="{name}" fill="none" {style} points="{path}"/>')
        if cap is not None:
            parts.append(
                f'<line class="budget budget-{name}" x1="{PAD}" x2="{WIDTH - 5}" y1="{y(cap, top):.1f}" '
                f'y2="{y(cap, top):.1f}" stroke="#cf222e" stroke-dasharray="2 3"/>'
            )
    label = f"${now.cost_usd:.4f}, {now.tokens:,} tokens"
    caps = ", ".join(
        text
        for text in (
            f"budget ${max_cost}" if max_cost is not None else "",
            f"budget {max_tokens:,} tokens" if max_tokens is not None else "",
        )
        if text
    )
    parts.append(f'<text class="usage-label" x="{PAD}" y="16" font-size="12">{escape(label)}</text>')
    if caps:
        parts.append(f'<text x="{WIDTH - 5}" y="16" font-size="12" text-anchor="end">{escape(caps)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def x(seconds: float, span: float) -> float:
    return PAD + (WIDTH - PAD - 5) * seconds / span


def y(value: float, top: float) -> float:
    return HEIGHT - PAD + (-(HEIGHT - 2 * PAD) * value / top)
