"""A run on a durable store behaves as on the in-memory store (DESIGN §13: the loop is
the same, only what is committed differs): the same results, history and event types
(the outbox's own bookkeeping aside), for hooks that rewrite, deny, respond, retry and
abort, approvals, loop detection and cancellation."""

from __future__ import annotations

import asyncio

import pytest

import arknb as ark
from arknb.domain import ToolCall
from arknb.durable import MemoryStore, OperationPhase


def _add():
    @ark.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return add


def _call(call_id: str, a: int, b: int = 1) -> ToolCall:
    return ToolCall(id=call_id, name="add", arguments_json=f'{{"a": {a}, "b": {b}}}')


def _rewrite(runtime):
    @runtime.hooks.before_tool_call
    def double(ctx):
        return ark.ToolCallHookResult.proceed(ctx.call.with_arguments({**ctx.call.arguments, "b": 10}))

    @runtime.hooks.after_tool_call
    def polish(ctx):
        return ark.ToolResultHookResult.proceed(ark.ToolResult.from_text(f"result: {ctx.result.text}"))


def _deny(runtime):
    @runtime.hooks.before_tool_call
    def no(ctx):
        return ark.ToolCallHookResult.deny(ark.ToolResult.from_text("refused", is_error=True), "policy")


def _respond(runtime):
    @runtime.hooks.before_model_call
    def canned(ctx):
        if ctx.turn == 1:
            return ark.ModelCallHookResult.respond(ark.ModelResponse(message=ark.AgentMessage.assistant(
                "canned", tool_calls=[_call("h1", 5)])))
        return None


def _retry(runtime):
    seen = []

    @runtime.hooks.after_model_call
    def again(ctx):
        if not seen:
            seen.append(ctx.turn)
            return ark.ModelResponseHookResult.retry("once more")
        return None


def _abort(runtime):
    @runtime.hooks.after_tool_call
    def stop(ctx):
        return ark.ToolResultHookResult.abort("enough")


SCENARIOS = {
    "plain": (lambda: [ark.ScriptedTurn(text="adding", tool_calls=[_call("c1", 1), _call("c2", 2)]), "done"], None),
    "rewrite": (lambda: [ark.ScriptedTurn(tool_calls=[_call("c1", 1)]), "done"], _rewrite),
    "deny": (lambda: [ark.ScriptedTurn(tool_calls=[_call("c1", 1)]), "done"], _deny),
    "respond": (lambda: ["done"], _respond),
    "retry": (lambda: ["first", "second"], _retry),
    "abort": (lambda: [ark.ScriptedTurn(tool_calls=[_call("c1", 1)]), "never"], _abort),
    "loop": (lambda: [ark.ScriptedTurn(tool_calls=[_call(f"c{n}", 7)]) for n in range(4)] + ["never"], None),
}

# Events only a durable session has, or whose payload names the store's revisions.
_BOOKKEEPING = {ark.EventTypes.STATE_PERSISTED, ark.EventTypes.STATE_LOADED}


async def _run(storage, scenario: str):
    turns, install = SCENARIOS[scenario]
    runtime = ark.AgentRuntime(ark.ScriptedModel(turns()), tools=[_add()], storage=storage, session_id="p")
    if install is not None:
        install(runtime)
    events: list[ark.AgentEvent] = []
    runtime.bus.subscribe(ark.EventTypes.ANY, events.append)
    result = await runtime.run("go")
    history = [(m.role, m.text, tuple(c.arguments_json for c in m.tool_calls)) for m in runtime.history]
    types = [e.type for e in events if e.type not in _BOOKKEEPING]
    await runtime.aclose()
    return (result.stop_reason, result.text, result.error.code if result.error else None), history, types


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
async def test_a_durable_run_has_the_results_history_and_events_of_an_in_memory_one(tmp_path, scenario):
    expected = await _run(ark.MemoryStateStorage(), scenario)
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    assert await _run(store, scenario) == expected
    ops = await store.list_operations("p")
    assert ops and all(op.phase in (OperationPhase.COMPLETED, OperationPhase.RAW_SAVED) for op in ops)
    await store.aclose()


async def test_cancelling_a_durable_run_cancels_its_running_tool_and_records_it_as_failed():
    store = MemoryStore()
    started = asyncio.Event()

    @ark.tool
    async def wait_forever() -> str:
        """Wait."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    runtime = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[ToolCall(id="c1", name="wait_forever")])]),
                               tools=[wait_forever], storage=store, session_id="p")
    handle = runtime.start("wait")
    await asyncio.wait_for(started.wait(), 10)
    runtime.cancel()
    assert (await asyncio.wait_for(handle.wait(), 10)).stop_reason == "cancelled"
    [tool_op] = [op for op in await store.list_operations("p") if op.kind == "tool_call"]
    assert tool_op.completed and tool_op.error.code == "cancelled"  # never left in doubt
    await runtime.aclose()


async def test_a_call_id_the_model_reuses_in_a_later_turn_runs_again_as_a_new_operation(tmp_path):
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    ran: list[str] = []

    @ark.tool
    def note(text: str, ctx: ark.ToolContext) -> str:
        """Write a note."""
        ran.append(ctx.idempotency_key)
        return f"noted {text}"

    same_id = [ark.ScriptedTurn(tool_calls=[ToolCall(id="c1", name="note", arguments_json=f'{{"text": "{t}"}}')])
               for t in ("a", "b")]
    runtime = ark.AgentRuntime(ark.ScriptedModel([*same_id, "done"]), tools=[note], storage=store, session_id="p")
    result = await runtime.run("go")
    assert result.stop_reason == "completed"
    assert [m.text for m in runtime.history if m.role == "tool"] == ["noted a", "noted b"]
    assert len(ran) == 2 and ran[0] == f"p:{result.run_id}:c1" and ran[1] != ran[0]
    keys = [op.purpose_key for op in await store.list_operations("p") if op.kind == "tool_call"]
    assert keys == [f"{result.run_id}:c1", f"{result.run_id}:c1.t2"]
    await runtime.aclose()
    await store.aclose()
