"""Persistence points and terminal saves (seed 000 §9, checklist §14 "终态持久化"), with
storage fault injection for the awaiting_approval save and the terminal save."""

from __future__ import annotations

import asyncio

import pytest

import arknb as ark
from arknb import (
    ArkError, EventTypes, ModelCallHookResult, ScriptedTurn, StatePersistenceHookResult,
)

from ._approval_kit import (
    EventLog, FaultyStorage, assert_history_paired, call, dangerous_turn, finish_background, make_runtime,
)


def skip_all_saves(runtime: ark.AgentRuntime, seen: list | None = None) -> None:
    @runtime.hooks.before_persist_state(name="skip_all")
    def skip(ctx):
        if seen is not None:
            seen.append((ctx.reason, ctx.mandatory))
        return StatePersistenceHookResult.skip("too noisy")


# -- one way to reach each terminal stop reason ----------------------------------------


async def _completed(storage):
    runtime, _, log = make_runtime(["Hello."], storage=storage)
    return runtime, log, lambda: runtime.run("hi")


async def _failed(storage):
    runtime, _, log = make_runtime([], storage=storage)  # script exhausted on the first model call
    return runtime, log, lambda: runtime.run("hi")


async def _loop_detected(storage):
    turns = [ScriptedTurn(tool_calls=[call(f"c{i}", "add", a=1, b=1)]) for i in range(3)]
    runtime, _, log = make_runtime(turns, storage=storage, loop_detector=ark.LoopDetector(threshold=2, window=4))
    return runtime, log, lambda: runtime.run("hi")


async def _aborted(storage):
    runtime, _, log = make_runtime(["never"], storage=storage)
    runtime.hooks.before_model_call(lambda ctx: ModelCallHookResult.abort("policy"), name="stop_model")
    return runtime, log, lambda: runtime.run("hi")


async def _cancelled(storage):
    entered, gate = asyncio.Event(), asyncio.Event()

    @ark.tool
    async def wait_forever() -> str:
        """Wait."""
        entered.set()
        await gate.wait()
        return "never"

    runtime = ark.AgentRuntime(ark.ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "wait_forever")])]),
                               tools=[wait_forever], storage=storage)
    log = EventLog(runtime)

    async def run():
        handle = runtime.start("hi")
        await entered.wait()
        runtime.cancel()
        return await handle

    return runtime, log, run


TERMINALS = {"completed": _completed, "failed": _failed, "loop_detected": _loop_detected,
             "aborted": _aborted, "cancelled": _cancelled}


@pytest.mark.parametrize("stop_reason", list(TERMINALS))
async def test_terminal_save_is_mandatory_and_ignores_skip(stop_reason):
    storage = FaultyStorage()
    runtime, log, run = await TERMINALS[stop_reason](storage)
    seen: list = []
    skip_all_saves(runtime, seen)

    result = await run()

    assert result.stop_reason == stop_reason and result.persisted
    assert seen[-1] == ("terminal", True)  # the hook was asked, told it is mandatory, and overruled
    terminal = log.persisted()[-1]
    assert terminal["reason"] == "terminal" and terminal["mandatory"] is True
    assert terminal["skipped"] is False and terminal["ok"] is True
    assert storage.saves == 1  # every autosave was skipped; the terminal one was not
    saved = await storage.load(runtime.session_id)
    assert saved.last_stop_reason == stop_reason and not saved.is_running and saved.pending_approval is None
    assert_history_paired(saved.history)
    if result.error is not None:
        assert saved.last_error.code == result.error.code


