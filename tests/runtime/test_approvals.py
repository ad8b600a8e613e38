"""Approval flow (DESIGN §7, seed 000 §8, checklist §14 "审批与可恢复") and the §10 pitfalls."""

from __future__ import annotations

import asyncio

import pytest

import arknb as ark
from arknb import (
    ArkError, EventTypes, ModelChunkHookResult, ScriptedTurn, StopReason, ToolCallHookResult,
)

from ._approval_kit import (
    FaultyStorage, Tools, assert_history_paired, call, dangerous_turn, finish_background, make_runtime,
)


async def test_dangerous_tool_publishes_approval_required():
    runtime, tools, log = make_runtime([dangerous_turn(), "Done."])

    result = await runtime.run("Clear the cache")

    assert result.stop_reason == "awaiting_approval"
    assert tools.ran == []
    [required] = log.of(EventTypes.APPROVAL_REQUIRED)
    [item] = required.payload["items"]
    assert item["tool_call"]["id"] == "c1" and item["tool_call"]["name"] == "clear_cache"
    assert item["risk_level"] == "dangerous" and item["decision"] == "pending"
    assert required.payload["batch_id"] == runtime.state.pending_approval.batch_id
    # approval.required, then agent.suspended, then nothing but the run's own end.
    types = log.types()
    assert types.index(EventTypes.APPROVAL_REQUIRED) + 1 == types.index(EventTypes.AGENT_SUSPENDED)
    assert log.of(EventTypes.AGENT_SUSPENDED)[0].payload["reason"] == "awaiting_approval"
    [pending] = runtime.controller.list_pending_approvals()
    assert pending.approval_id == item["approval_id"]


async def test_any_defer_freezes_whole_batch_zero_side_effects():
    turn = ScriptedTurn(text="Both.", tool_calls=[call("c1", "add", a=1, b=2),
                                                  call("c2", "clear_cache", 1, path="/x"),
                                                  call("c3", "add", 2, a=3, b=4)])
    runtime, tools, log = make_runtime([turn, "Done."])

    result = await runtime.run("go")

    assert result.stop_reason == "awaiting_approval"
    assert tools.ran == []  # the safe calls did not run ahead of the decision
    assert not log.of(EventTypes.TOOL_BEFORE) and not log.of(EventTypes.TOOL_AFTER)
    batch = runtime.state.pending_approval
    assert [c.id for c in batch.allowed_calls] == ["c1", "c3"]
    assert [i.tool_call.id for i in batch.items] == ["c2"]
    # History ends with the assistant message whose calls are still unanswered (frozen, not lost).
    assert runtime.history[-1].tool_calls and runtime.history[-1].role == "assistant"


async def test_user_hook_defer_freezes_batch_with_call_as_rewritten():
    runtime, tools, log = make_runtime([ScriptedTurn(tool_calls=[call("c1", "add", a=1, b=2),
                                                                call("c2", "add", 1, a=5, b=5)]), "Done."])

    @runtime.hooks.before_tool_call(name="rewrite", order=0)
    def rewrite(ctx):
        if ctx.call.id == "c2":
            return ToolCallHookResult.proceed(ctx.call.with_arguments({"a": 50, "b": 50}))
        return None

    @runtime.hooks.before_tool_call(name="ask_big", order=1)
    def ask_big(ctx):
        return ToolCallHookResult.defer("big numbers") if ctx.call.arguments["a"] > 10 else None

    result = await runtime.run("go")

    assert result.stop_reason == "awaiting_approval" and tools.ran == []
    [item] = runtime.controller.list_pending_approvals()
    assert item.tool_call.id == "c2" and item.tool_call.arguments == {"a": 50, "b": 50}
    assert item.reason == "big numbers"
    await runtime.controller.approve(item.approval_id)
    final = await finish_background(runtime)
    assert final.stop_reason == "completed"
    assert tools.ran == [("add", (1, 2)), ("add", (50, 50))]


async def test_mandatory_save_happens_before_approval_required():
    order: list = []
    storage = FaultyStorage(log=order)
    runtime, _, log = make_runtime([dangerous_turn(), "Done."], storage=storage)

    @runtime.hooks.before_persist_state
    def skip_everything(ctx):
        return ark.StatePersistenceHookResult.skip("too noisy")

    await runtime.run("go")

    required_at = next(i for i, e in enumerate(order) if e[:2] == ("event", EventTypes.APPROVAL_REQUIRED))
    suspended_at = next(i for i, e in enumerate(order) if e[:2] == ("event", EventTypes.AGENT_SUSPENDED))
    saves_before = [e for e in order[:required_at] if e[0] == "save"]
    # Autosaves were skipped by the hook; the awaiting_approval save was not, and came first.
    assert saves_before == [("save", 1, "ok")]
    assert required_at < suspended_at
    persisted = [e[2] for e in order[:required_at] if e[:2] == ("event", EventTypes.STATE_PERSISTED)]
    assert persisted[-1]["reason"] == "awaiting_approval"
    assert persisted[-1]["mandatory"] is True and persisted[-1]["skipped"] is False
    saved = storage.saved[0]
    assert saved.pending_approval is not None and saved.pending_approval.items[0].tool_call.id == "c1"


