"""ChatWidget's kernel side with a fake front end: what it sends, and what a view makes of it."""

import asyncio
from types import SimpleNamespace

from arknb.domain import AgentMessage, ArkError, ErrorCode, ErrorLayer, ToolCall, ToolResult
from arknb.widgets import ChatWidget

from .chat_front import ChatFront
from .conftest import Events, FakeItem, FakeRuntime, call_dict, msg_dict


def make_chat(runtime, timers, **kw):
    chat = ChatWidget(runtime, clock=timers.clock, call_later=timers.call_later, **kw)
    return chat, ChatFront(chat)


def streamed_text(front, entry_id, field="text"):
    pieces = []
    expect = 0
    for op in front.ops():
        if op[0] == field and op[1] == entry_id:
            _, _, start, end, text = op
            assert start == expect, "deltas must be contiguous"
            pieces.append(text)
            expect = end
    return "".join(pieces)


def assistant_ids(chat):
    return [e["id"] for e in chat.transcript["entries"] if e["kind"] == "assistant"]


def one_run(bus, ev, n, *, tool=True):
    """The events of one ordinary run: input, a streamed answer, a tool call, a final answer."""
    call = call_dict(f"c{n}", "add", '{"a": 1, "b": 2}')
    bus.publish(ev("agent.started", input=[f"question {n}"]))
    bus.publish(ev("llm.before", turn=1))
    for piece in ["Let ", "me ", "add."]:
        bus.publish(ev("llm.chunk", kind="text", text=piece, index=0))
    calls = [ToolCall(**call)] if tool else []
    if tool:  # the call's arguments stream too (llm.chunk kind tool_call), before the message completes
        for piece in ['{"a": 1, ', '"b": 2}']:
            bus.publish(ev("llm.chunk", kind="tool_call", text=piece, index=0, call_id=f"c{n}", name="add"))
    bus.publish(ev("llm.after", turn=1, message=msg_dict(AgentMessage.assistant("Let me add.", tool_calls=calls))))
    if tool:
        bus.publish(ev("tool.before", call=call))
        bus.publish(ev("tool.after", call=call, result=ToolResult.from_text("3").model_dump(mode="json"),
                       duration_ms=1.0))
        bus.publish(ev("llm.before", turn=2))
        bus.publish(ev("llm.chunk", kind="text", text=f"It is 3 ({n}).", index=0))
        bus.publish(ev("llm.after", turn=2, message=msg_dict(AgentMessage.assistant(f"It is 3 ({n})."))))
    bus.publish(ev("agent.success", stop_reason="completed", turns=2))


# -- streaming and structure ---------------------------------------------------------------

def test_streamed_tool_call_arguments_stay_out_of_the_answer_text(runtime, timers, ev):
    chat, front = make_chat(runtime, timers)
    one_run(runtime.bus, ev, 1)
    timers.advance(0.1)
    answers = [e["text"] for e in chat.transcript["entries"] if e["kind"] == "assistant"]
    assert answers == ["Let me add.", "It is 3 (1)."]
    card = next(e for e in chat.transcript["entries"] if e["kind"] == "tool")
    assert card["call_id"] == "c1"
    assert front.entries == chat.transcript["entries"]


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
    assert 20 <= len(deltas) <= 36
    assert streamed_text(front, entry) == "".join(chunks)
    assert front.entries == chat.transcript["entries"]


def test_structural_event_goes_out_at_once_as_a_change_not_a_snapshot(runtime, timers, ev):
    chat, front = make_chat(runtime, timers)
    runtime.bus.publish(ev("agent.started", input=["go"]))
    runtime.bus.publish(ev("llm.before", turn=1))
    timers.advance(1.0)
    for piece in ["Let ", "me ", "add."]:
        runtime.bus.publish(ev("llm.chunk", kind="text", text=piece, index=0))
    sent_before = len(front.of_type("delta"))
    call = call_dict("c1", "add", '{"a": 1, "b": 2}')
    message = AgentMessage.assistant("Let me add.", tool_calls=[ToolCall(**call)])
    runtime.bus.publish(ev("llm.after", turn=1, message=msg_dict(message)))
    # no time passed: the structural event flushed by itself, as a delta
    assert len(front.of_type("delta")) == sent_before + 1
    last = front.of_type("delta")[-1]["ops"]
    assert ["text", "e2", 0, 11, "Let me add."] in last
    assert ["patch", "e2", {"streaming": False}] in last
    assert ["add", {**chat.transcript["entries"][2]}] in last
    entries = front.entries
    assert [e["kind"] for e in entries] == ["user", "assistant", "tool"]
    assert entries[1]["text"] == "Let me add." and entries[1]["streaming"] is False
    assert entries[2]["status"] == "requested" and entries[2]["name"] == "add"
    assert len(front.snapshots) == 0  # only the one the widget was built with


