"""Event traces for the timeline tests (Python side and the JS harness alike).

``story()`` is a session a user would debug: a rewrite, a deny, a defer approved in a
continued run, a failing tool, a sub-run under a tool call, a cancelled run.
``one_of_each()`` has one event per type in ``EventTypes.ALL`` with the payload the
runtime (or the planned capability) gives it.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from arknb.events import EventTypes

__all__ = ["Trace", "XSS_TEXT", "one_of_each", "story"]

XSS_TEXT = "<img src=x onerror=\"window.__xss='img'\"><script>window.__xss='s'</script>"


class Trace:
    """Builds event dicts with increasing sequences and timestamps 0.1 s apart."""

    def __init__(self, session: str = "s1", t0: float = 1000.0) -> None:
        self.session = session
        self.t0 = t0
        self._seq = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def __call__(self, etype: str, run: str = "r1", *, dt: float = 0.1, envelope: dict | None = None,
                 **payload: Any) -> dict[str, Any]:
        seq = next(self._seq)
        self.t0 += dt
        event = {"event_id": f"{run}:{seq}", "type": etype, "session_id": self.session, "run_id": run,
                 "sequence": seq, "timestamp": round(self.t0, 6), "payload": payload}
        if envelope:
            event.update(envelope)
        self.events.append(event)
        return event


def call(cid: str, name: str, args: str = "{}") -> dict[str, Any]:
    return {"id": cid, "name": name, "arguments_json": args, "index": 0}


def result(text: str, is_error: bool = False) -> dict[str, Any]:
    return {"text": text, "is_error": is_error, "error_code": "tool_failed" if is_error else None, "stop": False}


def usage(tin: int, tout: int) -> dict[str, int]:
    return {"input_tokens": tin, "output_tokens": tout, "reasoning_tokens": 0, "cached_tokens": 0}


def assistant(text: str, calls: list[dict[str, Any]] = ()) -> dict[str, Any]:
    return {"role": "assistant", "contents": [{"kind": "text", "text": text}] if text else [],
            "tool_calls": list(calls)}


def as_exported(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``events`` as a trace file holds them: every file passes the eval writers' redaction
    (issue 26: one redaction for every sink), so the credential-shaped raw text of the
    story's hook rewrite is written as ``[redacted]``."""
    from arknb.eval._files import export_lint

    redact = export_lint()
    return [json.loads(redact(json.dumps(e))) for e in events]


