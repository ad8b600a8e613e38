"""Honest history across a crash (issue 10 item 7): new input to a restored session whose
last run was interrupted never sends the model an unpaired call, and cancelling such a
run answers each open call with what is known of it.

A child runs an agent and is SIGKILLed at a chosen point (tests/durable/_crash_child.py);
a new runtime opened on the same store gets new input or is cancelled. Tool executions
are counted in the side-effect file the child's tools and ours append to.
"""

from __future__ import annotations

import asyncio

import pytest

import arknb as ark
from arknb import ArkError
from arknb.durable import OperationStatus

from ._crash_child import make_tools, open_store
from .test_crash_recovery import counts, crash, tool_answers


def assert_paired(request: ark.ModelRequest) -> None:
    """Every tool call the model is sent is answered before the next non-tool message."""
    open_calls: set[str] = set()
    for message in request.messages:
        if message.role == "tool":
            open_calls.discard(message.tool_call_id)
            continue
        assert not open_calls, f"unpaired calls {sorted(open_calls)} before a {message.role} message"
        if message.role == "assistant":
            open_calls = {call.id for call in message.tool_calls}
    assert not open_calls, f"unpaired calls {sorted(open_calls)} at the end of the request"


def opened(tmp_path, kind: str, turns: list):
    store = open_store(kind, tmp_path)
    model = ark.ScriptedModel(turns)
    runtime = ark.AgentRuntime(model, tools=make_tools(tmp_path), storage=store, session_id="s1")
    return store, model, runtime


async def close(runtime, store) -> None:
    await runtime.aclose()
    if hasattr(store, "aclose"):
        await store.aclose()


@pytest.mark.parametrize("point", ["before_batch", "after_tool_hook"])
async def test_new_input_after_a_crash_answers_the_calls_once_then_sends_a_paired_history(tmp_path, point):
    # before_batch: killed while planning, nothing ran; after_tool_hook: both tools ran and
    # the kill came in a response hook, so their committed results answer them.
    await crash(tmp_path, "sqlite", point)
    assert counts(tmp_path) == ({} if point == "before_batch" else {"fast": 1, "slow": 1})
    store, model, runtime = opened(tmp_path, "sqlite", ["Here is the answer to the new question."])
    result = await asyncio.wait_for(runtime.run("And now a new question"), 60)
    assert result.stop_reason == "completed", result.error
    # The interrupted run's calls were answered first, the way resume() answers them.
    assert counts(tmp_path) == {"fast": 1, "slow": 1}
    assert tool_answers(runtime) == {"c1": "fast 1 done", "c2": "slow 2 done"}
    [request] = model.requests
    assert_paired(request)
    assert request.messages[-1].text == "And now a new question"
    await close(runtime, store)


@pytest.mark.parametrize("kind", ["sqlite", "file"])
async def test_new_input_to_a_run_with_a_call_in_doubt_is_refused_and_changes_nothing(tmp_path, kind):
    await crash(tmp_path, kind, "one_done_one_running" if kind == "sqlite" else "tool_started")
    store, model, runtime = opened(tmp_path, kind, ["Both finished.", "The new answer."])
    with pytest.raises(ArkError) as info:
        await runtime.run("Something else")
    assert info.value.code == "pending_approval_blocks_input"
    assert model.requests == []  # the model never saw the unpaired calls
    history = runtime.history
    items = runtime.controller.list_in_doubt()
    assert items and "slow" in {item.tool_call.name for item in items}
    # Decided, the interrupted run completes; then the input goes through, paired.
    for item in items:
        assert (await runtime.controller.mark_done(item.operation_id, f"{item.tool_call.name} checked")).ok
    assert (await asyncio.wait_for(runtime.current_run.wait(), 60)).stop_reason == "completed"
    assert runtime.history[:len(history)] == history
    result = await asyncio.wait_for(runtime.run("Something else"), 60)
    assert result.stop_reason == "completed"
    assert_paired(model.requests[-1])
    assert counts(tmp_path) == {"fast": 1, "slow": 1}
    await close(runtime, store)


async def test_new_input_is_refused_while_the_interrupted_run_has_a_call_awaiting_approval(tmp_path):
    # Killed while planning c2: c1 planned. Restored with slow registered as dangerous,
    # c2 needs a person's approval: new input is refused, resume() freezes the batch.
    await crash(tmp_path, "sqlite", "before_batch")
    store = open_store("sqlite", tmp_path)
    model = ark.ScriptedModel(["Both finished."])
    runtime = ark.AgentRuntime(model, tools=make_tools(tmp_path, slow_risk="dangerous"), storage=store,
                               session_id="s1")
    with pytest.raises(ArkError) as info:
        await runtime.run("Something else")
    assert info.value.code == "pending_approval_blocks_input"
    assert model.requests == [] and counts(tmp_path) == {}
    result = await asyncio.wait_for(runtime.resume(), 60)
    assert result.stop_reason == "awaiting_approval"
    [item] = runtime.controller.list_pending_approvals()
    assert item.tool_call.name == "slow"
    await close(runtime, store)


