import asyncio


from arknb.domain import AgentMessage, ArkError, ErrorCode, ErrorLayer, ToolCall, ToolResult
from arknb.widgets import ChatWidget

from .conftest import Events, FakeItem, FakeRuntime, Frontend, call_dict, msg_dict


def make_chat(runtime, timers, **kw):
    chat = ChatWidget(runtime, clock=timers.clock, call_later=timers.call_later, **kw)
    return chat, Frontend(chat, "transcript")


def streamed_text(front, entry_id, field="text"):
    pieces = []
    expect = 0
    for m in front.of_type("delta"):
        for f, eid, start, end, text in m["ops"]:
            if eid == entry_id and f == field:
                assert start == expect, "deltas must be contiguous"
                pieces.append(text)
                expect = end
    return "".join(pieces)


def assistant_ids(chat):
    return [e["id"] for e in chat.transcript["entries"] if e["kind"] == "assistant"]


def test_10k_chunks_coalesce_into_few_messages_in_order(runtime, timers, ev):
    chat, front = make_chat(runtime, timers)
    runtime.bus.publish(ev("agent.started", input=["go"]))
    runtime.bus.publish(ev("llm.before", turn=1))
    timers.advance(0.1)
    entry = assistant_ids(chat)[-1]
    chunks = [f"{i % 10}" for i in range(10_000)]
    for chunk in chunks:
        runtime.bus.publish(ev("llm.chunk", kind="text", text=chunk, index=0))
        timers.advance(0.0001)  # 10,000 chunks per second
    timers.advance(0.1)
    deltas = front.of_type("delta")
    assert 20 <= len(deltas) <= 35
    assert streamed_text(front, entry) == "".join(chunks)


def test_structural_event_flushes_stream_at_once_into_the_snapshot(runtime, timers, ev):
    chat, front = make_chat(runtime, timers)
    runtime.bus.publish(ev("agent.started", input=["go"]))
    runtime.bus.publish(ev("llm.before", turn=1))
    timers.advance(1.0)
    for piece in ["Let ", "me ", "add."]:
        runtime.bus.publish(ev("llm.chunk", kind="text", text=piece, index=0))
    snapshots_before = len(front.trait_updates)
    call = call_dict("c1", "add", '{"a": 1, "b": 2}')
    message = AgentMessage.assistant("Let me add.", tool_calls=[ToolCall(**call)])
    runtime.bus.publish(ev("llm.after", turn=1, message=msg_dict(message)))
    # no time passed: the structural event flushed by itself
    assert len(front.trait_updates) == snapshots_before + 1
    entries = chat.transcript["entries"]
    assert [e["kind"] for e in entries] == ["user", "assistant", "tool"]
    assert entries[1]["text"] == "Let me add." and entries[1]["streaming"] is False
    assert entries[2]["status"] == "requested" and entries[2]["name"] == "add"
    assert front.of_type("delta") == []  # the snapshot carried the text; no delta needed


