"""A run that ends for good leaves none of its operations open (issue 11: an exactly-once
recorded outcome): cancelled while paused for approval or while a batch runs, ended by a
hook's abort, or with a self-deferred call's next attempt prepared, every operation of the
run is completed, with what is known of it, and its record agrees with what the model was
told."""

from __future__ import annotations

import asyncio

import pytest

import arknb as ark
from arknb.durable import OperationStatus


def _call(call_id: str, name: str, **arguments) -> ark.ToolCall:
    import json
    return ark.ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


def _by_call(operations) -> dict:
    return {op.purpose_key.split(":")[-1]: op for op in operations if op.kind == "tool_call"}


def _answers(runtime) -> dict[str, str]:
    return {m.tool_call_id: m.text for m in runtime.history if m.role == "tool"}


@pytest.fixture(params=["sqlite", "postgres"])
def store_kind(request) -> str:
    return request.param


def _open(kind: str, tmp_path, request):
    if kind == "sqlite":
        return ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    return ark.PostgresStore(request.getfixturevalue("pg_dsn"))


async def test_cancelling_a_run_paused_for_approval_completes_its_calls_as_not_run(tmp_path, store_kind, request):
    @ark.tool(risk="dangerous")
    def transfer(amount: int) -> str:
        """Move money."""
        return "moved"

    @ark.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    store = _open(store_kind, tmp_path, request)
    turn = ark.ScriptedTurn(tool_calls=[_call("c1", "transfer", amount=5), _call("c2", "add", a=1, b=2)])
    runtime = ark.AgentRuntime(ark.ScriptedModel([turn, "done"]), tools=[transfer, add], storage=store,
                               session_id="s")
    assert (await runtime.run("go")).stop_reason == "awaiting_approval"
    assert not any(op.completed for op in _by_call(await store.list_operations("s")).values())

    assert runtime.cancel()
    assert (await asyncio.wait_for(runtime.current_run.wait(), 30)).stop_reason == "cancelled"
    ops = _by_call(await store.list_operations("s"))
    assert {call: (op.completed, op.status) for call, op in ops.items()} == {
        "c1": (True, OperationStatus.FAILED), "c2": (True, OperationStatus.FAILED)}
    assert all(op.error.code == "cancelled" and op.result_source == "run_end" and not op.attempts
               for op in ops.values())
    assert all(text.startswith("not executed") for text in _answers(runtime).values())
    await runtime.aclose()
    await store.aclose()


async def test_cancelling_a_batch_records_the_call_that_had_finished_with_its_result(tmp_path):
    # The later call finishes first and waits for the earlier one's response phase; the
    # cancel ends both: the record of the finished one is its result, as the model was told.
    quick_done = asyncio.Event()

    @ark.tool
    async def slow(n: int) -> str:
        """Slow."""
        await asyncio.Event().wait()
        return "never"

    @ark.tool
    async def quick(n: int) -> str:
        """Quick."""
        quick_done.set()
        return "quick done"

    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    turn = ark.ScriptedTurn(tool_calls=[_call("c1", "slow", n=1), _call("c2", "quick", n=2)])
    runtime = ark.AgentRuntime(ark.ScriptedModel([turn, "done"]), tools=[slow, quick], storage=store,
                               session_id="s")
    handle = runtime.start("go")
    await asyncio.wait_for(quick_done.wait(), 30)
    runtime.cancel()
    assert (await asyncio.wait_for(handle.wait(), 30)).stop_reason == "cancelled"
    ops = _by_call(await store.list_operations("s"))
    assert ops["c2"].completed and ops["c2"].status is OperationStatus.SUCCEEDED
    assert ops["c2"].effective_result["contents"][0]["text"] == "quick done" == _answers(runtime)["c2"]
    # The other began and left no result: what became of it is unknown, not "failed".
    assert ops["c1"].completed and ops["c1"].status is OperationStatus.INDETERMINATE
    assert ops["c1"].error.code == "cancelled"
    await runtime.aclose()
    await store.aclose()


async def test_a_sync_tool_cancelled_while_its_thread_runs_is_recorded_indeterminate_as_its_effect_still_happens(
        tmp_path):
    # Python cannot stop a thread: the tool's effect lands after the run was cancelled, so
    # the record must not say the call failed.
    import threading
    entered, release, finished, effects = threading.Event(), threading.Event(), threading.Event(), []

    @ark.tool
    def send(to: str) -> str:
        """Send an email."""
        entered.set()
        release.wait(30)
        effects.append(to)
        finished.set()
        return "sent"

    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    runtime = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[_call("c1", "send", to="bob")]),
                                                  "done"]), tools=[send], storage=store, session_id="s")
    handle = runtime.start("go")
    assert await asyncio.to_thread(entered.wait, 30)
    runtime.cancel()
    assert (await asyncio.wait_for(handle.wait(), 30)).stop_reason == "cancelled"
    release.set()
    [op] = _by_call(await store.list_operations("s")).values()
    assert op.completed and op.status is OperationStatus.INDETERMINATE and op.error.code == "cancelled"
    assert op.attempts[-1].outcome == "cancelled"
    assert "may have had part of its effect" in _answers(runtime)["c1"]
    assert await asyncio.to_thread(finished.wait, 30)
    assert effects == ["bob"]  # it did happen: "failed" would have been a wrong record
    assert [op.status for op in _by_call(await store.list_operations("s")).values()] == [
        OperationStatus.INDETERMINATE]  # and the thread's late return changed no record
    await runtime.aclose()
    await store.aclose()