def test_a_session_of_runs_costs_the_same_bytes_per_run_at_the_end_as_at_the_start(runtime, timers, ev):
    chat, front = make_chat(runtime, timers)
    per_run = []
    for n in range(1, 201):
        before = front.bytes
        one_run(runtime.bus, ev, n)
        timers.advance(0.1)
        per_run.append(front.bytes - before)
    assert front.snapshots == []  # no view asked: the whole transcript never went out again
    early, late = sorted(per_run[5:15])[5], sorted(per_run[-10:])[5]
    assert late <= early * 1.2, (early, late)
    assert front.entries == chat.transcript["entries"]
    assert len(chat.transcript["entries"]) == 800


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
    bus.publish(ev("approval.required", batch_id="b1", items=[FakeItem("ap1", ToolCall(**rm)).model_dump()]))
    bus.publish(ev("agent.suspended", reason="awaiting_approval", batch_id="b1"))
    timers.advance(0.1)
    assert chat.status == "awaiting_approval"
    tool_cards = {e["call_id"]: e for e in chat.transcript["entries"] if e["kind"] == "tool"}
    assert tool_cards["c2"]["status"] == "awaiting_approval"
    hook = next(e for e in chat.transcript["entries"] if e["kind"] == "hook")
    assert (hook["hook"], hook["action"], hook["count"]) == ("clamp", "rewrite", 1)
    assert hook["after"]["arguments_json"] == '{"a": 1, "b": 3}'
    assert front.entries == chat.transcript["entries"]

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
    assert front.entries == entries


def test_tool_denied_and_terminal_notices(runtime, timers, ev):
    chat, front = make_chat(runtime, timers)
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
    assert front.entries == chat.transcript["entries"]


def test_chunk_hook_decisions_merge_into_one_line(runtime, timers, ev):
    chat, front = make_chat(runtime, timers)
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
    assert front.entries == chat.transcript["entries"]


def test_hello_from_a_new_view_gets_a_fresh_snapshot_and_the_stream_goes_on(runtime, timers, ev):
    chat, first = make_chat(runtime, timers)
    runtime.bus.publish(ev("llm.before", turn=1))
    timers.advance(0.1)
    runtime.bus.publish(ev("llm.chunk", kind="text", text="partial", index=0))
    timers.advance(0.1)
    assert chat._snapshot["entries"] == []  # the snapshot trait is only refreshed for a view that asks
    chat._on_msg(chat, {"type": "hello"})
    timers.advance(0.1)
    snap = chat._snapshot
    assert snap["entries"][-1]["text"] == "partial" and snap["seq"] == first.seq
    second = ChatFront(chat)  # a view in a reloaded page starts from that snapshot
    runtime.bus.publish(ev("llm.chunk", kind="text", text=" more", index=0))
    timers.advance(0.1)
    assert first.of_type("delta")[-1]["ops"] == [["text", snap["entries"][-1]["id"], 7, 12, " more"]]
    assert first.entries == second.entries == chat.transcript["entries"]
    assert second.entries[-1]["text"] == "partial more"