async def test_awaiting_approval_is_resumable_pause():
    storage = ark.MemoryStateStorage()
    runtime, _, log = make_runtime([dangerous_turn(), "Done."], storage=storage)

    result = await runtime.run("go")

    assert result.stop_reason == StopReason.AWAITING_APPROVAL
    assert result.resumable and result.persisted
    assert not log.of(EventTypes.AGENT_ERROR) and not log.of(EventTypes.AGENT_CANCELLED)
    assert not runtime.is_running  # the run ended: nothing holds the loop while a human decides
    saved = await storage.load(runtime.session_id)
    assert saved.is_running and not saved.not_resumable and saved.pending_approval is not None
    assert saved.last_stop_reason == "awaiting_approval"


async def test_approve_runs_approved_and_allowed_calls_after_last_decision():
    turn = ScriptedTurn(tool_calls=[call("c1", "clear_cache", path="/a"), call("c2", "add", 1, a=1, b=2),
                                    call("c3", "drop_table", 2, table="t")])
    runtime, tools, log = make_runtime([turn, "Done."])
    await runtime.run("go")
    first, second = runtime.controller.list_pending_approvals()

    decided = await runtime.controller.approve(first.approval_id)
    assert decided.ok and not decided.all_decided
    await asyncio.sleep(0)  # give a wrongly started continuation a chance to run
    assert tools.ran == [] and runtime.current_run is None

    decided = await runtime.controller.approve(second.approval_id)
    assert decided.ok and decided.all_decided
    result = await finish_background(runtime)

    assert result.stop_reason == "completed" and result.text == "Done."
    assert sorted(tools.names()) == ["add", "clear_cache", "drop_table"]
    answers = [m for m in runtime.history if m.role == "tool"]
    assert [m.tool_call_id for m in answers] == ["c1", "c2", "c3"]  # call order, not decision order
    assert_history_paired(runtime.history)


async def test_deny_carries_reason_to_model_as_tool_denied_result():
    runtime, tools, log = make_runtime([dangerous_turn(call("c2", "add", 1, a=1, b=2)), "Understood."])
    await runtime.run("go")
    [item] = runtime.controller.list_pending_approvals()

    decided = await runtime.controller.deny(item.approval_id, "not on a Friday")
    result = await finish_background(runtime)

    assert decided.ok and decided.decision == "denied" and decided.all_decided
    assert result.stop_reason == "completed"
    assert tools.ran == [("add", (1, 2))]  # the allowed call still runs
    last_request = runtime.model.requests[-1]
    denied = next(m for m in last_request.messages if m.role == "tool" and m.tool_call_id == "c1")
    assert denied.is_error and "not on a Friday" in denied.text and "tool_denied" in denied.text
    [event] = log.of(EventTypes.TOOL_DENIED)
    assert event.payload["result"]["error_code"] == "tool_denied"
    assert event.payload["reason"] == "not on a Friday"


async def test_resolution_publishes_approval_resolved_and_agent_resumed():
    runtime, _, log = make_runtime([dangerous_turn(), "Done."])
    first = await runtime.run("go")
    [item] = runtime.controller.list_pending_approvals()

    await runtime.controller.approve(item.approval_id)
    result = await finish_background(runtime)

    types = log.types()
    tail = types[types.index(EventTypes.AGENT_SUSPENDED) + 1:]
    # The decision is saved (consuming the batch) before it is announced.
    assert tail[:4] == [EventTypes.STATE_PERSISTED, EventTypes.APPROVAL_DECIDED, EventTypes.APPROVAL_RESOLVED,
                        EventTypes.AGENT_RESUMED]
    assert log.events[types.index(EventTypes.APPROVAL_DECIDED) - 1].payload["reason"] == "approval_resolved"
    [resolved] = log.of(EventTypes.APPROVAL_RESOLVED)
    assert resolved.payload["items"][0]["decision"] == "approved"
    [resumed] = log.of(EventTypes.AGENT_RESUMED)
    assert resumed.payload == {"reason": "approval", "previous_run_id": first.run_id}
    # The paused run goes on under its own id (its operations are keyed by it, DESIGN §13).
    assert types[-1] == EventTypes.AGENT_SUCCESS and result.run_id == resumed.run_id == first.run_id
    sequences = [e.sequence for e in log.events]
    assert sequences == sorted(sequences) and len(set(sequences)) == len(sequences)


