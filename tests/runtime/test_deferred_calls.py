"""ToolContext.defer: a running call hands itself to a person (the extension seam's
"deferred while running"), the batch pauses keeping what its other calls returned."""

from __future__ import annotations

import pytest

import arknb as ark
from arknb import EventTypes, ScriptedModel, ScriptedTurn, ToolCall

from ._events_kit import of, record


def make_tools(log: list[str]):
    prepared: set[str] = set()

    @ark.tool
    def migrate(table: str, ctx: ark.ToolContext) -> str:
        """Migrate a table (asks for sign-off once it knows the plan)."""
        log.append(f"migrate {table}")
        if ctx.call_id not in prepared:
            prepared.add(ctx.call_id)
            return ctx.defer(f"migrating {table} rewrites 10,000 rows")
        return f"{table} migrated"

    @ark.tool
    def stats(table: str) -> str:
        """Row count."""
        log.append(f"stats {table}")
        return f"{table}: 10000 rows"

    return [migrate, stats]


def script() -> ScriptedModel:
    return ScriptedModel([ScriptedTurn(tool_calls=[
        ToolCall(id="m1", name="migrate", arguments_json='{"table": "users"}'),
        ToolCall(id="s1", name="stats", arguments_json='{"table": "users"}', index=1)]), "Done."])


async def test_a_deferred_call_pauses_the_batch_and_runs_again_when_approved() -> None:
    log: list[str] = []
    storage = ark.MemoryStateStorage()
    runtime = ark.AgentRuntime(script(), tools=make_tools(log), storage=storage, session_id="d")
    events = record(runtime)
    paused = await runtime.run("migrate users")
    assert paused.stop_reason == "awaiting_approval"
    [item] = runtime.controller.list_pending_approvals()
    assert item.tool_call.id == "m1" and item.reason == "migrating users rewrites 10,000 rows"
    batch = (await storage.load("d")).pending_approval  # saved before it was announced
    assert [f.call.id for f in batch.finished_calls] == ["s1"]
    after = of(events, EventTypes.TOOL_AFTER)
    assert after[0].payload["deferred"] == {"reason": "migrating users rewrites 10,000 rows", "kind": "tool"}
    assert runtime.state.history[-1].tool_calls  # nothing answered the calls yet

    await runtime.controller.approve(item.approval_id)
    done = await runtime.current_run.wait()
    assert done.text == "Done."
    assert log == ["migrate users", "stats users", "migrate users"]  # stats ran once
    answers = [(m.tool_call_id, m.text) for m in runtime.state.history if m.role == "tool"]
    assert answers == [("m1", "users migrated"), ("s1", "users: 10000 rows")]


async def test_a_denied_deferred_call_is_answered_tool_denied() -> None:
    log: list[str] = []
    runtime = ark.AgentRuntime(script(), tools=make_tools(log))
    await runtime.run("migrate users")
    [item] = runtime.controller.list_pending_approvals()
    await runtime.controller.deny(item.approval_id, "not today")
    await runtime.current_run.wait()
    answer = runtime.state.history[2]
    assert answer.tool_call_id == "m1" and "tool_denied" in answer.text and "not today" in answer.text
    assert log == ["migrate users", "stats users"]


async def test_cancelling_a_paused_batch_keeps_the_finished_results() -> None:
    runtime = ark.AgentRuntime(script(), tools=make_tools([]))
    await runtime.run("migrate users")
    runtime.cancel()
    await runtime.current_run.wait()
    answers = {m.tool_call_id: m.text for m in runtime.state.history if m.role == "tool"}
    assert answers["s1"] == "users: 10000 rows" and "not executed" in answers["m1"]


def test_defer_outside_a_run_is_refused() -> None:
    with pytest.raises(ark.ArkError, match="inside a tool call"):
        ark.ToolContext(session_id="s", run_id="r").defer("why")