def test_a_view_that_missed_a_delta_sees_the_gap_and_catches_up_with_hello(runtime, timers, ev):
    chat, front = make_chat(runtime, timers)
    one_run(runtime.bus, ev, 1)
    timers.advance(0.1)
    lost = front.of_type("delta")[-1]
    front.seq -= 1  # pretend that message never arrived
    front.entries = [e for e in front.entries if e["id"] not in {op[1]["id"] for op in lost["ops"] if op[0] == "add"}]
    one_run(runtime.bus, ev, 2)
    timers.advance(0.1)
    assert front.gaps >= 1  # seq jumped: the view would say hello
    chat._on_msg(chat, {"type": "hello"})
    timers.advance(0.1)
    assert front.entries == chat.transcript["entries"]


def test_offsets_count_code_points(runtime, timers, ev):
    chat, front = make_chat(runtime, timers)
    runtime.bus.publish(ev("llm.before", turn=1))
    timers.advance(0.1)
    for piece in ["😀", "é", "x"]:
        runtime.bus.publish(ev("llm.chunk", kind="text", text=piece, index=0))
    timers.advance(0.1)
    (op,) = [op for op in front.of_type("delta")[-1]["ops"] if op[0] == "text"]
    assert op[2:] == [0, 3, "😀éx"]


def test_front_end_writes_to_kernel_traits_are_ignored(runtime, timers):
    chat, _ = make_chat(runtime, timers)
    chat.set_state({"_snapshot": {"seq": 99, "entries": [{"id": "x"}]}, "status": "completed"})
    assert chat._snapshot["seq"] == 0 and chat.status == "idle"


async def test_the_send_box_unblocks_when_a_real_run_ends():
    # A run's last event goes out a moment before the runtime lets the run go, and nothing
    # is published after that: the block must follow the events, or it stays for good.
    # interval=0 flushes as each event arrives, as a busy loop's timer may.
    import arknb as ark

    runtime = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(text="hi")]))
    chat = ChatWidget(runtime, interval=0)
    seen = []
    chat.observe(lambda change: seen.append(change["new"]), names="input_block")
    await runtime.run("go")
    assert any("run is in progress" in text for text in seen)
    assert chat.status == "completed" and chat.input_block == ""


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


def test_input_block_names_what_blocks_the_send_box(runtime, timers, ev):
    chat, _ = make_chat(runtime, timers)
    assert chat.input_block == ""
    runtime.is_running = True
    runtime.bus.publish(ev("agent.started", input=["x"]))
    timers.advance(0.1)
    assert "run is in progress" in chat.input_block
    runtime.is_running = False
    runtime.controller.items = [FakeItem("ap1", ToolCall(id="c2", name="rm"))]
    runtime.bus.publish(ev("approval.required", batch_id="b1", items=[runtime.controller.items[0].model_dump()]))
    runtime.bus.publish(ev("agent.suspended", reason="awaiting_approval", batch_id="b1"))
    timers.advance(0.1)
    assert "approve or deny" in chat.input_block
    runtime.bus.publish(ev("runtime.detached", reason="replaced"))
    timers.advance(0.1)
    assert chat.input_block == "A newer chat took over this session: the live one is further down."


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


def test_suspending_shows_until_the_run_reaches_its_checkpoint(runtime, timers, ev):
    chat, _ = make_chat(runtime, timers)
    runtime.bus.publish(ev("agent.started", input=["x"]))
    chat._on_msg(chat, {"type": "suspend", "request_id": "s1"})
    assert chat.suspending is True
    runtime.bus.publish(ev("llm.chunk", kind="text", text="still going", index=0))
    timers.advance(0.1)
    assert chat.suspending is True
    runtime.bus.publish(ev("agent.suspended", reason="suspend"))
    timers.advance(0.1)
    assert chat.suspending is False and chat.status == "suspended"


def test_suspend_with_nothing_running_is_refused(runtime, timers):
    runtime.request_suspend = lambda: False
    chat, front = make_chat(runtime, timers)
    chat._on_msg(chat, {"type": "suspend", "request_id": "s1"})
    (result,) = front.of_type("action_result")
    assert result["ok"] is False and "nothing is running" in result["error"]
    assert chat.suspending is False


