"""The TimelineWidget as static HTML: totals per run, the span tree, hook decisions and
the latest rows, for a notebook read without a kernel and for ``to_html()``.

Only escaped text goes into the markup (``esc``), as in the live view, which shows
every payload as text. Streamed chunks are folded into one line per burst.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ._static_html import esc, static_block
from ._timeline_model import spans, totals
from ._timeline_summary import clip, fmt_ms, status, summary

__all__ = ["MAX_ROWS", "MAX_SPANS", "render"]

MAX_ROWS = 200
"""Rows (chunk bursts folded) shown, the newest."""
MAX_SPANS = 300
MAX_DECISIONS = 50

_CSS = """
.arknb-static-timeline { font-family: var(--jp-ui-font-family, system-ui, sans-serif); font-size: 13px;
  color: var(--jp-ui-font-color1, #1f2328); border: 1px solid var(--jp-border-color2, #d0d7de);
  border-radius: 6px; padding: 6px 10px; }
.arknb-static-timeline table { border-collapse: collapse; margin: 4px 0; }
.arknb-static .arknb-static-timeline th, .arknb-static .arknb-static-timeline td { text-align: left;
  padding: 1px 8px 1px 0; vertical-align: top; }
.arknb-static-timeline code { font-family: var(--jp-code-font-family, monospace); }
.arknb-static-timeline ul { margin: 2px 0; padding-left: 1.2em; }
.arknb-static-timeline .s-ok { color: var(--jp-success-color1, #2e7d32); }
.arknb-static-timeline .s-error { color: var(--jp-error-color1, #c62828); }
.arknb-static-timeline .s-denied { color: var(--jp-error-color1, #c62828); }
.arknb-static-timeline .s-deferred, .arknb-static-timeline .s-warn { color: var(--jp-warn-color1, #b26a00); }
.arknb-static-timeline .s-cancelled, .arknb-static-timeline .s-unfinished { color: var(--jp-ui-font-color2, #59636e); }
.arknb-static-timeline .muted { color: var(--jp-ui-font-color2, #59636e); }
"""

_STATUS_WORD = {"ok": "ok", "error": "error", "denied": "denied", "deferred": "deferred", "cancelled": "cancelled",
                "warn": "warning", "changed": "changed", "open": "running", "unfinished": "unfinished", "": ""}


def _status(state: str) -> str:
    word = _STATUS_WORD.get(state, state)
    return f'<span class="s-{esc(state)}">{esc(word)}</span>' if word else ""


def _totals_table(events: Sequence[Mapping[str, Any]], tree: list[dict[str, Any]]) -> str:
    runs = [s for s in tree if s["kind"] == "run"]
    if not runs:
        return ""
    head = ("<tr><th>run</th><th>status</th><th>duration</th><th>turns</th><th>tool calls</th>"
            "<th>tokens in</th><th>tokens out</th><th>errors</th></tr>")
    body = []
    for run in runs[-20:]:
        t = totals(events, run["run_id"])
        body.append(f"<tr><td><code>{esc(run['run_id'])}</code></td><td>{_status(run['status'])}</td>"
                    f"<td>{esc(fmt_ms(run['duration_ms']) or '…')}</td><td>{t['turns']}</td>"
                    f"<td>{t['tool_calls']}</td><td>{t['tokens_in']:,}</td><td>{t['tokens_out']:,}</td>"
                    f"<td>{t['errors']}</td></tr>")
    more = f'<p class="muted">{len(runs) - 20} earlier runs not listed.</p>' if len(runs) > 20 else ""
    return f"<table>{head}{''.join(body)}</table>{more}"


def _span_tree(tree: list[dict[str, Any]]) -> str:
    shown = tree[-MAX_SPANS:]
    ids = {s["id"] for s in shown}
    children: dict[Any, list[dict[str, Any]]] = {}
    for s in shown:
        children.setdefault(s["parent"] if s["parent"] in ids else None, []).append(s)

    def branch(parent: Any) -> str:
        items = []
        for s in children.get(parent, ()):
            duration = fmt_ms(s["duration_ms"]) if s["duration_ms"] is not None else "…"
            items.append(f"<li>{esc(s['kind'])} <code>{esc(s['label'])}</code> {_status(s['status'])} "
                         f'<span class="muted">{esc(duration)}</span>{branch(s["id"])}</li>')
        return f"<ul>{''.join(items)}</ul>" if items else ""

    skipped = len(tree) - len(shown)
    note = f'<p class="muted">{skipped} earlier spans not shown.</p>' if skipped else ""
    return note + branch(None)


def numbering(events: Sequence[Mapping[str, Any]]) -> Any:
    """``number(event)``: its place among its session's events here (1, 2, 3...), as the
    live view numbers them: the runtime's restore gap in sequences stays internal."""
    by_session: dict[str, set[int]] = {}
    for e in events:
        if isinstance(e.get("sequence"), int):
            by_session.setdefault(str(e.get("session_id") or ""), set()).add(e["sequence"])
    ranks = {sid: {seq: i + 1 for i, seq in enumerate(sorted(seqs))} for sid, seqs in by_session.items()}
    return lambda e: ranks.get(str(e.get("session_id") or ""), {}).get(e.get("sequence"), e.get("sequence"))


def _decisions(events: Sequence[Mapping[str, Any]], number: Any) -> str:
    found = [e for e in events if e.get("type") == "hook.decision"]
    if not found:
        return ""
    items = "".join(f"<li>{_status(status(e))} <code>#{esc(number(e))}</code> {esc(summary(e))}</li>"
                    for e in found[-MAX_DECISIONS:])
    return f"<h4>Hook decisions ({len(found)})</h4><ul>{items}</ul>"


def _folded_rows(events: Sequence[Mapping[str, Any]], limit: int) -> tuple[list[tuple[Mapping[str, Any], int, str]], int]:
    """The newest ``limit`` rows as (first event, count, summary), consecutive chunks of
    a run folded into one, and how many rows came before them. Walks back from the
    end, so a refresh costs the rows it shows, not the whole store."""
    rows: list[tuple[Mapping[str, Any], int, str]] = []
    i = len(events) - 1
    while i >= 0 and len(rows) < limit:
        e = events[i]
        if e.get("type") != "llm.chunk":
            rows.append((e, 1, summary(e)))
            i -= 1
            continue
        j = i
        run = e.get("run_id")
        while j >= 0 and events[j].get("type") == "llm.chunk" and events[j].get("run_id") == run:
            j -= 1
        first = events[j + 1]
        head = []
        size = 0
        for k in range(j + 1, min(i + 1, j + 41)):  # the burst's first words are enough
            text = str((events[k].get("payload") or {}).get("text") or "")
            head.append(text)
            size += len(text)
            if size >= 200:
                break
        rows.append((first, i - j, f"{i - j} chunks: {clip(''.join(head), 100)}"))
        i = j
    rows.reverse()
    earlier = 0 if i < 0 else _count_rows(events, i + 1)
    return rows, earlier


def _count_rows(events: Sequence[Mapping[str, Any]], stop: int) -> int:
    """How many folded rows the events before ``stop`` make."""
    count, previous = 0, None
    for e in events[:stop]:
        key = ("chunk", e.get("run_id")) if e.get("type") == "llm.chunk" else None
        if key is None or key != previous:
            count += 1
        previous = key
    return count


def _rows(events: Sequence[Mapping[str, Any]], t0: float, number: Any) -> str:
    shown, earlier = _folded_rows(events, MAX_ROWS)
    body = []
    for e, count, text in shown:
        t = e.get("timestamp")
        rel = f"+{float(t) - t0:.3f}s" if isinstance(t, (int, float)) else ""
        etype = "llm.chunk ×" + str(count) if count > 1 else str(e.get("type"))
        body.append(f'<tr><td class="muted">{esc(rel)}</td><td class="muted">#{esc(number(e))}</td>'
                    f"<td><code>{esc(etype)}</code></td><td>{_status(status(e))} {esc(text)}</td></tr>")
    note = f'<p class="muted">{earlier:,} earlier rows not shown.</p>' if earlier else ""
    return f"<h4>Events</h4>{note}<table>{''.join(body)}</table>"


def render(events: Sequence[Mapping[str, Any]], static_id: str, *, older: int = 0, in_store: bool = False) -> str:
    """The static HTML of a timeline over ``events`` (dicts); ``older`` counts events
    the widget no longer keeps; ``in_store``: older events are in the session's store."""
    tree = spans(events)
    t0 = min((float(e["timestamp"]) for e in events if isinstance(e.get("timestamp"), (int, float))), default=0.0)
    all_totals = totals(events)
    head = (f"<strong>Timeline</strong> · {len(events):,} events · {all_totals['runs']} run"
            f"{'s' if all_totals['runs'] != 1 else ''} · {all_totals['tool_calls']} tool calls · "
            f"{all_totals['tokens_in']:,} in / {all_totals['tokens_out']:,} out tokens · "
            f"{all_totals['errors']} errors")
    if older:
        head += f' <span class="muted">({older:,} older events not kept)</span>'
    elif in_store:
        head += ' <span class="muted">(older events are in the store)</span>'
    if not events:
        body = f"<div>{head}</div><p class=\"muted\">No events yet.</p>"
    else:
        number = numbering(events)
        body = (f"<div>{head}</div>{_totals_table(events, tree)}<h4>Spans</h4>{_span_tree(tree)}"
                f"{_decisions(events, number)}{_rows(events, t0, number)}")
    body += ('<p class="muted">Static summary of an arknb TimelineWidget; run the notebook for the live, '
             "filterable view.</p>")
    return static_block(static_id, f'<div class="arknb-static-timeline">{body}</div>', css=_CSS)