def test_transcript_after_a_run_with_tools_hooks_and_approvals(runtime, timers, ev):
    chat, front = make_chat(runtime, timers)
    bus = runtime.bus
    add, rm = call_dict("c1", "add", '{"a": 1, "b": 2}'), call_dict("c2", "rm", '{"path": "/tmp"}')
    bus.publish(ev("agent.started", input=[msg_dict(AgentMessage.user("add and clean"))]))
    bus.publish(ev("llm.before", turn=1))
    bus.publish(ev("llm.chunk", kind="reasoning", text="thinking", index=0))
    bus.publish(ev("llm.chunk", kind="text", text="On it.", index=0))
    bus.publish(ev("llm.after", turn=1, message=msg_dict(AgentMessage.assistant(
        "On it.", tool_calls=[ToolCall(**add), ToolCall(**rm)], reasoning="thinking"))))
    bus.publish(ev("hook.decision", slot="before_tool_call", hook="clamp", action="rewrite", reason="policy",
                   before=add, after={**add, "arguments_json": '{"a": 1, "b": 3}'}))
    bus.publish(ev("approval.required", batch_id="b1", items=[
        FakeItem("ap1", ToolCall(**rm)).model_dump()]))
    bus.publish(ev("agent.suspended", reason="awaiting_approval", batch_id="b1"))
    timers.advance(0.1)
    assert chat.status == "awaiting_approval"
    tool_cards = {e["call_id"]: e for e in chat.transcript["entries"] if e["kind"] == "tool"}
    assert tool_cards["c2"]["status"] == "awaiting_approval"
    hook = next(e for e in chat.transcript["entries"] if e["kind"] == "hook")
    assert (hook["hook"], hook["action"], hook["count"]) == ("clamp", "rewrite", 1)
    assert hook["after"]["arguments_json"] == '{"a": 1, "b": 3}'

    bus.publish(ev("approval.decided", batch_id="b1", approval_id="ap1", decision="approved", all_decided=True))
    add = {**add, "arguments_json": '{"a": 1, "b": 3}'}  # as the hook rewrote it
    bus.publish(ev("tool.before", call=add, batch_id="b1"))
    bus.publish(ev("tool.before", call=rm, batch_id="b1"))
    bus.publish(ev("tool.after", call=add, result=ToolResult.from_text("4").model_dump(mode="json"),
                   batch_id="b1", duration_ms=1.5))
    bus.publish(ev("tool.after", call=rm, result=ToolResult.from_text("boom", is_error=True).model_dump(mode="json"),
                   batch_id="b1", duration_ms=2.0))
    bus.publish(ev("llm.before", turn=2))
    bus.publish(ev("llm.chunk", kind="text", text="Done: 4", index=0))
    bus.publish(ev("llm.after", turn=2, message=msg_dict(AgentMessage.assistant("Done: 4"))))
    bus.publish(ev("agent.success", stop_reason="completed", final_text="Done: 4", turns=2))
    timers.advance(0.1)

    entries = chat.transcript["entries"]
    kinds = [e["kind"] for e in entries]
    assert kinds == ["user", "assistant", "tool", "tool", "hook", "notice", "assistant"]
    assert entries[0]["text"] == "add and clean"
    assert entries[1]["reasoning"] == "thinking" and entries[1]["text"] == "On it."
    cards = {e["call_id"]: e for e in entries if e["kind"] == "tool"}
    assert cards["c1"]["arguments"] == '{"a": 1, "b": 3}'  # as rewritten by the hook
    assert (cards["c1"]["status"], cards["c1"]["result"], cards["c1"]["duration_ms"]) == ("done", "4", 1.5)
    assert (cards["c2"]["status"], cards["c2"]["is_error"]) == ("error", True)
    assert entries[-1]["text"] == "Done: 4"
    assert chat.status == "completed"
    assert chat.transcript["status"] == "completed"


def test_tool_denied_and_terminal_notices(runtime, timers, ev):
    chat, _ = make_chat(runtime, timers)
    bus = runtime.bus
    bus.publish(ev("agent.started", input=["x"]))
    bus.publish(ev("tool.denied", call=call_dict("c9", "rm"), reason="policy", hook="guard",
                   result=ToolResult.from_text("refused", is_error=True).model_dump(mode="json")))
    bus.publish(ev("agent.cancelled", reason="user"))
    timers.advance(0.1)
    card = next(e for e in chat.transcript["entries"] if e["kind"] == "tool")
    assert (card["status"], card["result"], card["reason"]) == ("denied", "refused", "policy")
    assert chat.status == "cancelled"
    assert chat.transcript["entries"][-1] == {**chat.transcript["entries"][-1], "kind": "notice", "level": "warn"}


def test_chunk_hook_decisions_merge_into_one_line(runtime, timers, ev):
    chat, _ = make_chat(runtime, timers)
    bus = runtime.bus
    bus.publish(ev("llm.before", turn=1))
    for piece in ["a@b.c ", "x@y.z"]:
        bus.publish(ev("hook.decision", slot="on_model_chunk", hook="redact_pii", action="rewrite",
                       before=piece, after="[email] "))
        bus.publish(ev("llm.chunk", kind="text", text="[email] ", index=0))
    timers.advance(0.1)
    hooks = [e for e in chat.transcript["entries"] if e["kind"] == "hook"]
    assert len(hooks) == 1 and hooks[0]["count"] == 2
    assert hooks[0]["before"] == "a@b.c x@y.z"


