"""Decisions are saved before they are acknowledged, and deciding is a compare-and-swap.

(Issue 10 items 1, 3 and 4; DESIGN §7, §8.) ``approve``/``deny`` return ok only after
the mandatory save; ``approval.decided`` follows it; a failed save leaves the item
pending and a later retry works; a decision after the batch resolved is
``approval_already_resolved`` with the decision that stands; of two runtimes deciding
one saved approval exactly one runs the call.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest

import arknb as ark
from arknb import EventTypes, ScriptedModel, ScriptedTurn
from arknb.durable import SQLiteStore

from ._approval_kit import EventLog, FaultyStorage, Tools, assert_history_paired, call, dangerous_turn


def _two_dangerous_calls() -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[call("c1", "clear_cache", path="/a"), call("c2", "drop_table", 1, table="t")])


class SwitchableStorage(FaultyStorage):
    """A memory storage whose disk can be made to fail and recover."""

    def __init__(self, log=None) -> None:
        super().__init__(fail_if=lambda state: self.broken, log=log)
        self.broken = False


async def _paused(storage, turns, tools: Tools | None = None, session_id="s") -> tuple[ark.AgentRuntime, Tools, EventLog]:
    tools = tools or Tools()
    runtime = ark.AgentRuntime(ScriptedModel(turns), tools=tools.all, storage=storage, session_id=session_id)
    log = EventLog(runtime, getattr(storage, "log", None))
    assert (await runtime.run("go")).stop_reason == "awaiting_approval"
    return runtime, tools, log


async def test_a_decision_is_saved_before_it_is_acknowledged_and_published():
    order: list = []
    storage = SwitchableStorage(log=order)
    runtime, _, _ = await _paused(storage, [_two_dangerous_calls(), "Done."])
    first, second = runtime.controller.list_pending_approvals()
    del order[:]

    decided = await runtime.controller.approve(first.approval_id)

    assert decided.ok and not decided.all_decided
    kinds = [entry[:2] if entry[0] == "event" else entry[0] for entry in order]
    assert kinds == ["save", ("event", EventTypes.STATE_PERSISTED), ("event", EventTypes.APPROVAL_DECIDED)]
    assert order[1][2]["reason"] == "approval_decision" and order[1][2]["mandatory"] is True
    stored = (await storage.load("s")).pending_approval
    assert stored.find(first.approval_id).decision == "approved" and stored.find(second.approval_id).is_pending()


async def test_the_final_decision_consumes_the_batch_in_its_own_save_before_anything_runs():
    order: list = []
    storage = SwitchableStorage(log=order)
    runtime, tools, _ = await _paused(storage, [dangerous_turn(), "Done."])
    [item] = runtime.controller.list_pending_approvals()
    del order[:]

    decided = await runtime.controller.approve(item.approval_id)
    saved_first = storage.saved[-1]
    await runtime.current_run

    assert decided.ok and decided.all_decided and tools.names() == ["clear_cache"]
    assert saved_first.pending_approval is None and saved_first.is_running
    assert [r.approval_id for r in saved_first.resolved_approvals] == [item.approval_id]
    events = [entry[1] for entry in order if entry[0] == "event"]
    assert events[:3] == [EventTypes.STATE_PERSISTED, EventTypes.APPROVAL_DECIDED, EventTypes.APPROVAL_RESOLVED]


@pytest.mark.parametrize("final", [False, True], ids=["non_final", "final"])
async def test_a_failed_decision_save_keeps_the_item_pending_and_a_retry_succeeds(final):
    storage = SwitchableStorage()
    turns = [dangerous_turn() if final else _two_dangerous_calls(), "Done."]
    runtime, tools, log = await _paused(storage, turns)
    item = runtime.controller.list_pending_approvals()[0]
    storage.broken = True

    failed = await runtime.controller.approve(item.approval_id)

    assert not failed.ok and failed.error.code == "state_save_failed" and failed.error.layer == "storage"
    assert item.approval_id in failed.error.message and "the call still waits; decide again" in failed.error.message
    assert not log.of(EventTypes.APPROVAL_DECIDED) and runtime.current_run is None and tools.ran == []
    assert runtime.controller.list_pending_approvals()[0].approval_id == item.approval_id  # pending in memory
    assert (await storage.load("s")).pending_approval.find(item.approval_id).is_pending()  # and on disk
    assert not runtime.state.not_resumable and storage.marked == []  # nothing is wedged

    storage.broken = False  # the disk recovers
    retried = await runtime.controller.approve(item.approval_id)

    assert retried.ok and retried.all_decided is final and len(log.of(EventTypes.APPROVAL_DECIDED)) == 1
    if final:
        assert (await runtime.current_run).stop_reason == "completed"
        assert tools.names() == ["clear_cache"]


async def test_a_failed_final_decision_save_never_blocks_new_input_for_good():
    """The wedge of issue 10: approve -> not_resumable, new input -> blocked, forever."""
    storage = SwitchableStorage()
    runtime, tools, _ = await _paused(storage, [dangerous_turn(), "Denied, fine.", "Hi again."])
    [item] = runtime.controller.list_pending_approvals()
    storage.broken = True
    assert not (await runtime.controller.deny(item.approval_id)).ok
    storage.broken = False

    assert (await runtime.controller.deny(item.approval_id)).ok
    assert (await runtime.current_run).stop_reason == "completed"
    assert (await runtime.run("hello")).text == "Hi again."
    assert tools.ran == []


async def test_new_input_ends_the_frozen_batch_of_a_session_marked_not_resumable(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    await _paused(storage, [dangerous_turn()])
    await storage.mark_not_resumable("s")

    tools = Tools()
    model = ScriptedModel(["Starting over."])
    runtime = ark.AgentRuntime(model, tools=tools.all, storage=ark.FileStateStorage(tmp_path), session_id="s")
    [item] = (await runtime.load()).pending_approval.items
    refused = await runtime.controller.approve(item.approval_id)
    assert not refused.ok and refused.error.code == "not_resumable"

    result = await runtime.run("never mind, hello")

    assert result.stop_reason == "completed" and tools.ran == []
    sent = model.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[2].is_error and "not executed" in sent[2].text
    saved = await storage.load("s")
    assert saved.pending_approval is None and not saved.not_resumable
    assert_history_paired(saved.history)


async def test_a_decision_after_the_batch_resolved_is_already_resolved_also_after_a_restart(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    runtime, tools, _ = await _paused(storage, [dangerous_turn(), "Done."])
    [item] = runtime.controller.list_pending_approvals()
    await runtime.controller.deny(item.approval_id, "not today")
    await runtime.current_run

    restored = await ark.AgentRuntime.restore("s", storage=ark.FileStateStorage(tmp_path),
                                              model=ScriptedModel([]), tools=Tools().all)
    late = await restored.controller.approve(item.approval_id)

    assert not late.ok and late.error.code == "approval_already_resolved"
    assert late.decision == "denied" and restored.current_run is None


async def test_a_decision_names_its_batch_and_another_batch_is_refused():
    runtime, tools, _ = await _paused(ark.MemoryStateStorage(), [dangerous_turn(), "Done."])
    [item] = runtime.controller.list_pending_approvals()
    batch_id = runtime.state.pending_approval.batch_id

    wrong = await runtime.controller.approve(item.approval_id, batch_id="batch_from_an_old_card")
    assert not wrong.ok and wrong.error.code == "approval_not_found" and "batch_from_an_old_card" in wrong.error.message
    assert runtime.controller.list_pending_approvals()[0].is_pending() and tools.ran == []

    assert (await runtime.controller.approve(item.approval_id, batch_id=batch_id)).ok
    await runtime.current_run
    late = await runtime.controller.approve(item.approval_id, batch_id=batch_id)
    assert late.error.code == "approval_already_resolved" and late.decision == "approved"
    with pytest.raises(ark.ArkError):
        await runtime.controller.approve(item.approval_id, batch_id="")


async def test_resolved_approvals_keep_only_the_latest():
    from arknb.state import RESOLVED_APPROVALS_KEPT

    turns = []
    for n in range(RESOLVED_APPROVALS_KEPT + 3):
        turns += [dangerous_turn(), f"done {n}"]
    runtime = ark.AgentRuntime(ScriptedModel(turns), tools=Tools().all)
    first_id = None
    for n in range(RESOLVED_APPROVALS_KEPT + 3):
        await runtime.run(f"clear {n}")
        [item] = runtime.controller.list_pending_approvals()
        first_id = first_id or item.approval_id
        await runtime.controller.approve(item.approval_id)
        await runtime.current_run
    assert len(runtime.state.resolved_approvals) == RESOLVED_APPROVALS_KEPT
    assert (await runtime.controller.approve(first_id)).error.code == "approval_not_found"


# -- two runtimes, one saved approval (in one process) -------------------------------------------


class Unshared:
    """A view of a store that does not say where it keeps its sessions, so runtimes on two
    views do not detach each other: what is left is the compare-and-swap of the store."""

    _ids = itertools.count()

    def __init__(self, inner) -> None:
        self._inner = inner
        self.location = ("unshared", next(self._ids))

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def load(self, session_id):
        return await self._inner.load(session_id)

    async def save(self, state):
        return await self._inner.save(state)

    async def mark_not_resumable(self, session_id):
        return await self._inner.mark_not_resumable(session_id)

    async def delete(self, session_id):
        return await self._inner.delete(session_id)

    async def list_sessions(self):
        return await self._inner.list_sessions()


@pytest.fixture(params=["memory", "file", "sqlite"])
async def shared_store(request, tmp_path):
    if request.param == "memory":
        yield lambda: ark.MemoryStateStorage(), True
    elif request.param == "file":
        yield lambda: ark.FileStateStorage(tmp_path), False
    else:
        stores = []

        def make():
            stores.append(SQLiteStore(tmp_path / "s.db"))
            return stores[-1]

        yield make, False
        for store in stores:
            await store.aclose()


@pytest.mark.parametrize("together", [True, False], ids=["concurrently", "one_after_the_other"])
async def test_of_two_runtimes_deciding_one_saved_approval_exactly_one_runs_the_call(shared_store, together):
    make, one_instance = shared_store
    base = make()
    await _paused(Unshared(base), [dangerous_turn()])
    ran: list[str] = []

    def contender(name: str) -> ark.AgentRuntime:
        @ark.tool(risk="dangerous")
        def clear_cache(path: str) -> str:
            """Delete a cache folder."""
            ran.append(name)
            return "cleared"

        store = Unshared(base if one_instance else make())
        return ark.AgentRuntime(ScriptedModel(["Done."]), tools=[clear_cache], storage=store, session_id="s")

    a, b = contender("a"), contender("b")
    await asyncio.gather(a.load(), b.load())
    [item] = a.controller.list_pending_approvals()
    if together:
        outcomes = await asyncio.gather(a.controller.approve(item.approval_id),
                                        b.controller.approve(item.approval_id))
    else:
        outcomes = [await a.controller.approve(item.approval_id)]
        await a.current_run
        outcomes.append(await b.controller.approve(item.approval_id))
    for runtime in (a, b):
        if runtime.current_run is not None:
            await runtime.current_run

    assert sorted(o.ok for o in outcomes) == [False, True]
    [loser] = [o for o in outcomes if not o.ok]
    assert loser.error.code in ("state_conflict", "approval_already_resolved")
    assert len(ran) == 1
    final = await base.load("s")
    assert final.pending_approval is None and final.last_stop_reason == "completed"
    assert_history_paired(final.history)
