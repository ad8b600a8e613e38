"""A store that fails mid-batch (issue 11): the run ends ``failed`` with the store's
error, and what the model is told of each call agrees with what happened and with the
operation log — a call that ran is never "not executed" (a model told so calls it again)."""

from __future__ import annotations

import asyncio
import json

import arknb as ark
from arknb.domain import ArkError, ErrorCode, ErrorLayer, Retryability
from arknb.durable import OperationPhase, OperationStatus


def _call(call_id: str, name: str, **arguments) -> ark.ToolCall:
    return ark.ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments), index=int(call_id[1:]) - 1)


def _by_call(operations) -> dict:
    return {op.purpose_key.split(":")[-1]: op for op in operations if op.kind == "tool_call"}


def _answers(runtime) -> dict[str, str]:
    return {m.tool_call_id: m.text for m in runtime.history if m.role == "tool"}


def _send_tool(ran: list[int]) -> ark.Tool:
    @ark.tool
    def send(n: int) -> str:
        """Send a message (a side effect)."""
        ran.append(n)
        return f"sent {n}"

    return send


class FailOnce:
    """Makes the store's first commit that carries ``call_id``'s record of ``phase`` (or later) fail as a full
    disk does (nothing of it written); every other commit goes through."""

    def __init__(self, store, call_id: str, phase: OperationPhase = OperationPhase.RAW_SAVED) -> None:
        self.store, self.call_id, self.phase, self.failed = store, call_id, phase, 0
        self._commit = store.commit
        store.commit = self.commit

    async def commit(self, commit):
        carries = any(op.purpose_key.endswith(f":{self.call_id}") and op.phase.rank >= self.phase.rank for op in commit.operations)
        if carries and not self.failed:
            self.failed += 1
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED,
                           "commit: the disk is full; nothing of this commit was written", Retryability.CONDITIONAL)
        return await self._commit(commit)


async def test_a_commit_failing_mid_batch_never_tells_the_model_a_call_that_ran_was_not_executed(tmp_path):
    ran: list[int] = []
    send = _send_tool(ran)
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    failing = FailOnce(store, "c2")
    turn = ark.ScriptedTurn(tool_calls=[_call("c1", "send", n=1), _call("c2", "send", n=2), _call("c3", "send", n=3)])
    runtime = ark.AgentRuntime(ark.ScriptedModel([turn, "done"]), tools=[send], storage=store, session_id="s")
    result = await asyncio.wait_for(runtime.run("go"), 30)
    assert failing.failed == 1
    assert result.stop_reason == "failed" and result.error.code == ErrorCode.STATE_SAVE_FAILED
    assert sorted(ran) == [1, 2, 3]
    answers = _answers(runtime)
    # Every call ran and returned: each answer is its result, and so is each record, c2's
    # too (the commit the store refused rode the run's terminal save).
    assert answers == {"c1": "sent 1", "c2": "sent 2", "c3": "sent 3"}
    ops = _by_call(await store.list_operations("s"))
    assert {call: op.status for call, op in ops.items()} == {
        "c1": OperationStatus.SUCCEEDED, "c2": OperationStatus.SUCCEEDED, "c3": OperationStatus.SUCCEEDED}
    assert all(op.completed and op.effective_result["contents"][0]["text"] == answers[call] for call, op in ops.items())
    await runtime.aclose()

    # What a restore reads is what was committed: the same answers.
    restored = await ark.AgentRuntime.restore("s", storage=ark.SQLiteStore(tmp_path / "arknb.sqlite3"),
                                              model=ark.ScriptedModel(["again"]), tools=[send])
    assert _answers(restored) == answers
    assert restored.controller.list_in_doubt() == [] and restored.controller.list_pending_approvals() == []
    await restored.aclose()
    await restored.storage.aclose()
    await store.aclose()


async def test_a_batch_whose_executing_commit_fails_runs_no_tool_and_says_not_executed(tmp_path):
    ran: list[int] = []
    send = _send_tool(ran)
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    failing = FailOnce(store, "c1", OperationPhase.EXECUTING)
    turn = ark.ScriptedTurn(tool_calls=[_call("c1", "send", n=1), _call("c2", "send", n=2)])
    runtime = ark.AgentRuntime(ark.ScriptedModel([turn, "done"]), tools=[send], storage=store, session_id="s")
    result = await asyncio.wait_for(runtime.run("go"), 30)
    assert failing.failed == 1 and result.stop_reason == "failed"
    assert result.error.code == ErrorCode.STATE_SAVE_FAILED
    assert ran == []  # no handler runs before the batch's executing records are committed
    answers = _answers(runtime)
    assert set(answers) == {"c1", "c2"} and all(text.startswith("not executed") for text in answers.values())
    assert all(op.completed and op.status is not OperationStatus.SUCCEEDED
               for op in _by_call(await store.list_operations("s")).values())
    await runtime.aclose()
    await store.aclose()


async def test_on_postgres_a_connection_killed_mid_batch_keeps_every_result_the_tools_returned(pg_dsn, pg_server):
    # The store's connection is terminated while c1 runs (c2 and c3 returned and were
    # committed): the connection died idle, so c1's commit reconnects and is made once
    # more (issue 26: a killed idle connection costs no failed action); the run completes
    # and every result is recorded once. (A commit that fails outright is the first test's.)
    _, admin = pg_server
    release = asyncio.Event()
    ran: list[int] = []

    @ark.tool
    async def send(n: int) -> str:
        """Send a message (a side effect)."""
        ran.append(n)
        if n == 1:
            await release.wait()
        return f"sent {n}"

    store = ark.PostgresStore(f"{pg_dsn} application_name=arknb_victim")
    turn = ark.ScriptedTurn(tool_calls=[_call("c1", "send", n=1), _call("c2", "send", n=2), _call("c3", "send", n=3)])
    runtime = ark.AgentRuntime(ark.ScriptedModel([turn, "done"]), tools=[send], storage=store, session_id="s")
    handle = runtime.start("go")
    watcher = ark.PostgresStore(pg_dsn)
    while True:  # c2 and c3 have their results committed (they wait for c1's response phase)
        ops = _by_call(await watcher.list_operations("s"))
        if all(key in ops and ops[key].phase.rank >= OperationPhase.RAW_SAVED.rank for key in ("c2", "c3")):
            break
        await asyncio.sleep(0.02)  # another store's commits: nothing to await here
    with admin() as conn:
        [(killed,)] = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                   "WHERE application_name = 'arknb_victim'").fetchall()
    assert killed
    release.set()
    result = await asyncio.wait_for(handle.wait(), 30)
    assert (result.stop_reason, result.final_message.text) == ("completed", "done"), result.error
    assert sorted(ran) == [1, 2, 3]
    assert _answers(runtime) == {"c1": "sent 1", "c2": "sent 2", "c3": "sent 3"}
    ops = _by_call(await watcher.list_operations("s"))
    assert {call: (op.completed, op.status) for call, op in ops.items()} == {
        call: (True, OperationStatus.SUCCEEDED) for call in ("c1", "c2", "c3")}
    await runtime.aclose()
    restored = await ark.AgentRuntime.restore("s", storage=watcher, model=ark.ScriptedModel(["again"]), tools=[send])
    assert _answers(restored) == _answers(runtime) and restored.controller.list_in_doubt() == []
    await restored.aclose()
    await store.aclose()
    await watcher.aclose()
