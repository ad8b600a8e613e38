"""The durable commit path's shortcuts keep what they replace: redaction of values carried
from one commit of an operation to the next, operation order numbered by the store, and
lease writes that need no fsync yet are seen by every other connection at once."""

from __future__ import annotations

import pytest

import arknb as ark
from arknb.durable import OperationPhase

KEY = "learnt-mid-call-0123456789abcdef"  # not credential-shaped: only learning it redacts it


async def test_a_value_committed_before_a_secret_was_learnt_is_redacted_in_the_operations_next_commit(tmp_path):
    """The executing record holds the call's input as it came (the key was not known yet);
    the tool then learns the key, and the completed record, which carries the very same
    input object, must be checked again and written redacted."""
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    seen_executing: list[str] = []

    def learn(token: str) -> str:
        """Learn a key."""
        seen_executing.extend(op.to_json() for op in store_ops if op.phase is OperationPhase.EXECUTING)
        runtime.secret_lint.add(KEY)
        return "learnt"

    store_ops: list = []
    call = ark.ToolCall(id="c1", name="learn", arguments_json=f'{{"token": "{KEY}"}}')
    runtime = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[call]), "done"]),
                               tools=[ark.tool(learn)], storage=store, session_id="s1")
    original = store.commit

    async def spy(commit):
        store_ops.extend(commit.operations)
        return await original(commit)

    store.commit = spy
    result = await runtime.run("go")
    assert result.stop_reason == "completed", result.error
    assert any(KEY in text for text in seen_executing)  # not known yet when the call began
    [tool_op] = [op for op in await store.list_operations("s1") if op.kind == "tool_call"]
    assert tool_op.completed
    assert KEY not in tool_op.to_json() and "[redacted]" in tool_op.to_json()
    await runtime.aclose()
    await store.aclose()


async def test_operations_are_numbered_in_the_order_they_began_across_commits_and_batches(tmp_path):
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    batch = [ark.ToolCall(id=f"c{i}", name="add", arguments_json=f'{{"a": {i}, "b": 1}}') for i in range(3)]
    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=batch),
                               ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="c9", name="add",
                                                                         arguments_json='{"a": 9, "b": 1}')]),
                               "done"])
    runtime = ark.AgentRuntime(model, tools=[ark.tool(add)], storage=store, session_id="s1")
    assert (await runtime.run("go")).stop_reason == "completed"
    operations = await store.list_operations("s1")
    keys = [op.purpose_key.split(":", 1)[1] for op in operations]
    assert keys == ["turn1", "c0", "c1", "c2", "turn2", "c9", "turn3"]
    assert [op.ordinal for op in operations] == list(range(1, 8))
    assert all(op.completed for op in operations)
    await runtime.aclose()
    await store.aclose()


async def test_a_lease_write_waits_for_no_disk_yet_another_store_on_the_file_sees_it_at_once(tmp_path):
    path = tmp_path / "arknb.sqlite3"
    first, second = ark.SQLiteStore(path), ark.SQLiteStore(path)
    lease = await first.acquire_lease("s1", "host:1:1:aaaa")
    assert first.commits == 1 and first.synced_commits == 0
    with pytest.raises(ark.ArkError) as locked:
        await second.acquire_lease("s1", "other-host:2:2:bbbb")
    assert locked.value.code == ark.ErrorCode.SESSION_LOCKED
    taken = await second.acquire_lease("s1", "other-host:2:2:bbbb", takeover=True)
    assert taken.generation == lease.generation + 1
    with pytest.raises(ark.ArkError) as lost:
        await first.commit(ark.durable.Commit(session_id="s1", lease=lease))
    assert lost.value.code == ark.ErrorCode.LEASE_LOST
    await first.aclose()
    await second.aclose()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_the_store_numbers_new_operations_in_turn_and_an_update_keeps_its_number(kind, tmp_path, request):
    store = (ark.SQLiteStore(tmp_path / "arknb.sqlite3") if kind == "sqlite"
             else ark.PostgresStore(request.getfixturevalue("pg_dsn")))
    base = ark.durable.Operation(operation_id="op_0", session_id="s1", run_id="r1", kind="tool_call",
                                 purpose_key="r1:c0", request_event_id="req_0")
    ops = [base.model_copy(update={"operation_id": f"op_{i}", "purpose_key": f"r1:c{i}"}) for i in range(4)]
    await store.commit(ark.durable.Commit(session_id="s1", operations=tuple(ops[:3])))  # three in one statement
    done = ops[1].advance(OperationPhase.COMPLETED, at=1.0, status=ark.durable.OperationStatus.SUCCEEDED)
    await store.commit(ark.durable.Commit(session_id="s1", operations=(done, ops[3])))
    found = {op.operation_id: op.ordinal for op in await store.list_operations("s1")}
    assert found == {"op_0": 1, "op_1": 2, "op_2": 3, "op_3": 4}
    assert (await store.get_operation("op_1")).ordinal == 2 and (await store.get_operation("op_1")).completed
    await store.aclose()