async def test_autosave_can_be_skipped():
    storage = FaultyStorage()
    runtime, _, log = make_runtime([ScriptedTurn(tool_calls=[call("c1", "add", a=1, b=2)]), "3"], storage=storage)
    seen: list = []

    @runtime.hooks.before_persist_state
    def skip_autosaves(ctx):
        seen.append((ctx.reason, ctx.mandatory))
        return StatePersistenceHookResult.skip("batching writes") if not ctx.mandatory else None

    await runtime.run("1 + 2?")

    autosaves = [p for p in log.persisted() if not p["mandatory"]]
    assert {p["reason"] for p in autosaves} == {"after_user_input", "after_model_text", "after_tool_batch"}
    assert all(p["skipped"] is True for p in autosaves)
    assert storage.saves == 1 and seen[-1] == ("terminal", True)


async def test_awaiting_approval_and_suspend_saves_ignore_skip():
    storage = FaultyStorage()
    runtime, _, log = make_runtime([dangerous_turn(), "Done."], storage=storage)
    skip_all_saves(runtime)

    await runtime.run("go")

    [save] = [p for p in log.persisted() if not p["skipped"]]
    assert save == {"reason": "awaiting_approval", "mandatory": True, "skipped": False, "ok": True, "revision": 1}
    assert (await storage.load(runtime.session_id)).pending_approval is not None


async def test_state_persisted_events_carry_reason_mandatory_skipped():
    runtime, _, log = make_runtime([ScriptedTurn(tool_calls=[call("c1", "add", a=1, b=2)]), "3"])

    await runtime.run("1 + 2?")

    payloads = log.persisted()
    assert [(p["reason"], p["mandatory"], p["skipped"]) for p in payloads] == [
        ("after_user_input", False, False), ("after_model_text", False, False), ("after_tool_batch", False, False),
        ("after_model_text", False, False), ("terminal", True, False)]
    assert all(p["ok"] for p in payloads)


async def test_persist_hook_abort_is_honoured_on_mandatory_save():
    storage = FaultyStorage()
    runtime, _, log = make_runtime(["Hello."], storage=storage)

    @runtime.hooks.before_persist_state
    def refuse_terminal(ctx):
        return StatePersistenceHookResult.abort("inconsistent state") if ctx.mandatory else None

    result = await runtime.run("hi")

    assert result.stop_reason == "completed" and not result.persisted
    assert storage.marked == [runtime.session_id]
    terminal = log.persisted()[-1]
    assert terminal["reason"] == "terminal" and terminal["ok"] is False
    assert terminal["error"]["code"] == "hook_abort"
    assert (await storage.load(runtime.session_id)).not_resumable


# -- fault injection ---------------------------------------------------------------------


async def test_failed_terminal_save_marks_not_resumable():
    order: list = []
    storage = FaultyStorage(fail_on={3}, log=order)  # 1 user input, 2 model text, 3 terminal
    runtime, _, log = make_runtime(["Hello."], storage=storage)

    result = await runtime.run("hi")

    assert result.stop_reason == "completed" and result.text == "Hello."
    assert result.persisted is False and not result.resumable
    assert result.error.code == "state_save_failed" and result.error.layer == "storage"
    assert order.index(("save", 3, "failed")) < order.index(("mark_not_resumable", runtime.session_id))
    saved = await storage.load(runtime.session_id)
    assert saved.not_resumable and runtime.state.not_resumable
    [success] = log.of(EventTypes.AGENT_SUCCESS)
    assert success.payload["persisted"] is False
    with pytest.raises(ArkError) as info:
        await runtime.resume()
    assert info.value.code == "not_resumable"


async def test_failed_terminal_save_after_a_failure_keeps_the_run_error():
    storage = FaultyStorage(fail_on={2})  # 1 user input, 2 terminal (the model call fails)
    runtime, _, _ = make_runtime([], storage=storage)

    result = await runtime.run("hi")

    assert result.stop_reason == "failed" and result.error.code == "script_exhausted"
    assert not result.persisted and storage.marked == [runtime.session_id]