async def test_approve_calls_the_controller_and_the_card_goes(runtime, timers):
    runtime.controller.items = [FakeItem("ap1", ToolCall(id="c2", name="rm"))]
    chat, front = make_chat(runtime, timers)
    assert [(a["approval_id"], a["live"]) for a in chat.approvals] == [("ap1", True)]
    chat._on_msg(chat, {"type": "approve", "approval_id": "ap1", "request_id": "q1"})
    assert chat.approvals[0]["deciding"] is True and chat.approvals[0]["live"] is False  # before the answer
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert runtime.controller.calls == [("approve", "ap1")]
    assert chat.approvals == []
    (result,) = front.of_type("action_result")
    assert result == {"type": "action_result", "action": "approve", "request_id": "q1", "ok": True,
                      "error": None, "approval_id": "ap1", "decision": "approved"}


async def test_a_second_click_while_deciding_never_reaches_the_controller(runtime, timers):
    runtime.controller.items = [FakeItem("ap1", ToolCall(id="c2", name="rm"))]
    chat, front = make_chat(runtime, timers)
    chat._on_msg(chat, {"type": "approve", "approval_id": "ap1", "request_id": "q1"})
    chat._on_msg(chat, {"type": "approve", "approval_id": "ap1", "request_id": "q2"})
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert runtime.controller.calls == [("approve", "ap1")]
    second = next(r for r in front.of_type("action_result") if r["request_id"] == "q2")
    assert second["ok"] is False and "already being saved" in second["error"]


async def test_a_card_decided_elsewhere_shows_that_decision_and_runs_nothing(runtime, timers):
    item = FakeItem("ap1", ToolCall(id="c2", name="rm"))
    runtime.controller.items = [item]
    chat, front = make_chat(runtime, timers)

    async def already(approval_id):
        runtime.controller.calls.append(("approve", approval_id))
        return SimpleNamespace(ok=False, approval_id=approval_id, decision="denied", all_decided=True,
                               error=ArkError(ErrorLayer.RUNTIME, ErrorCode.APPROVAL_ALREADY_RESOLVED,
                                              "decided by another runtime"))

    runtime.controller.approve = already
    chat._on_msg(chat, {"type": "approve", "approval_id": "ap1", "request_id": "q1"})
    for _ in range(3):
        await asyncio.sleep(0)
    (card,) = chat.approvals  # the stale runtime still lists it; the card knows better
    assert (card["decision"], card["live"]) == ("denied", False)
    assert "elsewhere" in card["note"]
    (result,) = front.of_type("action_result")
    assert result["ok"] is False and result["decision"] == "denied"
    # a further click is refused by the widget itself
    chat._on_msg(chat, {"type": "approve", "approval_id": "ap1", "request_id": "q2"})
    assert runtime.controller.calls == [("approve", "ap1")]


async def test_the_widget_rereads_the_controller_before_acting(runtime, timers):
    runtime.controller.items = [FakeItem("ap1", ToolCall(id="c2", name="rm"))]
    chat, front = make_chat(runtime, timers)
    runtime.controller.items = []  # decided in code; this view has not heard yet
    chat._on_msg(chat, {"type": "approve", "approval_id": "ap1", "request_id": "q1"})
    await asyncio.sleep(0)
    assert runtime.controller.calls == []
    (result,) = front.of_type("action_result")
    assert result["ok"] is False and "not pending" in result["error"]
    timers.advance(0.1)
    assert chat.approvals == []


async def test_state_conflict_leaves_a_dead_card(runtime, timers):
    runtime.controller.items = [FakeItem("ap1", ToolCall(id="c2", name="rm"))]
    runtime.controller.fail_with = ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CONFLICT, "revision moved on")
    chat, _ = make_chat(runtime, timers)
    chat._on_msg(chat, {"type": "approve", "approval_id": "ap1"})
    for _ in range(3):
        await asyncio.sleep(0)
    (card,) = chat.approvals
    assert card["live"] is False and "another runtime" in card["note"] and "state_conflict" in card["error"]


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
    assert card["deciding"] is False and card["live"] is True and "approval_host_missing" in card["error"]
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


# -- detached ------------------------------------------------------------------------