async def test_continuation_runs_in_background():
    gate = asyncio.Event()
    entered = asyncio.Event()

    @ark.tool(risk="dangerous")
    async def slow_delete(path: str) -> str:
        """Delete slowly."""
        entered.set()
        await gate.wait()
        return "deleted"

    runtime = ark.AgentRuntime(ark.ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "slow_delete", path="/")]),
                                                  "Done."]), tools=[slow_delete])
    await runtime.run("go")
    [item] = runtime.controller.list_pending_approvals()

    decided = await runtime.controller.approve(item.approval_id)  # returns while the tool still waits

    assert decided.all_decided
    handle = runtime.current_run
    assert handle is not None and not handle.done
    await entered.wait()
    assert not handle.done and runtime.is_running
    gate.set()
    result = await handle
    assert result.stop_reason == "completed" and runtime.current_run is None


async def test_unknown_approval_id_returns_approval_not_found():
    runtime, _, _ = make_runtime([dangerous_turn(), "Done."])
    await runtime.run("go")

    unknown = await runtime.controller.approve("approval_does_not_exist")

    assert not unknown.ok and unknown.error.code == "approval_not_found" and unknown.decision == "error"
    assert runtime.state.pending_approval is not None


async def test_decision_after_the_batch_resolved_is_approval_already_resolved_with_the_recorded_decision():
    runtime, tools, _ = make_runtime([dangerous_turn(), "Done."])
    await runtime.run("go")
    [item] = runtime.controller.list_pending_approvals()
    await runtime.controller.approve(item.approval_id)
    await finish_background(runtime)

    late = await runtime.controller.deny(item.approval_id, "too late")

    assert not late.ok and late.error.code == "approval_already_resolved" and late.error.layer == "runtime"
    assert late.decision == "approved" and late.all_decided  # the decision that stands
    assert item.approval_id in late.error.message and "clear_cache" in late.error.message
    assert runtime.state.last_stop_reason == "completed" and runtime.current_run is None
    assert tools.names() == ["clear_cache"]  # ran once, and not again


async def test_unknown_tool_does_not_trigger_approval():
    runtime, tools, log = make_runtime([ScriptedTurn(tool_calls=[call("c1", "format_disk", device="sda")]),
                                        "That tool does not exist."])

    result = await runtime.run("go")

    assert result.stop_reason == "completed"
    assert not log.of(EventTypes.APPROVAL_REQUIRED) and runtime.state.pending_approval is None
    [answer] = [m for m in runtime.history if m.role == "tool"]
    assert answer.is_error and answer.tool_call_id == "c1"
    [after] = log.of(EventTypes.TOOL_AFTER)
    assert after.payload["result"]["error_code"] == "tool_not_found"


async def test_new_input_while_pending_raises_pending_approval_blocks_input():
    runtime, tools, log = make_runtime([dangerous_turn(), "Done."])
    await runtime.run("go")
    history, batch = runtime.history, runtime.state.pending_approval
    events_before = len(log.events)

    with pytest.raises(ArkError) as info:
        await runtime.run("never mind")
    with pytest.raises(ArkError):
        runtime.start("really, never mind")

    assert info.value.code == "pending_approval_blocks_input" and info.value.layer == "security"
    assert runtime.history == history and runtime.state.pending_approval == batch
    assert len(log.events) == events_before  # no run started, nothing published
    # The frozen batch is still decidable and the run completes as before.
    await runtime.controller.approve(batch.items[0].approval_id)
    assert (await finish_background(runtime)).stop_reason == "completed"


async def test_resume_while_pending_is_refused():
    runtime, _, _ = make_runtime([dangerous_turn(), "Done."])
    await runtime.run("go")
    with pytest.raises(ArkError) as info:
        await runtime.resume()
    assert info.value.code == "pending_approval_blocks_input"


async def test_approval_decisions_are_saved_one_by_one():
    storage = ark.MemoryStateStorage()
    runtime, _, _ = make_runtime([ScriptedTurn(tool_calls=[call("c1", "clear_cache", path="/a"),
                                                           call("c2", "drop_table", 1, table="t")]), "Done."],
                                 storage=storage)
    await runtime.run("go")
    first, _ = runtime.controller.list_pending_approvals()

    await runtime.controller.deny(first.approval_id, "no")

    saved = await storage.load(runtime.session_id)
    decided = saved.pending_approval.find(first.approval_id)
    assert decided.decision == "denied" and decided.deny_reason == "no"


# -- seed 000 §10: the three pitfalls, as regression tests -----------------------------