async def test_a_hook_abort_completes_the_calls_it_kept_from_running_with_the_runs_error(tmp_path):
    ran: list[int] = []

    @ark.tool
    def add(a: int, b: int) -> int:
        """Add."""
        ran.append(a)
        return a + b

    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    turn = ark.ScriptedTurn(tool_calls=[_call("c1", "add", a=1, b=1), _call("c2", "add", a=2, b=2)])
    runtime = ark.AgentRuntime(ark.ScriptedModel([turn, "done"]), tools=[add], storage=store, session_id="s")

    @runtime.hooks.before_tool_call
    def stop_the_second(ctx):
        if ctx.call.id == "c2":
            return ark.ToolCallHookResult.abort("no second call")
        return None

    result = await runtime.run("go")
    assert result.stop_reason == "aborted" and ran == []
    ops = _by_call(await store.list_operations("s"))
    assert all(op.completed for op in ops.values())
    assert ops["c2"].status is OperationStatus.BLOCKED  # the aborted call: the hook's own record
    assert ops["c1"].status is OperationStatus.FAILED and ops["c1"].error.code == result.error.code == "hook_abort"
    await runtime.aclose()
    await store.aclose()


async def test_cancelling_a_paused_self_deferral_completes_its_prepared_next_attempt(tmp_path):
    @ark.tool
    def transfer(amount: int, ctx: ark.ToolContext) -> str:
        """Transfer money (a person confirms it)."""
        return ctx.defer(f"confirm the transfer of {amount}")

    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    runtime = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[_call("t1", "transfer", amount=9)]),
                                                  "done"]), tools=[transfer], storage=store, session_id="s")
    assert (await runtime.run("go")).stop_reason == "awaiting_approval"
    before = _by_call(await store.list_operations("s"))
    assert not before["t1.a1"].completed  # the next attempt's intent, saved with the pause

    assert runtime.cancel()
    assert (await asyncio.wait_for(runtime.current_run.wait(), 30)).stop_reason == "cancelled"
    ops = _by_call(await store.list_operations("s"))
    assert ops["t1"].completed and ops["t1"].status is OperationStatus.SUCCEEDED  # the deferral it answered
    assert ops["t1.a1"].completed and ops["t1.a1"].status is OperationStatus.FAILED
    assert ops["t1.a1"].error.code == "cancelled"
    await runtime.aclose()
    await store.aclose()


async def test_a_completed_run_reads_no_operations_back_at_its_end(tmp_path):
    # Only a run that ended early can leave operations open: a completed one is not
    # checked (no read of the store at the end of every run).
    @ark.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    runtime = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[_call("c1", "add", a=1, b=2)]),
                                                  "done"]), tools=[add], storage=store, session_id="s")
    reads: list[str] = []
    original = store.list_operations

    async def spy(session_id, run_id=None):
        reads.append(session_id)
        return await original(session_id, run_id=run_id)

    store.list_operations = spy
    assert (await runtime.run("go")).stop_reason == "completed"
    assert reads == []
    assert all(op.completed for op in await original("s"))
    await runtime.aclose()
    await store.aclose()


async def test_cancelling_a_run_in_a_response_hook_stops_the_hook_and_completes_the_call(tmp_path):
    # The hook runs in the call's pipeline, which the run no longer awaits once cancelled:
    # it is stopped as it would be without a durable store, and its call keeps its result.
    entered, stopped = asyncio.Event(), asyncio.Event()

    @ark.tool
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    runtime = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[_call("c1", "add", a=1, b=1)]),
                                                  "done"]), tools=[add], storage=store, session_id="s")

    @runtime.hooks.after_tool_call
    async def slow_review(ctx):
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped.set()
            raise

    handle = runtime.start("go")
    await asyncio.wait_for(entered.wait(), 30)
    runtime.cancel()
    assert (await asyncio.wait_for(handle.wait(), 30)).stop_reason == "cancelled"
    assert stopped.is_set()  # not left running after its run ended
    [op] = _by_call(await store.list_operations("s")).values()
    assert op.completed and op.status is OperationStatus.SUCCEEDED and op.raw_result["contents"][0]["text"] == "2"
    assert _answers(runtime) == {"c1": "2"}
    await runtime.aclose()
    await store.aclose()