async def test_a_detached_chat_says_so_and_acts_no_more(runtime, timers, ev):
    runtime.controller.items = [FakeItem("ap1", ToolCall(id="c2", name="rm"))]
    chat, front = make_chat(runtime, timers)
    runtime.bus.publish(ev("runtime.detached", reason="replaced"))
    timers.advance(0.1)
    assert chat.detached == "A newer chat took over this session: the live one is further down."  # one sentence, no internals
    assert [a["live"] for a in chat.approvals] == [False]
    for action in ({"type": "approve", "approval_id": "ap1"}, {"type": "send", "text": "hi"}, {"type": "stop"}):
        chat._on_msg(chat, {**action, "request_id": action["type"]})
    await asyncio.sleep(0)
    assert runtime.controller.calls == [] and runtime.started == [] and runtime.cancelled == 0
    results = front.of_type("action_result")
    assert [r["ok"] for r in results] == [False, False, False]
    assert all(r["error"].startswith("A newer chat took over") for r in results)
    assert results[0]["approval_id"] == "ap1"


def test_closed_runtime_detaches_with_its_reason(runtime, timers, ev):
    chat, _ = make_chat(runtime, timers)
    runtime.bus.publish(ev("runtime.detached", reason="closed"))
    timers.advance(0.1)
    assert "aclose" in chat.detached


def test_a_chat_on_an_already_detached_runtime_starts_detached(timers):
    rt = FakeRuntime()
    rt.detached = "replaced"
    chat, _ = make_chat(rt, timers)
    assert chat.detached.startswith("A newer chat took over")


# -- restore and replay ---------------------------------------------------------------

def test_restored_runtime_shows_history_and_pending_approvals_once(timers):
    rm = ToolCall(id="c2", name="rm", arguments_json='{"path": "/tmp"}')
    add = ToolCall(id="c1", name="add", arguments_json='{"a": 1}')
    cleaning = AgentMessage.assistant("cleaning", tool_calls=[rm])
    # The runtime appends the model message to history before it freezes the batch.
    history = (AgentMessage.system("be brief"), AgentMessage.user("hi"),
               AgentMessage.assistant("", tool_calls=[add]), AgentMessage.tool("c1", "2"),
               AgentMessage.assistant("two"), AgentMessage.user("now clean"), cleaning)
    batch = {"batch_id": "b1", "run_id": "r2", "items": [FakeItem("ap1", rm).model_dump()],
             "model_message": msg_dict(cleaning)}
    runtime = FakeRuntime(state=SimpleNamespace(history=history, pending_approval=batch))
    runtime.controller.items = [FakeItem("ap1", rm)]
    chat, front = make_chat(runtime, timers)
    entries = chat.transcript["entries"]
    assert [e["kind"] for e in entries] == ["user", "assistant", "tool", "assistant", "user", "assistant", "tool"]
    assert [e["text"] for e in entries if e["kind"] == "assistant"].count("cleaning") == 1
    assert entries[2]["result"] == "2" and entries[2]["status"] == "done"
    assert entries[-1]["status"] == "awaiting_approval"
    assert chat.status == "awaiting_approval"
    assert chat.approvals[0]["approval_id"] == "ap1" and chat.approvals[0]["tool_name"] == "rm"
    assert front.entries == entries


def test_a_batch_whose_message_is_not_in_history_still_shows_it(timers):
    rm = ToolCall(id="c2", name="rm", arguments_json='{"path": "/tmp"}')
    batch = {"batch_id": "b1", "run_id": "r2", "items": [FakeItem("ap1", rm).model_dump()],
             "model_message": msg_dict(AgentMessage.assistant("cleaning", tool_calls=[rm]))}
    runtime = FakeRuntime(state=SimpleNamespace(history=(AgentMessage.user("clean"),), pending_approval=batch))
    chat, _ = make_chat(runtime, timers)
    assert [(e["kind"], e.get("text")) for e in chat.transcript["entries"]][:2] == [("user", "clean"),
                                                                                     ("assistant", "cleaning")]


