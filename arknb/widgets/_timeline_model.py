"""Rows, nested spans and per-run totals derived from event dicts (the timeline's model).

Spans nest the way a run unfolds: a run holds its turns, a turn its model calls and
tool calls; a run resumed after an approval (``agent.resumed``) gets its own run span;
a sub-run (an event envelope with ``parent_run_id``/``parent_call_id``, DESIGN §14)
nests under the tool call that started it. A tool call deferred for approval shows as
a zero-length ``deferred`` tool span in the turn that asked for it.

``js/src/lib/timeline_index.js`` builds the same spans incrementally in the browser;
this module is the reference the Python tests pin down, what ``TimelineWidget.spans()``
returns and what the static HTML draws.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._payload import call_fields
from ._timeline_summary import status, summary, usage_of

__all__ = ["RUN_END", "call_id_of", "parent_of", "rows", "spans", "totals"]

RUN_END = {"agent.success": "ok", "agent.error": "error", "agent.cancelled": "cancelled",
           "agent.suspended": "deferred", "agent.aborted": "error"}
"""Event types that end a run, and the status they give its span."""


def _t(event: Mapping[str, Any]) -> float:
    value = event.get("timestamp")
    return float(value) if isinstance(value, (int, float)) else 0.0


def _payload(event: Mapping[str, Any]) -> Mapping[str, Any]:
    p = event.get("payload")
    return p if type(p) is dict or isinstance(p, Mapping) else {}


def call_id_of(event: Mapping[str, Any]) -> str | None:
    """The tool call an event is about (``call.id``, ``call_id``), if any."""
    p = _payload(event)
    if isinstance(p.get("call_id"), str):
        return p["call_id"]
    if p.get("call") is not None:
        return call_fields(p.get("call"))["id"] or None
    return None


def parent_of(event: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """``(parent_run_id, parent_call_id)`` of a sub-run's event (envelope first, then payload)."""
    p = _payload(event)
    run = event.get("parent_run_id") or p.get("parent_run_id")
    call = event.get("parent_call_id") or p.get("parent_call_id")
    return (run if isinstance(run, str) else None), (call if isinstance(call, str) else None)


