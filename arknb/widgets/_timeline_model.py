"""Rows and waterfall spans derived from a list of event dicts (the TimelineWidget's model).

``js/src/lib/spans.js`` derives the same spans in the browser for live updates; this
module is the reference the Python tests pin down, and what ``TimelineWidget.spans()``
returns.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from ._payload import call_fields

__all__ = ["rows", "spans", "summary"]

_RUN_END = {"agent.success": "completed", "agent.error": "failed", "agent.cancelled": "cancelled",
            "agent.suspended": "suspended", "agent.aborted": "aborted"}


def summary(event: Mapping[str, Any]) -> str:
    """A one-line description of an event for its row."""
    etype, p = event.get("type"), event.get("payload") or {}
    if etype == "llm.chunk":
        return f"{p.get('kind') or 'text'} {json.dumps(p.get('text') or '', ensure_ascii=False)}"
    if etype in ("tool.before", "tool.after", "tool.denied"):
        call = call_fields(p.get("call"))
        return f"{call['name']} {call['id']}"
    if etype == "llm.before":
        return f"turn {p.get('turn', '?')}"
    if etype == "hook.decision":
        return f"{p.get('hook') or '?'} {p.get('action') or '?'} ({p.get('slot') or '?'})"
    if etype in ("agent.success", "agent.error"):
        return str(p.get("stop_reason") or "")
    if etype == "agent.suspended":
        return str(p.get("reason") or "")
    if etype == "approval.decided":
        return f"{p.get('approval_id')} {p.get('decision')}"
    return ""


def rows(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per event: index, sequence, type, run, relative seconds, summary."""
    events = list(events)
    t0 = min((float(e.get("timestamp") or 0.0) for e in events), default=0.0)
    return [{"index": i, "sequence": e.get("sequence"), "type": e.get("type"), "run_id": e.get("run_id"),
             "t": float(e.get("timestamp") or 0.0) - t0, "summary": summary(e)} for i, e in enumerate(events)]


def spans(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Waterfall spans: each run (agent.started or agent.resumed to its end), each model
    call (llm.before to llm.after), each tool call (tool.before to tool.after or
    tool.denied, by call id), and a zero-length ``compression`` mark per
    ``context.compressed``. ``end`` is ``None`` while a span is open; times are seconds
    from the first event.

    Spans nest: ``id`` is a span's index, ``parent`` the index of the span it belongs to
    (a model or tool call's run; a sub-agent's run, whose events carry
    ``parent_run_id``/``parent_call_id``, the parent's ``delegate_task`` span) and
    ``depth`` how deep it sits, so the waterfall can show a child's spans under the call
    and collapse them."""
    events = list(events)
    t0 = min((float(e.get("timestamp") or 0.0) for e in events), default=0.0)
    out: list[dict[str, Any]] = []
    open_: dict[tuple[str, str, str], dict[str, Any]] = {}
    runs: dict[str, dict[str, Any]] = {}  # run id -> its latest run span
    tools: dict[tuple[str, str], dict[str, Any]] = {}  # (run id, call id) -> its latest tool span

    def start(kind: str, key: str, label: str, e: Mapping[str, Any], t: float,
              parent: dict[str, Any] | None = None) -> dict[str, Any]:
        span = {"id": len(out), "kind": kind, "label": label, "run_id": e.get("run_id"), "start": t, "end": None,
                "start_seq": e.get("sequence"), "end_seq": None, "status": "open",
                "parent": parent["id"] if parent is not None else None,
                "depth": parent["depth"] + 1 if parent is not None else 0}
        open_[(kind, str(e.get("run_id")), key)] = span
        out.append(span)
        return span

    def end(kind: str, key: str, e: Mapping[str, Any], t: float, status: str) -> dict[str, Any] | None:
        span = open_.pop((kind, str(e.get("run_id")), key), None)
        if span is not None:
            span.update(end=t, end_seq=e.get("sequence"), status=status)
        return span

    def run_start(e: Mapping[str, Any], t: float, label: str) -> None:
        parent = None
        if e.get("parent_call_id") is not None:
            parent = tools.get((str(e.get("parent_run_id")), str(e.get("parent_call_id"))))
        runs[str(e.get("run_id"))] = start("run", "", label, e, t, parent)

    for e in events:
        etype, p = e.get("type"), e.get("payload") or {}
        t = float(e.get("timestamp") or 0.0) - t0
        run = runs.get(str(e.get("run_id")))
        if etype == "agent.started":
            run_start(e, t, f"run {e.get('run_id')}")
        elif etype == "agent.resumed":
            run_start(e, t, f"run {e.get('run_id')} (resumed)")
        elif etype in _RUN_END:
            end("run", "", e, t, _RUN_END[etype])
            for key in [k for k in open_ if k[1] == str(e.get("run_id"))]:
                open_[key].update(end=t, end_seq=e.get("sequence"), status="unfinished")
                del open_[key]
        elif etype == "llm.before":
            start("model", str(p.get("turn", "")), f"model turn {p.get('turn', '?')}", e, t, run)
        elif etype == "llm.after":
            end("model", str(p.get("turn", "")), e, t, "done")
        elif etype == "context.compressed":
            mark = start("compression", f"c{e.get('sequence')}",
                         f"compressed {p.get('before_tokens', '?')}→{p.get('after_tokens', '?')} tokens", e, t, run)
            end("compression", f"c{e.get('sequence')}", e, t, "done")
            mark["status"] = "done"
        elif etype == "tool.before":
            call = call_fields(p.get("call"))
            tools[(str(e.get("run_id")), call["id"])] = start("tool", call["id"], f"{call['name']} {call['id']}", e, t,
                                                               run)
        elif etype in ("tool.after", "tool.denied"):
            call = call_fields(p.get("call"))
            result = p.get("result") if isinstance(p.get("result"), Mapping) else {}
            status = ("denied" if etype == "tool.denied" else "waiting" if p.get("deferred")
                      else "error" if result.get("is_error") else "done")
            if end("tool", call["id"], e, t, status) is None:
                start("tool", call["id"], f"{call['name']} {call['id']}", e, t, run)
                end("tool", call["id"], e, t, status)
    return out