async def test_cancelling_a_restored_run_in_doubt_keeps_the_finished_result_and_says_the_fate_is_unknown(tmp_path):
    await crash(tmp_path, "sqlite", "one_done_one_running")
    store, model, runtime = opened(tmp_path, "sqlite", [])
    await runtime.load()
    [item] = runtime.controller.list_in_doubt()
    assert runtime.cancel()
    result = await asyncio.wait_for(runtime.current_run.wait(), 60)
    assert result.stop_reason == "cancelled"
    got = {m.tool_call_id: m for m in runtime.history if m.role == "tool"}
    assert got["c1"].text == "fast 1 done" and not got["c1"].is_error  # it ran: its real result
    assert got["c2"].is_error and got["c2"].text.startswith("cancelled while its outcome was unknown")
    assert model.requests == [] and counts(tmp_path) == {"fast": 1, "slow": 1}
    operation = await store.get_operation(item.operation_id)
    assert operation.completed and operation.status is OperationStatus.INDETERMINATE
    await close(runtime, store)


async def test_with_a_memory_store_an_interrupted_run_is_paused_and_new_input_refused():
    # A memory store does not outlive its process, so the crash is this: a run's state as
    # it was saved mid-run (a tool running) is what a new runtime finds in the store.
    started = asyncio.Event()

    @ark.tool
    async def stuck(n: int) -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    call = ark.ToolCall(id="c1", name="stuck", arguments_json='{"n": 1}', index=0)
    running = ark.MemoryStateStorage()
    first = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(text="Trying.", tool_calls=[call])]),
                             tools=[stuck], storage=running, session_id="mem")
    handle = first.start("go")
    await asyncio.wait_for(started.wait(), 30)
    saved_mid_run = await running.load("mem")
    assert saved_mid_run.is_running and saved_mid_run.history[-1].tool_calls
    first.cancel()
    await asyncio.wait_for(handle.wait(), 30)
    await first.aclose()

    storage = ark.MemoryStateStorage()
    await storage.save(saved_mid_run.model_copy(update={"revision": 0}))  # its first save there
    model = ark.ScriptedModel(["unused"])
    second = ark.AgentRuntime(model, tools=[stuck], storage=storage, session_id="mem")
    await second.load()
    [item] = second.controller.list_in_doubt()
    assert item.tool_call.id == "c1"
    with pytest.raises(ArkError) as info:
        await second.run("something else")
    assert info.value.code == "pending_approval_blocks_input" and model.requests == []
    assert second.cancel()
    assert (await asyncio.wait_for(second.current_run.wait(), 30)).stop_reason == "cancelled"
    [answer] = [m for m in second.history if m.role == "tool"]
    assert answer.is_error and answer.text.startswith("cancelled while its outcome was unknown")
    await second.aclose()


@pytest.mark.parametrize("decision", ["abort", "stop", "rewrite"])
async def test_each_after_tool_call_decision_is_stored_in_its_operation_beside_the_raw_result(tmp_path, decision):
    """after_tool_call runs per result in call order and each call's operation keeps its
    response-hook records, its raw result and its effective one (the rewriting hook named
    as source); after an abort the later answer's hooks are recorded as skipped."""
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")

    @ark.tool
    async def work(n: int) -> str:
        """Work."""
        return f"work {n} done"

    calls = [ark.ToolCall(id=f"c{i}", name="work", arguments_json=f'{{"n": {i}}}', index=i - 1) for i in (1, 2)]
    runtime = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(text="Working.", tool_calls=calls), "Done."]),
                               tools=[work], storage=store, session_id="ops")
    order = []

    @runtime.hooks.after_tool_call
    def judge(ctx):
        order.append(ctx.call.id)
        if ctx.call.id != "c1":
            return None
        if decision == "abort":
            return ark.ToolResultHookResult.abort("the result looks wrong")
        if decision == "stop":
            return ark.ToolResultHookResult.stop()
        return ark.ToolResultHookResult.proceed(ark.ToolResult.from_text("work 1 checked"))

    result = await runtime.run("go")
    assert result.stop_reason == {"abort": "aborted", "stop": "stopped", "rewrite": "completed"}[decision]
    ops = {op.purpose_key.rsplit(":", 1)[-1]: op for op in await store.list_operations("ops") if op.kind == "tool_call"}
    first, second = ops["c1"], ops["c2"]
    assert first.completed and second.completed
    assert first.raw_result["contents"][0]["text"] == "work 1 done"  # the raw result is never overwritten
    assert [(r.hook, r.action) for r in first.records("response")] == [("judge", {"abort": "abort", "stop": "stop",
                                                                                 "rewrite": "rewrite"}[decision])]
    if decision == "abort":
        assert order == ["c1"] and first.status == "blocked" and first.error.code == "hook_abort"
        assert [r.action for r in second.records("response")] == ["skipped"]
        assert second.status == "succeeded" and second.effective_result["contents"][0]["text"] == "work 2 done"
    elif decision == "rewrite":
        assert order == ["c1", "c2"] and first.result_source == "judge"
        assert first.effective_result["contents"][0]["text"] == "work 1 checked"
        assert [m.text for m in runtime.history if m.role == "tool"] == ["work 1 checked", "work 2 done"]
    else:
        assert order == ["c1", "c2"] and [r.action for r in second.records("response")] == ["proceed"]
    await runtime.aclose()
    await store.aclose()