async def test_awaiting_approval_save_failure_fails_run_not_resumable():
    storage = FaultyStorage(fail_if=lambda state: state.pending_approval is not None)
    runtime, tools, log = make_runtime([dangerous_turn(call("c2", "add", 1, a=1, b=2)), "Done."], storage=storage)

    result = await runtime.run("go")

    assert result.stop_reason == "failed" and not result.resumable
    assert result.error.code == "state_save_failed" and result.error.layer == "storage"
    assert not log.of(EventTypes.APPROVAL_REQUIRED) and not log.of(EventTypes.AGENT_SUSPENDED)
    assert log.types()[-1] == EventTypes.AGENT_ERROR
    assert tools.ran == []  # nothing of the frozen batch ran
    assert runtime.state.pending_approval is None and runtime.controller.list_pending_approvals() == []
    assert runtime.state.not_resumable
    assert storage.marked and storage.marked[0] == runtime.session_id
    assert_history_paired(runtime.history)
    answers = [m for m in runtime.history if m.role == "tool"]
    assert [m.tool_call_id for m in answers] == ["c1", "c2"] and all(m.is_error for m in answers)
    saved = await storage.load(runtime.session_id)
    assert saved.not_resumable and saved.pending_approval is None
    with pytest.raises(ArkError) as info:
        await runtime.resume()
    assert info.value.code == "not_resumable"


async def test_awaiting_approval_save_failure_on_nth_save():
    storage = FaultyStorage(fail_on={3})  # 1 user input, 2 model text, 3 awaiting_approval
    runtime, _, log = make_runtime([dangerous_turn(), "Done."], storage=storage)

    result = await runtime.run("go")

    assert result.stop_reason == "failed" and result.error.code == "state_save_failed"
    failed_save = next(p for p in log.persisted() if not p["ok"])
    assert failed_save["reason"] == "awaiting_approval" and failed_save["mandatory"] is True
    assert not log.of(EventTypes.APPROVAL_REQUIRED)


async def test_error_codes_are_layered():
    """hook_abort/security, tool_denied/security, awaiting_approval/security,
    loop_detected/runtime, cancelled/cancelled (seed 000 §11)."""
    aborted = await (await _aborted(ark.MemoryStateStorage()))[2]()
    assert (aborted.stop_reason, aborted.error.code, aborted.error.layer) == ("aborted", "hook_abort", "security")

    looped = await (await _loop_detected(ark.MemoryStateStorage()))[2]()
    assert (looped.stop_reason, looped.error.code, looped.error.layer) == ("loop_detected", "loop_detected", "runtime")

    cancelled = await (await _cancelled(ark.MemoryStateStorage()))[2]()
    assert (cancelled.stop_reason, cancelled.error.code, cancelled.error.layer) == (
        "cancelled", "cancelled", "cancelled")

    runtime, _, log = make_runtime([dangerous_turn(), "ok"])
    waiting = await runtime.run("go")
    assert (waiting.stop_reason, waiting.error.code, waiting.error.layer) == (
        "awaiting_approval", "awaiting_approval", "security")
    assert waiting.resumable  # the code classifies a pause, not a failure
    assert log.of(EventTypes.AGENT_SUSPENDED)[0].payload["error"]["code"] == "awaiting_approval"

    [item] = runtime.controller.list_pending_approvals()
    await runtime.controller.deny(item.approval_id, "no")
    done = await finish_background(runtime)
    assert done.error is None and done.stop_reason == "completed"
    [denied] = log.of(EventTypes.TOOL_DENIED)
    assert denied.payload["result"]["error_code"] == "tool_denied"
    denied_answer = next(m for m in runtime.history if m.role == "tool")
    assert denied_answer.is_error and "tool_denied" in denied_answer.text


async def test_every_terminal_path_runs_after_run_once():
    for make in TERMINALS.values():
        runtime, _, run = await make(ark.MemoryStateStorage())
        calls = []
        runtime.hooks.after_run(lambda ctx: calls.append(ctx.result.stop_reason), name="count")
        result = await run()
        assert calls == [result.stop_reason]