def rows(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per event: index, sequence, type, run, relative seconds, summary, status."""
    events = list(events)
    t0 = min((_t(e) for e in events), default=0.0)
    return [{"index": i, "sequence": e.get("sequence"), "type": e.get("type"), "run_id": e.get("run_id"),
             "t": _t(e) - t0, "summary": summary(e), "status": status(e)} for i, e in enumerate(events)]


class _Builder:
    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.out: list[dict[str, Any]] = []
        self.runs: dict[str, dict[str, Any]] = {}       # run id -> its run span
        self.turns: dict[str, dict[str, Any]] = {}      # run id -> its open turn span
        self.models: dict[str, dict[str, Any]] = {}     # run id -> its open model span
        self.tools: dict[tuple[str, str], dict[str, Any]] = {}  # (run, call id) -> latest tool span

    def open(self, kind: str, label: str, e: Mapping[str, Any], pos: int, parent: dict[str, Any] | None,
             **extra: Any) -> dict[str, Any]:
        span = {"id": len(self.out), "kind": kind, "label": label, "run_id": str(e.get("run_id")),
                "parent": parent["id"] if parent else None, "depth": parent["depth"] + 1 if parent else 0,
                "start": _t(e) - self.t0, "end": None, "duration_ms": None, "status": "open",
                "start_seq": e.get("sequence"), "end_seq": None, "start_index": pos, "end_index": None, **extra}
        self.out.append(span)
        return span

    def close(self, span: dict[str, Any] | None, e: Mapping[str, Any], pos: int, state: str) -> None:
        if span is None or span["end"] is not None:
            return
        span.update(end=_t(e) - self.t0, end_seq=e.get("sequence"), end_index=pos, status=state)
        span["duration_ms"] = round((span["end"] - span["start"]) * 1000, 3)

    def run_of(self, e: Mapping[str, Any], pos: int) -> dict[str, Any]:
        rid = str(e.get("run_id"))
        span = self.runs.get(rid)
        if span is None:  # the window starts inside this run
            span = self.start_run(e, pos, f"run {rid} (partial)")
        return span

    def start_run(self, e: Mapping[str, Any], pos: int, label: str) -> dict[str, Any]:
        rid = str(e.get("run_id"))
        parent_run, parent_call = parent_of(e)
        parent = None
        if parent_run is not None:
            parent = self.tools.get((parent_run, parent_call or "")) or self.runs.get(parent_run)
        span = self.open("run", label, e, pos, parent)
        self.runs[rid] = span
        return span

    def parent_for_call(self, rid: str, e: Mapping[str, Any], pos: int) -> dict[str, Any]:
        return self.turns.get(rid) or self.run_of(e, pos)

    def end_run(self, e: Mapping[str, Any], pos: int, state: str) -> None:
        rid = str(e.get("run_id"))
        run = self.run_of(e, pos)
        # What is still open ends with the run: as it ended, when that was a success or
        # a pause for approval; otherwise it never finished.
        inner = state if state in ("ok", "deferred") else "unfinished"
        for span in self.out:
            if span["run_id"] == rid and span["end"] is None and span is not run:
                self.close(span, e, pos, inner)
        self.turns.pop(rid, None)
        self.models.pop(rid, None)
        self.close(run, e, pos, state)


def spans(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Nested spans: runs, turns, model calls and tool calls, in order of start.

    Each span has ``id``, ``kind`` (run, turn, model, tool, step (a graph step), and ``compression``: a mark
    with no duration per ``context.compressed``), ``label``, ``run_id``,
    ``parent`` (the id of the enclosing span or None) and ``depth``, ``start``/``end``
    (seconds from the first event; ``end`` is None while open), ``duration_ms``,
    ``status`` (open, ok, error, denied, deferred, cancelled, unfinished), the
    sequences and list indices of the events that opened and closed it, and for a
    tool span its ``call_id``.
    """
    events = list(events)
    b = _Builder(min((_t(e) for e in events), default=0.0))
    for pos, e in enumerate(events):
        etype = e.get("type")
        if etype == "llm.chunk" and str(e.get("run_id")) in b.runs:
            continue  # chunks open and close nothing (the hot case: skip them cheaply)
        p, rid = _payload(e), str(e.get("run_id"))
        if etype == "agent.started":
            b.start_run(e, pos, f"run {rid}")
        elif etype == "agent.resumed":
            previous = p.get("previous_run_id")
            b.start_run(e, pos, f"run {rid} (resumed{' after ' + previous if previous else ''})")
        elif etype in RUN_END:
            b.end_run(e, pos, RUN_END[etype])
        elif etype == "llm.before":
            turn = b.turns.get(rid)
            if turn is not None and turn["turn"] != p.get("turn"):
                b.close(turn, e, pos, "ok")
                turn = None
            if turn is None:
                turn = b.open("turn", f"turn {p.get('turn', '?')}", e, pos, b.run_of(e, pos), turn=p.get("turn"))
                b.turns[rid] = turn
            b.close(b.models.pop(rid, None), e, pos, "unfinished")
            attempt = p.get("attempt")
            # An extension's own call (a context summary) says what it was for.
            what = f"{str(p['purpose']).replace('_', ' ')} call" if p.get("purpose") else "model call"
            label = f"{what}{'' if not attempt or attempt == 1 else f' (attempt {attempt})'}"
            b.models[rid] = b.open("model", label, e, pos, turn, turn=p.get("turn"))
        elif etype == "llm.after":
            b.close(b.models.pop(rid, None), e, pos, "ok")
        elif etype == "turn.completed":
            turn = b.turns.pop(rid, None)
            b.close(turn, e, pos, "ok")
        elif etype == "tool.before":
            call = call_fields(p.get("call"))
            b.tools[(rid, call["id"])] = b.open("tool", f"{call['name']} {call['id']}", e, pos,
                                                b.parent_for_call(rid, e, pos), call_id=call["id"])
        elif etype in ("tool.after", "tool.denied"):
            call = call_fields(p.get("call"))
            span = b.tools.get((rid, call["id"]))
            if span is None or span["end"] is not None:
                span = b.open("tool", f"{call['name']} {call['id']}", e, pos, b.parent_for_call(rid, e, pos),
                              call_id=call["id"])
                b.tools[(rid, call["id"])] = span
            b.close(span, e, pos, "denied" if etype == "tool.denied" else status(e))
        elif etype == "graph.step_started":
            # A graph step (DESIGN §16): the spans of its agent's runtime nest under it, as a
            # sub-agent's under its tool call (their envelope names the step as parent call).
            sid = str(p.get("step_id") or "")
            run = b.runs.get(rid) or b.start_run(e, pos, f"graph {p.get('graph', '?')} {rid}")
            b.tools[(rid, sid)] = b.open("step", f"step {p.get('step', '?')} {p.get('node', '?')}", e, pos,
                                         run, call_id=sid, node=p.get("node"))
        elif etype == "graph.step_finished":
            span = b.tools.get((rid, str(p.get("step_id") or "")))
            b.close(span, e, pos, "ok" if p.get("status") == "completed" else "error")
        elif etype == "context.compressed":
            # A mark (no duration) where a compression replaced older messages in the request.
            parent = b.turns.get(rid) or b.run_of(e, pos)
            mark = b.open("compression", f"compressed {p.get('before_tokens', '?')}→{p.get('after_tokens', '?')} tokens",
                          e, pos, parent)
            b.close(mark, e, pos, "ok")
        elif etype == "hook.decision" and p.get("action") == "defer" and p.get("slot") == "before_tool_call":
            call = call_fields(p.get("before"))
            cid = p.get("call_id") if isinstance(p.get("call_id"), str) else call["id"]
            span = b.open("tool", f"{call['name']} {cid}", e, pos, b.parent_for_call(rid, e, pos), call_id=cid)
            b.close(span, e, pos, "deferred")
            b.tools[(rid, cid)] = span
        elif rid not in b.runs and etype not in ("approval.decided", "approval.resolved"):
            b.run_of(e, pos)
    return b.out


def totals(events: Iterable[Mapping[str, Any]], run_id: str | None = None) -> dict[str, Any]:
    """Turns, tool calls, tokens in/out, errors and denials of one run (all runs: None)."""
    out = {"runs": 0, "turns": 0, "tool_calls": 0, "tokens_in": 0, "tokens_out": 0, "errors": 0, "denied": 0,
           "events": 0, "reused": 0, "settled": 0}
    turns: set[tuple[str, Any]] = set()
    calls: set[tuple[str, Any]] = set()  # a call is counted once, however many events it has
    runs: set[str] = set()
    for e in events:
        rid = str(e.get("run_id"))
        if run_id is not None and rid != run_id:
            continue
        out["events"] += 1
        runs.add(rid)
        etype = e.get("type")
        if etype == "llm.chunk":
            continue  # counts nothing else
        p = _payload(e)
        if etype == "llm.before":
            turns.add((rid, p.get("turn")))
        elif etype == "llm.after":
            tin, tout = usage_of(p)
            out["tokens_in"] += tin
            out["tokens_out"] += tout
        elif etype in ("tool.after", "tool.denied"):
            key = (rid, call_id_of(e))
            if key not in calls:
                calls.add(key)
                out["tool_calls"] += 1
            if p.get("reused"):
                out["reused"] += 1
            elif p.get("settled_by"):
                out["settled"] += 1
        if etype == "tool.denied":
            out["denied"] += 1
        elif status(e) == "error":
            out["errors"] += 1
    out["turns"] = len(turns)
    out["runs"] = len(runs)
    return out
