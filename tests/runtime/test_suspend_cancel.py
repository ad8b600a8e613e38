"""Cancel versus suspend (DESIGN §7): cancel is final; suspend pauses at a safe checkpoint
(never between a tool call and its result), saves with a mandatory write, and ``resume()``
continues with a fresh model call."""

from __future__ import annotations

import asyncio

import pytest

import arknb as ark
from arknb import ArkError, EventTypes, ScriptedTurn, StatePersistenceHookResult

from ._approval_kit import EventLog, FaultyStorage, assert_history_paired, call


class GatedTool:
    """A tool that signals when it starts and finishes only when the test opens the gate."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()
        self.finished = False

        @ark.tool
        async def fetch(url: str) -> str:
            """Fetch a page."""
            self.entered.set()
            await self.gate.wait()
            self.finished = True
            return f"contents of {url}"

        self.tool = fetch


def gated_runtime(turns, storage=None, **options):
    gated = GatedTool()
    runtime = ark.AgentRuntime(ark.ScriptedModel(turns), tools=[gated.tool],
                               storage=storage or ark.MemoryStateStorage(), **options)
    return runtime, gated, EventLog(runtime)


FETCH = ScriptedTurn(text="Fetching.", tool_calls=[call("c1", "fetch", url="https://example.org")])


async def test_cancel_is_final_and_resume_refused():
    storage = ark.MemoryStateStorage()
    runtime, gated, log = gated_runtime([FETCH, "never"], storage)
    handle = runtime.start("go")
    await gated.entered.wait()

    assert runtime.cancel() is True
    result = await handle

    assert result.stop_reason == "cancelled" and not result.resumable
    assert result.error.code == "cancelled" and result.error.layer == "cancelled"
    assert not gated.finished and runtime.model.remaining == 1
    assert log.types()[-1] == EventTypes.AGENT_CANCELLED
    assert_history_paired(runtime.history)  # the interrupted call is answered "not executed"
    saved = await storage.load(runtime.session_id)
    assert not saved.is_running and saved.last_stop_reason == "cancelled"
    with pytest.raises(ArkError) as info:
        await runtime.resume()
    assert info.value.code == "nothing_to_resume"
    assert runtime.cancel() is False  # nothing runs any more


async def test_cancel_while_streaming_closes_the_stream():
    runtime = ark.AgentRuntime(ark.ScriptedModel([ScriptedTurn(text=["a", "b", "c", "d"], chunk_delay=0.001)]))
    runtime.bus.subscribe(EventTypes.LLM_CHUNK, lambda event: runtime.cancel())

    result = await runtime.run("go")

    assert result.stop_reason == "cancelled" and runtime.model.closed_streams == 1
    assert [m.role for m in runtime.history] == ["user"]  # the partial answer is not kept


async def test_cancel_from_inside_the_run_still_saves_the_terminal_state(tmp_path):
    """A hook calling cancel() runs inside the run's own task: the run must still end
    ``cancelled`` through its terminal save (a real thread hop with FileStateStorage)."""
    storage = ark.FileStateStorage(tmp_path)
    runtime = ark.AgentRuntime(ark.ScriptedModel([ScriptedTurn(text=["a", "b", "c"])]), storage=storage)
    runtime.hooks.on_model_chunk(lambda ctx: runtime.cancel() and None, name="stop_on_first_chunk")

    result = await runtime.run("go")

    assert result.stop_reason == "cancelled" and result.persisted
    saved = await storage.load(runtime.session_id)
    assert saved.last_stop_reason == "cancelled" and not saved.is_running


async def test_handle_cancel_and_awaiter_cancellation_end_cancelled():
    runtime, gated, _ = gated_runtime([FETCH])
    handle = runtime.start("go")
    await gated.entered.wait()
    assert handle.cancel() is True
    assert (await handle).stop_reason == "cancelled"

    runtime2, gated2, _ = gated_runtime([FETCH])
    waiter = asyncio.ensure_future(runtime2.run("go"))
    await gated2.entered.wait()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert runtime2.last_result.stop_reason == "cancelled" and not runtime2.is_running


async def test_request_suspend_waits_for_the_running_tool_result():
    storage = ark.MemoryStateStorage()
    runtime, gated, log = gated_runtime([FETCH, "Here it is."], storage)
    handle = runtime.start("go")
    await gated.entered.wait()

    assert runtime.request_suspend() is True  # asked while the tool is mid-flight
    assert not handle.done
    gated.gate.set()
    result = await handle

    assert result.stop_reason == "suspended" and result.resumable and result.error is None
    assert gated.finished
    last = runtime.history[-1]
    assert last.role == "tool" and last.tool_call_id == "c1" and last.text == "contents of https://example.org"
    assert_history_paired(runtime.history)
    assert runtime.model.remaining == 1  # paused before the next model call
    types = log.types()
    assert types.index(EventTypes.TOOL_AFTER) < types.index(EventTypes.AGENT_SUSPENDED)
    assert log.of(EventTypes.AGENT_SUSPENDED)[0].payload["reason"] == "suspend"
    saved = await storage.load(runtime.session_id)
    assert saved.is_running and saved.last_stop_reason == "suspended" and saved.history == runtime.history


async def test_suspend_save_is_mandatory():
    storage = FaultyStorage()
    runtime, gated, log = gated_runtime([FETCH, "done"], storage)

    @runtime.hooks.before_persist_state
    def skip(ctx):
        return StatePersistenceHookResult.skip("quiet")

    handle = runtime.start("go")
    await gated.entered.wait()
    runtime.request_suspend()
    gated.gate.set()
    await handle

    written = [p for p in log.persisted() if not p["skipped"]]
    assert written == [{"reason": "suspend", "mandatory": True, "skipped": False, "ok": True, "revision": 1}]
    assert storage.saves == 1


async def test_resume_continues_with_a_fresh_model_call():
    storage = ark.MemoryStateStorage()
    runtime, gated, log = gated_runtime([FETCH, "Here it is."], storage)
    handle = runtime.start("go")
    await gated.entered.wait()
    runtime.request_suspend()
    gated.gate.set()
    suspended = await handle

    result = await runtime.resume()

    assert result.stop_reason == "completed" and result.text == "Here it is."
    assert len(runtime.model.requests) == 2
    resumed_request = runtime.model.requests[1]
    assert resumed_request.messages[-1].role == "tool"  # the new call sees the finished tool result
    [resumed] = log.of(EventTypes.AGENT_RESUMED)
    assert resumed.payload == {"reason": "suspend", "previous_run_id": suspended.run_id}
    assert not (await storage.load(runtime.session_id)).is_running
    with pytest.raises(ArkError) as info:
        await runtime.resume()
    assert info.value.code == "nothing_to_resume"


async def test_suspended_session_resumes_after_restore(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    runtime, gated, _ = gated_runtime([FETCH], storage, session_id="paused")
    handle = runtime.start("go")
    await gated.entered.wait()
    runtime.request_suspend()
    gated.gate.set()
    await handle

    model = ark.ScriptedModel(["Resumed after restart."])
    restored = await ark.AgentRuntime.restore("paused", storage=storage, model=model, tools=[GatedTool().tool])
    result = await restored.resume()

    assert result.stop_reason == "completed" and result.text == "Resumed after restart."
    assert model.requests[0].messages[-1].tool_call_id == "c1"


async def test_failed_suspend_save_leaves_session_not_resumable():
    storage = FaultyStorage(fail_if=lambda state: state.last_stop_reason == "suspended")
    runtime, gated, log = gated_runtime([FETCH, "never"], storage)
    handle = runtime.start("go")
    await gated.entered.wait()
    runtime.request_suspend()
    gated.gate.set()

    result = await handle

    assert result.stop_reason == "failed" and not result.resumable and not result.persisted
    assert result.error.code == "state_save_failed"
    assert not log.of(EventTypes.AGENT_SUSPENDED)
    assert storage.marked == [runtime.session_id]
    with pytest.raises(ArkError) as info:
        await runtime.resume()
    assert info.value.code == "not_resumable" and info.value.layer == "storage"


async def test_not_resumable_session_refuses_resume():
    storage = ark.MemoryStateStorage()
    runtime, gated, _ = gated_runtime([FETCH, "x"], storage, session_id="marked")
    handle = runtime.start("go")
    await gated.entered.wait()
    runtime.request_suspend()
    gated.gate.set()
    await handle
    await storage.mark_not_resumable("marked")

    restored = await ark.AgentRuntime.restore("marked", storage=storage, model=ark.ScriptedModel(["x"]),
                                              tools=[GatedTool().tool])
    with pytest.raises(ArkError) as info:
        await restored.resume()
    assert info.value.code == "not_resumable"
    assert restored.model.requests == []


async def test_nothing_to_cancel_or_suspend_when_idle():
    runtime = ark.AgentRuntime(ark.ScriptedModel([]))
    assert runtime.cancel() is False and runtime.request_suspend() is False
    with pytest.raises(ArkError) as info:
        await runtime.resume()
    assert info.value.code == "nothing_to_resume"


async def test_one_active_run_at_a_time():
    runtime, gated, _ = gated_runtime([FETCH, "done"])
    handle = runtime.start("go")
    await gated.entered.wait()

    with pytest.raises(ArkError) as info:
        runtime.start("again")
    assert info.value.code == "run_already_active" and info.value.layer == "runtime"
    gated.gate.set()
    assert (await handle).stop_reason == "completed"


# -- Stop while a decision is being saved ------------------------------------------------


class GatedSaves(ark.MemoryStateStorage):
    """A memory storage whose next save waits at a gate the test opens."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = False
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()

    async def save(self, state):
        if self.hold:
            self.hold = False
            self.entered.set()
            await self.gate.wait()
        return await super().save(state)


