"""A graph as SVG, laid out in the kernel: no JavaScript layout engine, no CDN.

The layout is a small layered one (Sugiyama's method, cut down): edges that close a
cycle are set aside, each node gets the layer of its longest path from ``START``, the
nodes of a layer are ordered by the mean position of their neighbours (a few sweeps
down and up), and layers are drawn top to bottom. Edges set aside are drawn as arcs
on the right. It is plenty for workflow graphs of a few dozen nodes; it makes no claim
to be optimal.

The same SVG is the graph's ``_repr_html_``, the GraphWidget's picture and its static
copy in a saved notebook. Each node carries ``data-node`` and ``data-status``, each edge
``data-edge`` and ``data-taken``, for the widget's styles and for tests.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["STATUS_COLOURS", "graph_svg", "layout"]

START, END = "__start__", "__end__"
STATUS_COLOURS = {
    "pending": ("#f4f4f5", "#a1a1aa"), "running": ("#dbeafe", "#2563eb"), "completed": ("#dcfce7", "#16a34a"),
    "failed": ("#fee2e2", "#dc2626"), "waiting": ("#fef3c7", "#d97706"), "cancelled": ("#e4e4e7", "#52525b"),
}
_W, _H, _GAP_X, _GAP_Y, _PAD = 132, 38, 36, 58, 24
_KIND_TAG = {"agent": "agent", "human": "person", "map": "map"}  # plain words: no emoji font needed


def layout(nodes: list[str], edges: list[tuple[str, str]]) -> tuple[dict[str, tuple[float, float]], set[tuple[str, str]]]:
    """``(positions, back_edges)``: the centre of each node, and the edges drawn as arcs."""
    out: dict[str, list[str]] = {n: [] for n in nodes}
    for s, t in edges:
        if s in out and t in out and t not in out[s]:
            out[s].append(t)
    back: set[tuple[str, str]] = set()
    state: dict[str, int] = {}

    def dfs(v: str) -> None:
        stack = [(v, iter(out[v]))]
        state[v] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                back.add((node, nxt))
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(out[nxt])))

    for root in [START] + [n for n in nodes if n != START]:
        if root in out and root not in state:
            dfs(root)
    forward = [(s, t) for s in out for t in out[s] if (s, t) not in back]
    rank = {n: 0 for n in nodes}
    for _ in range(len(nodes)):  # longest path (the forward edges make a DAG)
        changed = False
        for s, t in forward:
            if rank[t] < rank[s] + 1:
                rank[t] = rank[s] + 1
                changed = True
        if not changed:
            break
    if END in rank:
        rank[END] = max(rank.values()) if len(rank) > 1 else 0
        if any(rank[s] >= rank[END] for s, t in forward if t == END) or rank[END] == 0:
            rank[END] = max(rank[n] for n in rank if n != END) + 1
    layers: dict[int, list[str]] = {}
    for n in nodes:
        layers.setdefault(rank[n], []).append(n)
    order = {n: i for layer in layers.values() for i, n in enumerate(layer)}
    preds: dict[str, list[str]] = {n: [] for n in nodes}
    succs: dict[str, list[str]] = {n: [] for n in nodes}
    for s, t in forward:
        preds[t].append(s)
        succs[s].append(t)
    for sweep in range(4):
        keys = sorted(layers) if sweep % 2 == 0 else sorted(layers, reverse=True)
        for r in keys:
            near = preds if sweep % 2 == 0 else succs
            layer = layers[r]
            layer.sort(key=lambda n: (sum(order[m] for m in near[n]) / len(near[n])) if near[n] else order[n])
            for i, n in enumerate(layer):
                order[n] = i
    widest = max(len(layer) for layer in layers.values())
    positions = {}
    for r, layer in layers.items():
        offset = (widest - len(layer)) * (_W + _GAP_X) / 2
        for i, n in enumerate(layer):
            positions[n] = (_PAD + offset + i * (_W + _GAP_X) + _W / 2, _PAD + r * (_H + _GAP_Y) + _H / 2)
    return positions, back


def graph_svg(described: dict[str, Any], run: dict[str, Any] | None = None) -> str:
    """The SVG (inside a ``<div>``) of ``Graph.describe()``, coloured by ``run`` (a
    ``GraphRun.snapshot()``) when given: status per node, the edges taken in bold, the
    node waiting for a person outlined."""
    kinds = {n["name"]: n["kind"] for n in described["nodes"]}
    names = [START] + list(kinds) + [END]
    edges = [(e["source"], e["target"]) for e in described["edges"] if e["target"] != "?"]
    routed = {(e["source"], e["target"]) for e in described["edges"] if e["kind"] == "route"}
    open_routes = {e["source"] for e in described["edges"] if e["target"] == "?"}
    positions, back = layout(names, edges)
    statuses = (run or {}).get("node_status", {})
    taken = {tuple(e) for e in (run or {}).get("taken", ())}
    waiting = set((run or {}).get("waiting", ()))
    width = max(x for x, _ in positions.values()) + _W / 2 + _PAD + 40
    height = max(y for _, y in positions.values()) + _H / 2 + _PAD
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="arknb-graph-svg" width="{width:.0f}" '
             f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" role="img" '
             f'aria-label="graph {html.escape(described["name"])}" font-family="system-ui, sans-serif" font-size="13">',
             '<defs><marker id="arknb-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" markerHeight="9" '
             'markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#52525b"/></marker></defs>']
    for s, t in edges:
        (x1, y1), (x2, y2) = positions[s], positions[t]
        is_taken = (s, t) in taken
        if (s, t) in back or y2 <= y1:
            bend = max(x1, x2) + _W / 2 + 30
            d = f"M{x1 + _W / 2:.1f},{y1:.1f} C{bend:.1f},{y1:.1f} {bend:.1f},{y2:.1f} {x2 + _W / 2:.1f},{y2:.1f}"
        else:
            sy, ty = y1 + _H / 2, y2 - _H / 2
            mid = (sy + ty) / 2
            d = f"M{x1:.1f},{sy:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{ty:.1f}"
        dash = ' stroke-dasharray="5 4"' if (s, t) in routed else ""
        stroke, w = ("#18181b", 2.6) if is_taken else ("#a1a1aa", 1.4)
        parts.append(f'<path d="{d}" fill="none" stroke="{stroke}" stroke-width="{w}"{dash} '
                     f'marker-end="url(#arknb-arrow)" data-edge="{html.escape(s)}->{html.escape(t)}" '
                     f'data-taken="{int(is_taken)}"/>')
    for name in names:
        x, y = positions[name]
        status = statuses.get(name, "pending")
        fill, stroke = STATUS_COLOURS.get(status, STATUS_COLOURS["pending"])
        label = {START: "START", END: "END"}.get(name, name)
        esc = html.escape(name)
        if name in (START, END):
            parts.append(f'<g data-node="{esc}" data-status="{status}"><rect x="{x - 34:.1f}" y="{y - 14:.1f}" '
                         f'width="68" height="28" rx="14" fill="{fill}" stroke="{stroke}"/>'
                         f'<text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle" fill="#3f3f46" '
                         f'font-size="11" font-weight="600">{label}</text></g>')
            continue
        kind = kinds.get(name, "function")
        ring = (f'<rect x="{x - _W / 2 - 4:.1f}" y="{y - _H / 2 - 4:.1f}" width="{_W + 8}" height="{_H + 8}" rx="10" '
                f'fill="none" stroke="#d97706" stroke-width="2" stroke-dasharray="4 3"/>') if name in waiting else ""
        shape = "4" if kind != "human" else "19"
        tag = (f'<tspan fill="#71717a" font-size="10"> · {_KIND_TAG[kind]}</tspan>' if kind in _KIND_TAG else "")
        more = '<text x="{:.1f}" y="{:.1f}" fill="#71717a" font-size="11">?→</text>'.format(
            x + _W / 2 + 4, y + 4) if name in open_routes else ""
        parts.append(f'<g data-node="{esc}" data-status="{status}" data-kind="{kind}">{ring}'
                     f'<rect x="{x - _W / 2:.1f}" y="{y - _H / 2:.1f}" width="{_W}" height="{_H}" rx="{shape}" '
                     f'fill="{fill}" stroke="{stroke}" stroke-width="1.6"/>'
                     f'<text x="{x:.1f}" y="{y + 4.5:.1f}" text-anchor="middle" fill="#18181b">{esc}{tag}</text>'
                     f'<title>{esc} ({kind}): {status}</title></g>{more}')
    parts.append("</svg>")
    title = html.escape(described["name"])
    status = f' · {html.escape(str(run.get("status")))}' if run else ""
    return (f'<div class="arknb-graph" data-graph="{title}"><div style="font:600 12px system-ui, sans-serif;'
            f'color:#3f3f46;margin:2px 0 4px">graph {title}{status}</div>{"".join(parts)}</div>')
