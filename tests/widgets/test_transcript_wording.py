"""The chat transcript speaks to people (issue 25 items 2 and 4): calls answered without
running now say where the answer came from, a denial says its reason once (a restored one
reads "denied"), a stop reads "stopped", a resumed run "continued after your decision",
and the calls a restored batch holds back wait for the decision instead of "requested"."""

from __future__ import annotations

from arknb.domain import AgentMessage, ToolCall
from arknb.widgets._chat_html import hook_sentence
from arknb.widgets._transcript import Transcript


def call(call_id, name="fetch"):
    return {"id": call_id, "name": name, "arguments_json": "{}"}


def cards(t):
    return {e["call_id"]: e for e in t.entries if e["kind"] == "tool"}


def test_reused_and_settled_answers_say_so_and_carry_no_duration():
    t = Transcript()
    t.apply({"type": "llm.after", "run_id": "r", "payload": {"message": {"role": "assistant", "tool_calls": [
        call("c1"), call("c2")]}}})
    t.apply({"type": "tool.after", "run_id": "r", "payload": {"call": call("c1"), "result": {"text": "ok"},
                                                              "duration_ms": 0.0, "reused": True}})
    t.apply({"type": "tool.after", "run_id": "r", "payload": {"call": call("c2"), "result": {"text": "sent"},
                                                              "duration_ms": 0.0, "settled_by": "person"}})
    c = cards(t)
    assert (c["c1"]["origin"], c["c1"]["duration_ms"], c["c1"]["status"]) == ("reused", None, "done")
    assert (c["c2"]["origin"], c["c2"]["duration_ms"]) == ("settled", None)


def test_a_denial_says_its_reason_once_live_and_restored():
    t = Transcript()
    t.apply({"type": "tool.denied", "run_id": "r", "payload": {
        "call": call("c1", "clear_cache"), "reason": "logs are still needed",
        "result": {"text": "tool_denied: logs are still needed", "is_error": True}}})
    card = cards(t)["c1"]
    assert (card["status"], card["reason"], card["result"]) == ("denied", "logs are still needed", None)
    history = [AgentMessage.user("clear"),
               AgentMessage.assistant("", tool_calls=[ToolCall(id="c1", name="clear_cache", arguments_json="{}")]),
               AgentMessage.tool("c1", "tool_denied: logs are still needed", is_error=True)]
    restored = cards(Transcript.from_history(history))["c1"]
    assert (restored["status"], restored["reason"], restored["result"]) == ("denied", "logs are still needed", None)


def test_stop_and_resume_read_as_people_say_them():
    t = Transcript()
    t.apply({"type": "agent.resumed", "run_id": "r", "payload": {"reason": "in_doubt_resolved"}})
    t.apply({"type": "agent.cancelled", "run_id": "r", "payload": {"reason": "cancelled by user"}})
    notices = [e["text"] for e in t.entries if e["kind"] == "notice"]
    assert notices == ["continued after your decision", "stopped"]


def test_the_runtimes_own_hooks_are_worded_without_their_internal_names():
    defer = {"slot": "before_tool_call", "hook": "approval_policy", "action": "defer",
             "reason": "clear_cache is a dangerous tool and needs approval", "after": {"name": "clear_cache"}}
    deny = {"slot": "before_tool_call", "hook": "plan_mode", "action": "deny", "reason": "plan not approved yet",
            "after": {"name": "restart_service"}}
    assert hook_sentence(defer) == "needs your approval: clear_cache is dangerous"
    assert hook_sentence(deny) == "restart_service was not run: plan not approved yet"
    mine = {"slot": "before_tool_call", "hook": "guard", "action": "deny", "after": {"name": "rm"}}
    assert hook_sentence(mine) == "guard denied arguments of rm"  # a user's hook keeps the name it was given


def test_a_restored_batch_holds_back_its_other_calls_as_waiting_for_the_decision():
    message = AgentMessage.assistant("", tool_calls=[ToolCall(id="c1", name="fetch", arguments_json="{}"),
                                                     ToolCall(id="c3", name="send", arguments_json="{}")])
    batch = {"batch_id": "b", "run_id": "r", "model_message": message.model_dump(mode="json"), "kind": "in_doubt",
             "allowed_calls": [call("c1")],
             "items": [{"approval_id": "op_3", "tool_call": call("c3", "send"), "kind": "in_doubt",
                        "decision": "pending", "risk_level": "safe", "reason": "may or may not have run"}]}
    t = Transcript.from_history([AgentMessage.user("go"), message], batch)
    c = cards(t)
    assert (c["c1"]["status"], c["c3"]["status"]) == ("queued", "in_doubt")
