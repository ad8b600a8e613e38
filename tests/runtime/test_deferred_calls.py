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
    # The two calls run at once (sync tools on worker threads): find migrate's by its id.
    [after] = [e for e in of(events, EventTypes.TOOL_AFTER) if e.payload["call"]["id"] == "m1"]
    assert after.payload["deferred"] == {"reason": "migrating users rewrites 10,000 rows", "kind": "tool"}
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


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_what_a_response_hook_added_to_a_call_that_ran_before_the_pause_is_kept(tmp_path, store) -> None:
    # stats ran and its after_tool_call hook injected a note and asked to stop after this
    # batch; migrate deferred itself, so the batch paused. Both survive the pause.
    log: list[str] = []
    storage = ark.MemoryStateStorage() if store == "memory" else ark.SQLiteStore(tmp_path / "s.sqlite3")
    runtime = ark.AgentRuntime(script(), tools=make_tools(log), storage=storage, session_id="d")

    @runtime.hooks.after_tool_call
    def note(ctx):
        if ctx.call.name == "stats":
            return ark.ToolResultHookResult.stop(injected_messages=[ark.AgentMessage.user("(stats are from the replica)")])
        return None

    await runtime.run("migrate users")
    [item] = runtime.controller.list_pending_approvals()
    await runtime.controller.approve(item.approval_id)
    done = await runtime.current_run.wait()
    assert log == ["migrate users", "stats users", "migrate users"]
    tail = [(m.role.value, m.tool_call_id, m.text) for m in runtime.state.history[2:]]
    assert tail == [("tool", "m1", "users migrated"), ("tool", "s1", "users: 10000 rows"),
                    ("user", None, "(stats are from the replica)")]
    assert done.stop_reason == "stopped" and len(runtime.model.requests) == 1  # the hook said: stop after the batch
    await runtime.aclose()
    if store == "sqlite":
        await storage.aclose()