def test_hello_from_a_fresh_view_resnapshots_the_stream(runtime, timers, ev):
    chat, front = make_chat(runtime, timers)
    runtime.bus.publish(ev("llm.before", turn=1))
    timers.advance(0.1)
    runtime.bus.publish(ev("llm.chunk", kind="text", text="partial", index=0))
    timers.advance(0.1)
    assert chat.transcript["entries"][-1]["text"] == ""  # the snapshot lags the stream
    chat._on_msg(chat, {"type": "hello"})
    assert chat.transcript["entries"][-1]["text"] == "partial"
    runtime.bus.publish(ev("llm.chunk", kind="text", text=" more", index=0))
    timers.advance(0.1)
    assert front.of_type("delta")[-1]["ops"] == [["text", chat.transcript["entries"][-1]["id"], 7, 12, " more"]]


def test_offsets_count_code_points(runtime, timers, ev):
    chat, front = make_chat(runtime, timers)
    runtime.bus.publish(ev("llm.before", turn=1))
    timers.advance(0.1)
    for piece in ["😀", "é", "x"]:
        runtime.bus.publish(ev("llm.chunk", kind="text", text=piece, index=0))
    timers.advance(0.1)
    (op,) = front.of_type("delta")[-1]["ops"]
    assert op[2:] == [0, 3, "😀éx"]


# -- actions ------------------------------------------------------------------------

def test_send_starts_a_run(runtime, timers):
    chat, front = make_chat(runtime, timers)
    chat._on_msg(chat, {"type": "send", "text": "  hello  ", "request_id": "r1"})
    assert runtime.started == ["hello"]
    assert front.of_type("action_result") == [
        {"type": "action_result", "action": "send", "request_id": "r1", "ok": True, "error": None}]


def test_refused_send_answers_the_error(runtime, timers):
    runtime.refuse_with = ArkError(ErrorLayer.RUNTIME, ErrorCode.RUN_ALREADY_ACTIVE, "a run is active")
    chat, front = make_chat(runtime, timers)
    chat._on_msg(chat, {"type": "send", "text": "again", "request_id": "r2"})
    (result,) = front.of_type("action_result")
    assert result["ok"] is False and "run_already_active" in result["error"]
    assert chat.error == result["error"]


def test_stop_suspend_resume_route_to_the_runtime(runtime, timers):
    async def scenario():
        chat, front = make_chat(runtime, timers)
        chat._on_msg(chat, {"type": "stop"})
        chat._on_msg(chat, {"type": "suspend"})
        chat._on_msg(chat, {"type": "resume"})
        await asyncio.sleep(0)
        return front
    front = asyncio.run(scenario())
    assert (runtime.cancelled, runtime.suspends, runtime.resumes) == (1, 1, 1)
    assert [r["action"] for r in front.of_type("action_result")] == ["stop", "suspend", "resume"]
    assert all(r["ok"] for r in front.of_type("action_result"))


async def test_approve_calls_the_controller_and_the_card_goes(runtime, timers):
    runtime.controller.items = [FakeItem("ap1", ToolCall(id="c2", name="rm"))]
    chat, front = make_chat(runtime, timers)
    assert [a["approval_id"] for a in chat.approvals] == ["ap1"]
    chat._on_msg(chat, {"type": "approve", "approval_id": "ap1", "request_id": "q1"})
    assert chat.approvals[0]["deciding"] is True  # before the controller answered
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert runtime.controller.calls == [("approve", "ap1")]
    assert chat.approvals == []
    (result,) = front.of_type("action_result")
    assert result == {"type": "action_result", "action": "approve", "request_id": "q1", "ok": True,
                      "error": None, "approval_id": "ap1"}


async def test_deny_with_reason(runtime, timers):
    runtime.controller.items = [FakeItem("ap1", ToolCall(id="c2", name="rm"))]
    chat, _ = make_chat(runtime, timers)
    chat._on_msg(chat, {"type": "deny", "approval_id": "ap1", "reason": "not today"})
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert runtime.controller.calls == [("deny", "ap1", "not today")]
    assert chat.approvals == []