def test_state_loaded_shows_the_saved_session(timers, ev):
    runtime = FakeRuntime()
    runtime.controller.items = []
    chat, front = make_chat(runtime, timers)
    assert chat.transcript["entries"] == []
    rm = ToolCall(id="c2", name="rm", arguments_json='{"path": "/tmp"}')
    message = AgentMessage.assistant("cleaning", tool_calls=[rm])
    runtime.state = SimpleNamespace(history=(AgentMessage.user("clean"), message), pending_approval={
        "batch_id": "b1", "run_id": "r2", "items": [FakeItem("ap1", rm).model_dump()],
        "model_message": msg_dict(message)})
    runtime.controller.items = [FakeItem("ap1", rm)]
    runtime.bus.publish(ev("state.loaded", revision=3, messages=2, pending_approval=True))
    timers.advance(0.1)
    assert [e["kind"] for e in chat.transcript["entries"]] == ["user", "assistant", "tool"]
    assert front.entries == chat.transcript["entries"]  # a fresh snapshot went out
    assert chat.status == "awaiting_approval"
    assert [(a["approval_id"], a["live"]) for a in chat.approvals] == [("ap1", True)]


def test_read_only_replay_from_events():
    ev = Events()
    events = [ev("agent.started", input=["hi"]), ev("llm.before", turn=1),
              ev("llm.chunk", kind="text", text="Hel", index=0), ev("llm.chunk", kind="text", text="lo", index=0),
              ev("llm.after", turn=1, message=msg_dict(AgentMessage.assistant("Hello"))),
              ev("agent.success", stop_reason="completed")]
    chat = ChatWidget.from_events([e.to_dict() for e in events])
    front = ChatFront(chat)
    assert chat.read_only is True
    assert [(e["kind"], e["text"]) for e in chat.transcript["entries"]] == [("user", "hi"), ("assistant", "Hello")]
    assert front.entries == chat.transcript["entries"]
    assert chat.status == "completed"
    chat._on_msg(chat, {"type": "send", "text": "more"})
    assert front.of_type("action_result")[0]["ok"] is False


async def test_a_chat_on_a_runtime_not_loaded_yet_loads_it_and_shows_the_saved_session(timers, ev):
    rm = ToolCall(id="c2", name="rm", arguments_json='{"path": "/tmp"}')
    message = AgentMessage.assistant("cleaning", tool_calls=[rm])
    runtime = FakeRuntime()
    runtime.loaded = False

    async def load():
        runtime.state = SimpleNamespace(history=(AgentMessage.user("clean"), message), pending_approval={
            "batch_id": "b1", "run_id": "r2", "items": [FakeItem("ap1", rm).model_dump()],
            "model_message": msg_dict(message)})
        runtime.controller.items = [FakeItem("ap1", rm)]
        runtime.loaded = True
        runtime.bus.publish(ev("state.loaded", revision=3, messages=2, pending_approval=True))
        return runtime.state

    runtime.load = load
    chat, front = make_chat(runtime, timers)
    assert chat.status == "loading" and chat.input_block == "loading the saved session…"
    await asyncio.sleep(0)
    timers.advance(0.1)
    assert [e["kind"] for e in chat.transcript["entries"]] == ["user", "assistant", "tool"]
    assert front.entries == chat.transcript["entries"]
    assert chat.status == "awaiting_approval" and [a["approval_id"] for a in chat.approvals] == ["ap1"]


async def test_a_saved_session_that_cannot_be_read_is_named_in_the_chat(timers):
    runtime = FakeRuntime()
    runtime.loaded = False

    async def load():
        raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT, "/tmp/s.json: not JSON")

    runtime.load = load
    chat, _ = make_chat(runtime, timers)
    for _ in range(3):
        await asyncio.sleep(0)
    timers.advance(0.1)
    assert "could not load the saved session: state_corrupt: /tmp/s.json" in chat.error
    assert chat.status == "idle"


def test_the_chat_names_its_session_for_the_views_and_a_view_cannot_change_it():
    """A stale view finds the live chat of the same session by it (issue 25 item 4)."""
    import arknb as ark

    runtime = ark.AgentRuntime(ark.ScriptedModel(["hi"]), session_id="workshop-1")
    chat = ChatWidget(runtime, interval=0, call_later=lambda delay, callback: None)
    try:
        assert chat.session_id == "workshop-1"
        chat.set_state({"session_id": "someone-else"})
        assert chat.session_id == "workshop-1"
    finally:
        chat.close()