@pytest.mark.parametrize("decided", ["the_last_item", "one_of_two"])
async def test_stop_while_a_decision_is_saved_ends_the_run_once_and_runs_nothing(decided):
    """Issue 10 (hardening): Stop pressed while Approve's save was in flight started a second
    run next to the one the decision continued; the approved call ran, and both
    ``agent.cancelled`` and ``agent.success`` were published."""
    from ._approval_kit import Tools, dangerous_turn

    tools = Tools()
    storage = GatedSaves()
    extra = (call("c2", "drop_table", 1, table="t"),) if decided == "one_of_two" else ()
    runtime = ark.AgentRuntime(ark.ScriptedModel([dangerous_turn(*extra), "Done."]), tools=tools.all,
                               storage=storage, session_id="s")
    assert (await runtime.run("clean up")).stop_reason == "awaiting_approval"
    log = EventLog(runtime)
    first = runtime.controller.list_pending_approvals()[0]

    storage.hold = True
    deciding = asyncio.ensure_future(runtime.controller.approve(first.approval_id))
    await storage.entered.wait()
    assert runtime.cancel() is True        # Stop, while the decision is being saved
    storage.gate.set()
    assert (await deciding).ok             # the decision itself was recorded
    result = await runtime.current_run

    assert result.stop_reason == "cancelled" and runtime.current_run is None
    assert tools.ran == []
    ends = [t for t in log.types() if t in (EventTypes.AGENT_CANCELLED, EventTypes.AGENT_SUCCESS)]
    assert ends == [EventTypes.AGENT_CANCELLED]
    assert_history_paired(runtime.state.history)
    saved = await storage.load("s")
    assert saved.last_stop_reason == "cancelled" and saved.pending_approval is None
    assert_history_paired(saved.history)