async def test_controller_error_is_shown_on_the_card(runtime, timers):
    runtime.controller.items = [FakeItem("ap1", ToolCall(id="c2", name="rm"))]
    runtime.controller.fail_with = ArkError(ErrorLayer.RUNTIME, ErrorCode.APPROVAL_HOST_MISSING, "no host")
    chat, front = make_chat(runtime, timers)
    chat._on_msg(chat, {"type": "approve", "approval_id": "ap1", "request_id": "q1"})
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    (card,) = chat.approvals
    assert card["deciding"] is False and "approval_host_missing" in card["error"]
    (result,) = front.of_type("action_result")
    assert result["ok"] is False and result["approval_id"] == "ap1"
    assert "approval_host_missing" in chat.error


async def test_controller_exception_is_answered_too(runtime, timers):
    runtime.controller.items = [FakeItem("ap1", ToolCall(id="c2", name="rm"))]

    async def boom(approval_id):
        raise RuntimeError("controller exploded")

    runtime.controller.approve = boom
    chat, front = make_chat(runtime, timers)
    chat._on_msg(chat, {"type": "approve", "approval_id": "ap1"})
    for _ in range(3):
        await asyncio.sleep(0)
    (result,) = front.of_type("action_result")
    assert result["ok"] is False and "controller exploded" in result["error"]
    assert chat.approvals[0]["error"] == "controller exploded"


def test_unknown_action_is_answered(runtime, timers):
    chat, front = make_chat(runtime, timers)
    chat._on_msg(chat, {"type": "format_disk"})
    assert front.of_type("action_result")[0]["ok"] is False


# -- restore and replay ---------------------------------------------------------------

def test_restored_runtime_shows_history_and_pending_approvals(timers):
    rm = ToolCall(id="c2", name="rm", arguments_json='{"path": "/tmp"}')
    add = ToolCall(id="c1", name="add", arguments_json='{"a": 1}')
    history = (AgentMessage.system("be brief"), AgentMessage.user("hi"),
               AgentMessage.assistant("", tool_calls=[add]), AgentMessage.tool("c1", "2"),
               AgentMessage.assistant("two"), AgentMessage.user("now clean"))
    batch = {"batch_id": "b1", "run_id": "r2", "items": [FakeItem("ap1", rm).model_dump()],
             "model_message": msg_dict(AgentMessage.assistant("cleaning", tool_calls=[rm]))}
    from types import SimpleNamespace
    runtime = FakeRuntime(state=SimpleNamespace(history=history, pending_approval=batch))
    runtime.controller.items = [FakeItem("ap1", rm)]
    chat, _ = make_chat(runtime, timers)
    entries = chat.transcript["entries"]
    assert [e["kind"] for e in entries] == ["user", "assistant", "tool", "assistant", "user", "assistant", "tool"]
    assert entries[2]["result"] == "2" and entries[2]["status"] == "done"
    assert entries[-1]["status"] == "awaiting_approval"
    assert chat.status == "awaiting_approval"
    assert chat.approvals[0]["approval_id"] == "ap1" and chat.approvals[0]["tool_name"] == "rm"


def test_read_only_replay_from_events():
    ev = Events()
    events = [ev("agent.started", input=["hi"]), ev("llm.before", turn=1),
              ev("llm.chunk", kind="text", text="Hel", index=0), ev("llm.chunk", kind="text", text="lo", index=0),
              ev("llm.after", turn=1, message=msg_dict(AgentMessage.assistant("Hello"))),
              ev("agent.success", stop_reason="completed")]
    chat = ChatWidget.from_events([e.to_dict() for e in events])
    front = Frontend(chat)
    assert chat.read_only is True
    assert [(e["kind"], e["text"]) for e in chat.transcript["entries"]] == [("user", "hi"), ("assistant", "Hello")]
    assert chat.status == "completed"
    chat._on_msg(chat, {"type": "send", "text": "more"})
    assert front.of_type("action_result")[0]["ok"] is False


def test_close_unsubscribes(runtime, timers, ev):
    chat, front = make_chat(runtime, timers)
    chat.close()
    runtime.bus.publish(ev("agent.started", input=["x"]))
    timers.advance(1)
    assert front.trait_updates == []