def story() -> list[dict[str, Any]]:
    ev = Trace()
    add = call("c1", "add", '{"a": 1, "b": 2}')
    add2 = {**add, "arguments_json": '{"a": 1, "b": 20}'}
    rm = call("c2", "rm", '{"path": "/tmp/x"}')
    pay = call("c3", "pay", '{"amount": 5}')
    ev("agent.started", input=[{"role": "user", "contents": [{"kind": "text", "text": "add and clean up"}]}],
       resumed=False)
    ev("llm.before", turn=1, attempt=1, model="scripted", message_count=2, tools=["add", "rm", "pay"])
    ev("llm.chunk", kind="text", text="Let me ", index=0)
    ev("llm.chunk", kind="text", text=XSS_TEXT, index=1)
    ev("llm.after", turn=1, message=assistant("Let me", [add, rm, pay]), finish_reason="tool_calls",
       usage=usage(40, 12), raw_text="Let me", raw_reasoning="", retried=False)
    ev("hook.decision", slot="before_tool_call", hook="clamp", action="rewrite", reason="b is at most 20",
       before=add, after=add2, call_id="c1")
    ev("hook.decision", slot="before_tool_call", hook="guard", action="deny", reason="no deleting",
       before=rm, after={"text": "tool_denied: no deleting files", "is_error": True}, call_id="c2")
    ev("hook.decision", slot="before_tool_call", hook="approval_policy", action="defer",
       reason="pay is a dangerous tool and needs approval", before=pay, after=None, call_id="c3")
    ev("approval.required", batch_id="b1", kind="tools",
       items=[{"approval_id": "a1", "tool_call": pay, "risk_level": "dangerous", "reason": "pay needs approval",
               "decision": "pending", "deny_reason": None}])
    ev("agent.suspended", reason="awaiting_approval", batch_id="b1")
    ev("approval.decided", batch_id="b1", approval_id="a1", decision="approved", deny_reason=None,
       all_decided=True)
    ev("approval.resolved", batch_id="b1", items=[{"approval_id": "a1", "tool_call": pay, "decision": "approved"}])
    ev("agent.resumed", run="r2", reason="approval", previous_run_id="r1")
    ev("tool.denied", run="r2", call=rm, result=result("tool_denied: no deleting files", True),
       reason="no deleting", hook="guard", batch_id="b1")
    ev("tool.before", run="r2", call=add2, batch_id="b1")
    ev("tool.before", run="r2", call=pay, batch_id="b1")
    ev("tool.after", run="r2", call=add2, result=result("21"), batch_id="b1", duration_ms=2.0)
    ev("tool.after", run="r2", call=pay, result=result("card declined", True), batch_id="b1", duration_ms=15.0)
    ev("turn.completed", run="r2", turn=0, message=assistant("Let me", [add, rm, pay]), action="accept")
    ev("llm.before", run="r2", turn=1, attempt=1, model="scripted", message_count=6, tools=["add", "rm", "pay", "ask"])
    ev("llm.after", run="r2", turn=1, message=assistant("", [call("c4", "ask", '{"q": "why"}')]),
       finish_reason="tool_calls", usage=usage(80, 6), raw_text="", raw_reasoning="", retried=False)
    ask = call("c4", "ask", '{"q": "why"}')
    ev("tool.before", run="r2", call=ask, batch_id="b2")
    sub = {"parent_run_id": "r2", "parent_call_id": "c4"}
    ev("agent.started", run="k1", envelope=sub, input=["why"], resumed=False)
    ev("llm.before", run="k1", envelope=sub, turn=1, attempt=1, model="scripted", message_count=1, tools=[])
    ev("llm.after", run="k1", envelope=sub, turn=1, message=assistant("because"), finish_reason="stop",
       usage=usage(10, 2), raw_text="because", raw_reasoning="", retried=False)
    ev("agent.success", run="k1", envelope=sub, run_id="k1", stop_reason="completed", text="because",
       usage=usage(10, 2), turns=1, error=None, persisted=True)
    ev("tool.after", run="r2", call=ask, result=result("because"), batch_id="b2", duration_ms=40.0)
    ev("hook.decision", run="r2", slot="after_tool_call", hook="shorten", action="rewrite", reason="trim",
       before={"text": "line one\nline two\nline three", "is_error": False},
       after={"text": "line one\nline 2\nline three", "is_error": False}, call_id="c4")
    ev("turn.completed", run="r2", turn=1, message=assistant("", [ask]), action="accept")
    ev("llm.before", run="r2", turn=2, attempt=1, model="scripted", message_count=9, tools=[])
    ev("hook.decision", run="r2", slot="on_model_chunk", hook="redact", action="drop", reason="secret-looking",
       before={"text": "sk-not-a-real-key", "reasoning": ""}, after=None, index=0)
    ev("llm.chunk", run="r2", kind="text", text="Done: 21.", index=1)
    ev("llm.after", run="r2", turn=2, message=assistant("Done: 21."), finish_reason="stop", usage=usage(90, 4),
       raw_text="sk-not-a-real-keyDone: 21.", raw_reasoning="", retried=False)
    ev("turn.completed", run="r2", turn=2, message=assistant("Done: 21."), action="accept")
    ev("agent.success", run="r2", run_id="r2", stop_reason="completed", text="Done: 21.", usage=usage(180, 12),
       turns=2, error=None, persisted=True)
    ev("agent.started", run="r3", input=["again"], resumed=False)
    ev("llm.before", run="r3", turn=1, attempt=1, model="scripted", message_count=11, tools=[])
    ev("agent.cancelled", run="r3", run_id="r3", stop_reason="cancelled", reason="user", text="",
       usage=usage(0, 0), turns=1, error={"code": "cancelled", "message": "cancelled by the user"},
       persisted=True)
    return ev.events