async def test_regression_unknown_tool_is_allowed_through_to_tool_not_found():
    """§10.1: an unregistered tool must reach the registry (tool_not_found), never an approval card,
    even next to a dangerous call of the same batch."""
    runtime, tools, log = make_runtime([ScriptedTurn(tool_calls=[call("c1", "no_such_tool"),
                                                                 call("c2", "clear_cache", 1, path="/")]),
                                        "Done."])

    await runtime.run("go")

    [item] = runtime.controller.list_pending_approvals()
    assert item.tool_call.name == "clear_cache"
    assert [c.name for c in runtime.state.pending_approval.allowed_calls] == ["no_such_tool"]
    await runtime.controller.approve(item.approval_id)
    await finish_background(runtime)
    unknown = next(m for m in runtime.history if m.role == "tool" and m.tool_call_id == "c1")
    assert unknown.is_error and "no_such_tool" in unknown.text


async def test_regression_new_input_does_not_clear_pending_approval():
    """§10.2: new input while a batch is frozen must not clear it and leave unpaired calls."""
    storage = ark.MemoryStateStorage()
    runtime, _, _ = make_runtime([dangerous_turn(), "Done."], storage=storage)
    await runtime.run("go")

    for attempt in ("stop it", ark.AgentMessage.user("stop it")):
        with pytest.raises(ArkError, match="pending"):
            await runtime.run(attempt)

    assert runtime.state.pending_approval is not None
    assert (await storage.load(runtime.session_id)).pending_approval is not None
    assert runtime.history[-1].role == "assistant" and [m.role for m in runtime.history].count("user") == 1


async def test_regression_chunk_hook_drop_and_abort_land_before_model_complete():
    """§10.3: chunk decisions are awaited in order; a slow drop still lands before model_complete,
    and an abort ends the run aborted with hook_abort (security), never completed or cancelled."""
    runtime, _, log = make_runtime([ScriptedTurn(text=["Hello ", "SECRET", " world"]),
                                    ScriptedTurn(text=["ok ", "INJECT", " more"])])

    @runtime.hooks.on_model_chunk
    async def censor(ctx):
        await asyncio.sleep(0)  # a hook that yields must still be awaited before the next event
        if "SECRET" in ctx.text:
            return ModelChunkHookResult.drop("secret")
        if "INJECT" in ctx.text:
            return ModelChunkHookResult.abort("prompt injection")
        return None

    first = await runtime.run("hi")
    assert first.stop_reason == "completed" and first.text == "Hello  world"
    assert "SECRET" not in "".join(e.payload["text"] for e in log.of(EventTypes.LLM_CHUNK))

    second = await runtime.run("again")
    assert second.stop_reason == "aborted"
    assert second.error.code == "hook_abort" and second.error.layer == "security"
    assert runtime.history[-1].role == "user"  # the aborted answer never entered history
    assert log.types()[-1] == EventTypes.AGENT_ABORTED


async def test_resolved_batch_is_saved_before_any_approved_call_runs():
    seen_at_run: list = []
    storage = FaultyStorage()
    tools = Tools()

    @ark.tool(risk="dangerous")
    def clear_cache(path: str) -> str:
        """Delete a cache folder."""
        # What a restore would find if the process died right now.
        seen_at_run.append(storage.saved[-1].pending_approval)
        return f"cleared {path}"

    tools.all[1] = clear_cache
    runtime, _, log = make_runtime([dangerous_turn(), "Done."], tools, storage=storage)
    assert (await runtime.run("clear it")).stop_reason == "awaiting_approval"
    [item] = runtime.controller.list_pending_approvals()
    await runtime.controller.approve(item.approval_id)
    result = await finish_background(runtime)
    assert result.stop_reason == "completed"
    assert seen_at_run == [None]
    reasons = [p["reason"] for p in log.persisted()]
    assert reasons.index("approval_resolved") < len(reasons) - 1
    assert [p for p in log.persisted() if p["reason"] == "approval_resolved"][0]["mandatory"] is True


async def test_failed_save_of_the_resolution_runs_nothing_and_keeps_the_item_pending():
    storage = FaultyStorage(fail_if=lambda state: state.pending_approval is None and state.is_running
                            and state.last_stop_reason == "awaiting_approval")
    runtime, tools, log = make_runtime([dangerous_turn(), "Done."], storage=storage)
    assert (await runtime.run("clear it")).stop_reason == "awaiting_approval"
    [item] = runtime.controller.list_pending_approvals()

    decided = await runtime.controller.approve(item.approval_id)

    assert not decided.ok and decided.error.code == "state_save_failed"
    assert runtime.current_run is None and tools.names() == []
    assert not log.of(EventTypes.APPROVAL_DECIDED) and not log.of(EventTypes.APPROVAL_RESOLVED)
    assert [i.approval_id for i in runtime.controller.list_pending_approvals()] == [item.approval_id]
    assert (await storage.load(runtime.session_id)).pending_approval.items[0].is_pending()