async def test_stop_while_an_in_doubt_decision_is_saved_ends_the_run_and_reruns_nothing():
    """The same for a call a crash left in doubt: Stop during Rerun's save is not lost, and
    the call is not run again."""
    from arknb import AgentMessage, AgentState

    from ._approval_kit import Tools

    tools = Tools()
    storage = GatedSaves()
    await storage.save(AgentState(session_id="s", is_running=True, current_run_id="run_old", history=(
        AgentMessage.user("clean up"),
        AgentMessage.assistant("On it.", tool_calls=[call("c1", "clear_cache", path="/tmp/cache")]))))
    runtime = ark.AgentRuntime(ark.ScriptedModel(["Done."]), tools=tools.all, storage=storage, session_id="s")
    assert (await runtime.resume()).stop_reason == "awaiting_approval"   # the crash left c1 in doubt
    [doubt] = runtime.controller.list_in_doubt()
    log = EventLog(runtime)

    storage.hold = True
    deciding = asyncio.ensure_future(runtime.controller.rerun(doubt.operation_id))
    await storage.entered.wait()
    assert runtime.cancel() is True
    storage.gate.set()
    await deciding
    result = await runtime.current_run

    assert result.stop_reason == "cancelled" and tools.ran == []
    assert [t for t in log.types() if t in (EventTypes.AGENT_CANCELLED, EventTypes.AGENT_SUCCESS)] == [
        EventTypes.AGENT_CANCELLED]
    assert_history_paired(runtime.state.history)
