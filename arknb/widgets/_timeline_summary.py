"""One line and one status per event: what a timeline row says and what colour it gets.

Every type in ``EventTypes.ALL`` has its own line; an unknown type (a newer runtime,
a hand-written trace) lists its payload keys. ``js/src/lib/timeline_summary.js`` says
the same words in the browser (a harness test compares the two on every type), and
the static HTML of a saved notebook uses this module.

Statuses are a small closed set the front end colours: ``ok`` (success), ``error``,
``denied``, ``deferred`` (waiting for a human), ``cancelled``, ``warn`` (something to
look at that did not fail: a retry, a dropped chunk, a redaction), ``changed`` (a hook
rewrote a value) and ``""`` (nothing to say).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from ._payload import as_dict, call_fields, error_text, text_of

__all__ = ["STATUSES", "clip", "fmt_ms", "status", "summary", "usage_of"]

_RESOLVED_AS = {"rerun": "run again by a person", "done": "marked done by a person",
               "failed": "marked failed by a person"}
"""How a person settled a call a crash left in doubt (``approval.decided``'s resolution)."""
STATUSES = ("ok", "error", "denied", "deferred", "cancelled", "warn", "changed", "")
_CLIP = 80


def clip(text: Any, limit: int = _CLIP) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` code points with '…'."""
    line = " ".join(str(text or "").split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _quote(text: Any, limit: int = 60) -> str:
    return json.dumps(clip(text, limit), ensure_ascii=False)


def fmt_ms(ms: Any) -> str:
    """A duration in ms as '<1 ms', '12 ms' or '1.25 s' (the same rounding as the JS side)."""
    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not math.isfinite(ms):
        return ""
    if ms < 1:
        return "<1 ms"
    if ms < 1000:
        return f"{math.floor(ms + 0.5)} ms"
    return f"{math.floor(ms / 10 + 0.5) / 100:.2f} s"


def _q(value: Any) -> Any:
    """``value``, or '?' when it is missing (None), as the JS side's ``?? "?"``."""
    return "?" if value is None else value


def _n(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_of(payload: Mapping[str, Any]) -> tuple[int, int]:
    """(input tokens, output tokens) of a payload's ``usage`` (zeros when absent)."""
    usage = payload.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    return _n(usage.get("input_tokens")), _n(usage.get("output_tokens"))


def _tokens(payload: Mapping[str, Any]) -> str:
    if as_dict(payload.get("usage")).get("reported") is False:
        return "tokens unknown"  # the server sent no usage: never shown as 0 (DESIGN §17)
    tin, tout = usage_of(payload)
    return f"{tin:,} in / {tout:,} out tokens" if tin or tout else ""


def _call(payload: Mapping[str, Any], key: str = "call") -> str:
    call = call_fields(payload.get(key))
    args = call["arguments"]
    try:
        parsed = json.loads(args)
        args = json.dumps(parsed, ensure_ascii=False, separators=(",", ":")) if parsed != {} else ""
    except (TypeError, ValueError):
        pass
    return f"{call['name']}({clip(args, 50) if args else ''}) {call['id']}".rstrip()


def _join(*parts: str) -> str:
    return " · ".join(p for p in parts if p)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _truncated(p: Mapping[str, Any]) -> str:
    return _join(f"turn {_q(p.get('turn'))} cut at max_tokens",
                 f"max_tokens {p['max_tokens']}" if _int(p.get("max_tokens")) else "",
                 f"{p['output_tokens']} tokens" if _int(p.get("output_tokens")) else "")


def _validated(p: Mapping[str, Any]) -> str:
    retries = p.get("retries")
    return _join(f"{p.get('name') or 'output'} accepted", f"via {p['mode']}" if p.get("mode") else "",
                 f"after {retries} retr{'y' if retries == 1 else 'ies'}" if _int(retries) and retries else "")


def _refused(p: Mapping[str, Any]) -> str:
    fields = p.get("fields") if isinstance(p.get("fields"), (list, tuple)) else ()
    return _join(f"{p.get('name') or 'output'} refused (try {_q(p.get('attempt'))})",
                 f"fields {', '.join(str(f) for f in fields)}" if fields else "",
                 "asking again" if p.get("retrying") else "no tries left")


_OUTPUT_SUMMARIES = {"llm.truncated": _truncated, "output.validated": _validated, "output.retry": _refused}


def _first_input(payload: Mapping[str, Any]) -> str:
    items = payload.get("input")
    if isinstance(items, (list, tuple)) and items:
        return _quote(text_of(items[0]) if not isinstance(items[0], str) else items[0])
    return ""


def _items(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    items = payload.get("items")
    return [as_dict(i) for i in items] if isinstance(items, (list, tuple)) else []


def _message(payload: Mapping[str, Any]) -> str:
    message = as_dict(payload.get("message"))
    calls = message.get("tool_calls") or ()
    text = text_of(payload.get("message"))
    return _join(f"{len(calls)} tool call{'s' if len(calls) != 1 else ''}" if calls else "",
                 _quote(text) if text else "")


def summary(event: Mapping[str, Any]) -> str:
    """A one-line description of an event for its row."""
    etype = event.get("type")
    p = event.get("payload")
    p = p if isinstance(p, Mapping) else {}
    if etype == "llm.chunk":
        return f"{p.get('kind') or 'text'} {json.dumps(p.get('text') or '', ensure_ascii=False)}"
    if etype == "agent.started":
        return _join("resumed" if p.get("resumed") else "", _first_input(p)) or "started"
    if etype == "agent.resumed":
        return _join(f"resumed ({p.get('reason') or '?'})",
                     f"after {p['previous_run_id']}" if p.get("previous_run_id") else "")
    if etype == "agent.success":
        turns = p.get("turns")
        return _join(str(p.get("stop_reason") or "completed"),
                     f"{turns} turn{'s' if turns != 1 else ''}" if isinstance(turns, int) else "",
                     _tokens(p), _quote(p["text"]) if p.get("text") else "")
    if etype == "agent.error":
        return _join(str(p.get("stop_reason") or "failed"), clip(error_text(p.get("error")), 100))
    if etype == "agent.cancelled":
        return _join("cancelled", str(p.get("reason") or ""))
    if etype == "agent.suspended":
        return _join(f"suspended ({p.get('reason') or '?'})", f"batch {p['batch_id']}" if p.get("batch_id") else "")
    if etype == "agent.aborted":
        where = f"by {p.get('hook') or '?'} in {p.get('slot') or '?'}" if p.get("hook") or p.get("slot") else ""
        return _join(f"aborted {where}".strip(), clip(error_text(p.get("error")), 100))
    if etype == "llm.before":
        tools = p.get("tools") if isinstance(p.get("tools"), (list, tuple)) else ()
        count = p.get("message_count")
        return _join(f"turn {_q(p.get('turn'))}", f"for {p['purpose']}" if p.get("purpose") else "",
                     str(p.get("model") or ""),
                     f"{count} messages" if isinstance(count, int) else "",
                     f"{len(tools)} tools" if tools else "",
                     "answered by a hook" if p.get("responded_by_hook") else "")
    if etype == "llm.retry":
        delay = p.get("delay")
        return _join(f"turn {_q(p.get('turn'))} retry {_q(p.get('attempt'))}",
                     f"in {fmt_ms(delay * 1000)}" if isinstance(delay, (int, float)) else "",
                     clip(error_text(p.get("error")), 80))
    if etype == "llm.after":
        return _join(f"turn {_q(p.get('turn'))}", str(p.get("finish_reason") or ""), _tokens(p), _message(p))
    if etype in _OUTPUT_SUMMARIES:  # typed and cut answers (DESIGN §17)
        return _OUTPUT_SUMMARIES[etype](p)
    if etype == "tool.before":
        return _call(p)
    if etype == "tool.after":
        result = as_dict(p.get("result"))
        outcome = "error " if result.get("is_error") else "→ "
        origin = "reused from the record" if p.get("reused") else "settled by a person" if p.get("settled_by") else ""
        return _join(_call(p), origin, f"{outcome}{_quote(result.get('text') or '')}",
                     "" if origin else fmt_ms(p.get("duration_ms")))
    if etype == "tool.progress":  # a running tool's report (an MCP server's progress, DESIGN §15)
        total = p.get("total")
        done = f"{_num(p.get('progress'))}/{_num(total)}" if total is not None else _num(p.get("progress"))
        return _join(f"{p.get('name') or 'tool'} {p.get('call_id') or ''}".strip(), f"progress {done}",
                     clip(str(p.get("message") or ""), 80))
    if etype == "tool.sampling":  # a tool's server asked the runtime's model (allow_sampling=True)
        return _join(f"{p.get('name') or 'tool'} {p.get('call_id') or ''}".strip(), "sampled the model",
                     f"→ {_quote(str(p.get('text') or ''))}")
    if etype == "tool.denied":
        who = f"denied by {p['hook']}" if p.get("hook") else "denied"
        return _join(_call(p), who, clip(p.get("reason") or "", 80))
    if etype == "approval.required":
        items = _items(p)
        names = ", ".join(call_fields(i.get("tool_call"))["name"] for i in items)
        verb = "needs" if len(items) == 1 else "need"
        return f"{len(items)} call{'s' if len(items) != 1 else ''} {verb} approval: {names}".rstrip(": ")
    if etype == "approval.decided":
        if p.get("resolution"):
            word = _RESOLVED_AS.get(str(p["resolution"]), str(p["resolution"]))
            return _join(f"{p.get('approval_id') or '?'} {word}", "all decided" if p.get("all_decided") else "")
        reason = f": {clip(p['deny_reason'], 60)}" if p.get("deny_reason") else ""
        return _join(f"{p.get('approval_id') or '?'} {p.get('decision') or '?'}{reason}",
                     "all decided" if p.get("all_decided") else "")
    if etype == "approval.resolved":
        decisions = [str(i.get("decision") or "?") for i in _items(p)]
        counts = ", ".join(f"{decisions.count(d)} {d}" for d in sorted(set(decisions)))
        return _join(f"batch {p.get('batch_id') or '?'} resolved", counts)
    if etype == "loop.detected":
        return _join(f"{p.get('tool') or '?'} repeated {_q(p.get('count'))}× "
                     f"(threshold {_q(p.get('threshold'))})", clip(p.get("message") or "", 80))
    if etype == "hook.decision":
        return _join(f"{p.get('hook') or '?'} {p.get('action') or '?'} in {p.get('slot') or '?'}",
                     "ignored (mandatory save)" if p.get("ignored") else "", clip(p.get("reason") or "", 80))
    if etype == "hook.diagnostic":
        return _join(f"{p.get('hook') or '?'} {p.get('kind') or '?'} in {p.get('slot') or '?'}",
                     clip(p.get("message") or "", 100))
    if etype == "state.persisted":
        if p.get("ok") is False:
            return _join(f"save failed ({p.get('reason') or '?'})", clip(error_text(p.get("error")), 100))
        if p.get("skipped"):
            return _join(f"save skipped ({p.get('reason') or '?'})", f"by {p['hook']}" if p.get("hook") else "")
        return _join(f"saved ({p.get('reason') or '?'})", "mandatory" if p.get("mandatory") else "")
    if etype == "turn.completed":
        return _join(f"turn {_q(p.get('turn'))} {p.get('action') or ''}".rstrip(), _message(p))
    if etype == "state.loaded":
        count = p.get("messages")
        return _join(f"loaded revision {_q(p.get('revision'))}",
                     f"{count} messages" if isinstance(count, int) else "",
                     "approval pending" if p.get("pending_approval") else "")
    if etype == "runtime.detached":
        return f"detached ({p.get('reason') or '?'})"
    if etype == "secret.redacted":
        count = p.get("count")
        return f"{count if isinstance(count, int) else '?'} secret(s) redacted in {p.get('where') or '?'}"
    if etype == "plan.updated":
        plan = as_dict(p.get("plan"))
        items = plan.get("items") if isinstance(plan.get("items"), (list, tuple)) else ()
        done = sum(1 for i in items if isinstance(i, Mapping) and i.get("status") == "completed")
        change = {"status": "statuses only", "new": "new plan"}.get(str(p.get("change")), "")
        return _join(f"plan v{_q(plan.get('version'))}", f"{len(items)} items", f"{done} done", change,
                     "approved" if p.get("approved") else "")
    if etype == "plan.review_required":
        return f"plan review needed ({p.get('approval_id') or '?'})"
    if etype == "plan.review_resolved":
        return _join(f"plan {p.get('decision') or '?'}", clip(p.get("reason") or "", 80))
    if etype == "skill.activated":
        tools = p.get("tools") if isinstance(p.get("tools"), (list, tuple)) else ()
        return _join(f"skill {p.get('name') or '?'}", f"{len(tools)} tools" if tools else "")
    if etype == "skill.skipped":
        clashes = [str(c) for c in p.get("clashes")] if isinstance(p.get("clashes"), (list, tuple)) else []
        return _join(f"skill {p.get('name') or '?'} skipped",
                     f"tools named like the runtime's: {', '.join(clashes)}" if clashes else "")
    if etype == "context.compressed":
        return f"context {_n(p.get('before_tokens')):,} → {_n(p.get('after_tokens')):,} tokens"
    if etype == "memory.recorded":
        return _join(f"remembered {p.get('episode_id') or '?'}", clip(str(p.get("summary") or "").split("\n")[0], 80))
    if etype == "operation.in_doubt":
        attempts = p.get("attempts")
        return _join(f"{_call(p)} in doubt" if p.get("call") else f"{p.get('operation_id') or '?'} in doubt",
                     f"after {attempts} attempts" if isinstance(attempts, int) else "")
    if etype == "bus.dropped":
        return f"{_q(p.get('dropped'))} events dropped for {p.get('listener') or '?'}"
    if etype in ("graph.step_started", "graph.step_finished"):
        done = f" {p.get('status')}" if etype == "graph.step_finished" else ""
        return f"step {_q(p.get('step'))} {p.get('node') or '?'}{done}"
    if etype == "graph.waiting":
        return _join(f"{p.get('node') or '?'} waits ({p.get('kind') or '?'})", clip(str(p.get("question") or ""), 80))
    keys = ", ".join(sorted(str(k) for k in p)[:6])
    return f"{{{keys}}}" if keys else ""


_HOOK_STATUS = {"deny": "denied", "defer": "deferred", "abort": "error", "drop": "warn", "hold": "warn",
                "retry": "warn", "stop": "warn", "skip": "warn"}


def status(event: Mapping[str, Any]) -> str:
    """The row's status (one of :data:`STATUSES`)."""
    etype = event.get("type")
    if etype == "llm.chunk":
        return ""
    p = event.get("payload")
    p = p if isinstance(p, Mapping) else {}
    if etype == "agent.success":
        return "ok"
    if etype in ("agent.error", "agent.aborted"):
        return "error"
    if etype == "agent.cancelled":
        return "cancelled"
    if etype in ("agent.suspended", "approval.required", "plan.review_required"):
        return "deferred"
    if etype == "tool.after":
        if p.get("deferred"):  # the call handed itself to a person (ToolContext.defer), e.g. a sub-agent's
            return "deferred"
        return "error" if as_dict(p.get("result")).get("is_error") else "ok"
    if etype == "tool.denied":
        return "denied"
    if etype in ("approval.decided", "plan.review_resolved"):
        if p.get("resolution"):  # an in-doubt call, settled by a person
            return "error" if p["resolution"] == "failed" else "ok"
        decision = p.get("decision")
        return "ok" if decision == "approved" else "denied" if decision in ("denied", "rejected") else ""
    if etype == "hook.decision":
        if p.get("ignored"):
            return ""
        return _HOOK_STATUS.get(str(p.get("action")), "changed")
    if etype == "hook.diagnostic":
        return "error" if p.get("fail_closed") else "warn"
    if etype == "state.persisted":
        return "error" if p.get("ok") is False else "warn" if p.get("skipped") else ""
    if etype == "graph.step_finished" and p.get("status") == "failed":
        return "error"
    if etype == "output.validated":
        return "ok"
    if etype == "output.retry":
        return "warn" if p.get("retrying") else "error"
    if etype in ("llm.retry", "loop.detected", "secret.redacted", "bus.dropped", "operation.in_doubt",
                 "runtime.detached", "graph.waiting", "llm.truncated", "skill.skipped"):
        return "warn"
    return ""


def _num(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