def one_of_each() -> list[dict[str, Any]]:
    ev = Trace()
    c = call("c1", "add", '{"a": 1}')
    err = {"code": "tool_failed", "message": "boom", "layer": "tool"}
    payloads: dict[str, dict[str, Any]] = {
        EventTypes.AGENT_STARTED: {"input": [{"role": "user", "contents": [{"kind": "text", "text": "hi"}]}],
                                   "resumed": False},
        EventTypes.AGENT_RESUMED: {"reason": "approval", "previous_run_id": "r0"},
        EventTypes.AGENT_SUCCESS: {"stop_reason": "completed", "text": "all done", "usage": usage(1200, 34),
                                   "turns": 2},
        EventTypes.AGENT_ERROR: {"stop_reason": "failed", "error": err},
        EventTypes.AGENT_CANCELLED: {"reason": "user"},
        EventTypes.AGENT_SUSPENDED: {"reason": "awaiting_approval", "batch_id": "b1"},
        EventTypes.AGENT_ABORTED: {"error": err, "slot": "before_tool_call", "hook": "guard"},
        EventTypes.LLM_BEFORE: {"turn": 1, "model": "gpt-x", "message_count": 3, "tools": ["add"]},
        EventTypes.LLM_CHUNK: {"kind": "text", "text": "Hel", "index": 0},
        EventTypes.LLM_RETRY: {"turn": 1, "attempt": 2, "delay": 0.5, "error": {"code": "rate_limited",
                                                                              "message": "slow down"}},
        EventTypes.LLM_AFTER: {"turn": 1, "message": assistant("Hello", [c]), "finish_reason": "tool_calls",
                               "usage": usage(42, 12)},
        EventTypes.TOOL_BEFORE: {"call": c, "batch_id": "b1"},
        EventTypes.TOOL_AFTER: {"call": c, "result": result("2"), "batch_id": "b1", "duration_ms": 1234.5},
        EventTypes.TOOL_DENIED: {"call": c, "result": result("tool_denied: no", True), "reason": "no",
                                 "hook": "guard"},
        EventTypes.APPROVAL_REQUIRED: {"batch_id": "b1", "items": [{"approval_id": "a1", "tool_call": c}]},
        EventTypes.APPROVAL_DECIDED: {"batch_id": "b1", "approval_id": "a1", "decision": "denied",
                                      "deny_reason": "not today", "all_decided": True},
        EventTypes.APPROVAL_RESOLVED: {"batch_id": "b1", "items": [{"decision": "denied"}, {"decision": "approved"}]},
        EventTypes.LOOP_DETECTED: {"signature": "add:{}", "tool": "add", "count": 3, "window": 5, "threshold": 3,
                                   "message": "add was called 3 times with the same arguments"},
        EventTypes.HOOK_DECISION: {"slot": "before_tool_call", "hook": "clamp", "action": "rewrite",
                                   "reason": "clamped", "before": c, "after": c},
        EventTypes.HOOK_DIAGNOSTIC: {"slot": "after_tool_call", "hook": "audit", "kind": "exception",
                                     "message": "ValueError: x", "fail_closed": False},
        EventTypes.STATE_PERSISTED: {"reason": "after_model_text", "mandatory": False, "skipped": False,
                                     "ok": False, "error": {"code": "state_save_failed", "message": "disk full"}},
        EventTypes.TURN_COMPLETED: {"turn": 1, "message": assistant("Hello"), "action": "accept"},
        EventTypes.STATE_LOADED: {"revision": 3, "messages": 12, "pending_approval": True},
        EventTypes.RUNTIME_DETACHED: {"reason": "replaced"},
        EventTypes.SECRET_REDACTED: {"where": "tool.after", "count": 2},
        EventTypes.PLAN_UPDATED: {"plan": {"version": 2, "items": [{"title": "a"}, {"title": "b"}]}},
        EventTypes.PLAN_REVIEW_REQUIRED: {"batch_id": "b2", "approval_id": "p1", "plan": {"version": 2}},
        EventTypes.PLAN_REVIEW_RESOLVED: {"batch_id": "b2", "approval_id": "p1", "decision": "approved",
                                          "reason": "fine"},
        EventTypes.SKILL_ACTIVATED: {"name": "pdf", "tools": ["read_pdf", "split_pdf"]},
        EventTypes.SKILL_SKIPPED: {"name": "pdf", "clashes": ["read_pdf"], "reason": "named like a runtime tool"},
        EventTypes.CONTEXT_COMPRESSED: {"before_tokens": 12000, "after_tokens": 3000, "replaced": [2, 40]},
        EventTypes.MEMORY_RECORDED: {"episode_id": "episode_1", "summary": "User: hi\nAssistant: hello", "run_id": "r1"},
        EventTypes.OPERATION_IN_DOUBT: {"operation_id": "op1", "call": c, "started_at": 5.0, "attempts": 2},
        EventTypes.BUS_DROPPED: {"listener": "slow_logger", "dropped": 12},
        EventTypes.GRAPH_STEP_STARTED: {"graph": "triage", "node": "research", "step": 1, "kind": "function",
                                        "step_id": "op_g1", "state_version": 0, "attempt": 1},
        EventTypes.GRAPH_STEP_FINISHED: {"graph": "triage", "node": "research", "step": 1, "step_id": "op_g1",
                                         "status": "completed", "update": {"notes": ["n"]}, "error": None},
        EventTypes.GRAPH_WAITING: {"graph": "triage", "node": "review", "step": 3, "item_id": "t1:3:review",
                                   "kind": "human", "question": "Publish?"},
        EventTypes.LLM_TRUNCATED: {"turn": 1, "finish_reason": "length", "max_tokens": 8, "output_tokens": 8},
        EventTypes.OUTPUT_VALIDATED: {"turn": 2, "mode": "native", "name": "Weather", "retries": 1,
                                      "output": {"city": "Oslo"}},
        EventTypes.OUTPUT_RETRY: {"turn": 1, "attempt": 1, "mode": "tool", "name": "Weather", "retrying": True,
                                  "fields": ["temp_c", "sunny"], "errors": "temp_c: Input should be a valid number"},
        EventTypes.TOOL_PROGRESS: {"call_id": "c1", "name": "slow", "progress": 2.0, "total": 3.0,
                                   "message": "step 2", "batch_id": "b1"},
        EventTypes.TOOL_SAMPLING: {"call_id": "c1", "name": "muse", "server": "kit", "tool": "muse",
                                   "messages": [{"role": "user", "text": "a haiku"}], "text": "autumn wind"},
    }
    assert set(payloads) == set(EventTypes.ALL), set(EventTypes.ALL) ^ set(payloads)
    for etype in EventTypes.ALL:
        ev(etype, **payloads[etype])
    ev("custom.thing", answer=42, note="x")  # a type no EventTypes constant names
    # a server that sent no usage: "tokens unknown", never 0 (DESIGN §17)
    ev(EventTypes.LLM_AFTER, turn=2, message=assistant("Hi"), finish_reason="stop",
       usage={**usage(0, 0), "reported": False})
    return ev.events
