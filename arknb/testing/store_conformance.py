"""StoreConformance: the behaviour every arknb store must show, as a pytest base class.

A store of your own passes when a subclass that provides a ``make_store`` fixture
passes (DESIGN §13)::

    import pytest
    from arknb.testing import StoreConformance

    class TestMyStore(StoreConformance):
        @pytest.fixture
        async def make_store(self, tmp_path):
            stores = []

            def make():              # a new store instance on the same data each call
                stores.append(MyStore(tmp_path / "data"))
                return stores[-1]

            yield make
            for store in stores:
                await store.aclose()

Every store is checked for: save and load with revisions, a stale save refused with
``state_conflict``, append-only saves that load whole, not-resumable marks, delete and
list, persist-before-announce, idempotent approval decisions, the terminal save of a
cancelled run. A store that is also an ``OperationStore`` is checked for operation
phases, purpose-key lookups, the outbox (read backwards too, when the store offers
``read_events_before``) and leases. ``newer_layout(make_store)``,
when a subclass overrides it, must leave the data in a layout from a newer arknb: it
is then refused with ``store_version_unsupported`` (or ``state_version_unsupported``)
and left untouched, also by a store that had it open before the upgrade (its next save).

Tests run with pytest-asyncio (``asyncio_mode = "auto"``).
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import pytest

import arknb as ark
from arknb.domain import AgentMessage, ArkError, ToolCall
from arknb.durable import Commit, Operation, OperationPhase, OperationStatus, OperationStore
from arknb.events import AgentEvent
from arknb.state import AgentState

__all__ = ["StoreConformance"]


def _state(session_id: str = "conf", *texts: str, revision: int = 0, **update: Any) -> AgentState:
    return AgentState(session_id=session_id, history=tuple(AgentMessage.user(t) for t in texts), revision=revision,
                      **update)


async def _save(store: Any, state: AgentState) -> AgentState:
    revision = await store.save(state)
    return state.model_copy(update={"revision": revision}) if type(revision) is int else state


class StoreConformance:
    """Subclass it with a ``make_store`` fixture returning a factory of store instances."""

    def newer_layout(self, make_store: Callable[[], Any]) -> None:
        """Override: turn the stored data into a newer layout (the default skips the test)."""
        pytest.skip("this store's subclass does not say how to write a newer layout")

    # -- state -----------------------------------------------------------------------------

    async def test_save_then_load_returns_the_state_and_its_revision(self, make_store):
        store = make_store()
        saved = await _save(store, _state("conf", "one", "two", metadata={"k": [1, 2]}))
        loaded = await store.load("conf")
        assert loaded is not None and loaded.history == saved.history and loaded.metadata == {"k": [1, 2]}
        assert loaded.revision == saved.revision
        assert await store.load("nobody") is None

    async def test_a_save_based_on_a_stale_revision_is_refused_and_changes_nothing(self, make_store):
        store = make_store()
        first = await _save(store, _state("conf", "one"))
        await _save(store, first.model_copy(update={"history": first.history + (AgentMessage.user("two"),)}))
        with pytest.raises(ArkError) as err:
            await store.save(first.model_copy(update={"history": (AgentMessage.user("stale"),)}))
        assert err.value.code == "state_conflict" and err.value.layer == "storage"
        assert [m.text for m in (await store.load("conf")).history] == ["one", "two"]

    async def test_append_only_saves_load_whole_from_a_new_instance(self, make_store):
        store = make_store()
        state = _state("conf")
        for n in range(30):
            state = await _save(store, state.model_copy(update={"history": state.history + (
                AgentMessage.user(f"m{n}"),)}))
        other = make_store()
        assert [m.text for m in (await other.load("conf")).history] == [f"m{n}" for n in range(30)]

    async def test_mark_not_resumable_works_with_and_without_a_saved_state(self, make_store):
        store = make_store()
        await store.mark_not_resumable("ghost")
        assert (await store.load("ghost")).not_resumable is True
        await _save(store, _state("conf", "kept"))
        await store.mark_not_resumable("conf")
        loaded = await store.load("conf")
        assert loaded.not_resumable is True and loaded.history[0].text == "kept"

    async def test_delete_and_list_sessions(self, make_store):
        store = make_store()
        await _save(store, _state("a-1"))
        await _save(store, _state("b.2"))
        assert await store.list_sessions() == ["a-1", "b.2"]
        await store.delete("a-1")
        await store.delete("never-there")
        assert await store.list_sessions() == ["b.2"] and await store.load("a-1") is None

    async def test_a_newer_layout_is_refused_and_left_untouched(self, make_store):
        store = make_store()
        await _save(store, _state("conf", "old"))
        if hasattr(store, "aclose"):
            await store.aclose()
        self.newer_layout(make_store)
        reopened = make_store()
        with pytest.raises(ArkError) as err:
            await reopened.load("conf")
        assert err.value.code in ("store_version_unsupported", "state_version_unsupported")

    async def test_a_newer_layout_written_while_the_store_is_open_is_refused_at_the_next_save(self, make_store):
        store = make_store()
        saved = await _save(store, _state("conf", "old"))
        self.newer_layout(make_store)  # another (newer) arknb upgraded it under this open store
        with pytest.raises(ArkError) as err:
            await store.save(saved.model_copy(update={"history": saved.history + (AgentMessage.user("new"),)}))
        assert err.value.code in ("store_version_unsupported", "state_version_unsupported")

    # -- the runtime's contract ---------------------------------------------------------------

    async def test_persist_before_announce_the_pending_batch_is_saved_before_approval_required(self, make_store):
        store = make_store()
        seen: list[Any] = []

        @ark.tool(risk="dangerous")
        def wipe(path: str) -> str:
            """Delete a folder."""
            return "wiped"

        model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[ToolCall(id="c1", name="wipe",
                                                                         arguments_json='{"path": "/x"}')])])
        runtime = ark.AgentRuntime(model, tools=[wipe], storage=store, session_id="conf")

        async def check(event: AgentEvent) -> None:
            seen.append(await store.load("conf"))

        runtime.bus.subscribe(ark.EventTypes.APPROVAL_REQUIRED, check)
        assert (await runtime.run("wipe it")).stop_reason == "awaiting_approval"
        await runtime.bus.drain()
        assert seen and seen[0].pending_approval is not None
        await _aclose(runtime)

    async def test_deciding_an_approval_twice_is_idempotent_and_runs_the_call_once(self, make_store):
        store = make_store()
        ran: list[str] = []

        @ark.tool(risk="dangerous")
        def wipe(path: str) -> str:
            """Delete a folder."""
            ran.append(path)
            return "wiped"

        model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[ToolCall(id="c1", name="wipe",
                                                                         arguments_json='{"path": "/x"}')]), "done"])
        runtime = ark.AgentRuntime(model, tools=[wipe], storage=store, session_id="conf")
        await runtime.run("wipe it")
        [item] = runtime.controller.list_pending_approvals()
        first = await runtime.controller.approve(item.approval_id)
        result = await asyncio.wait_for(runtime.current_run.wait(), 30)
        second = await runtime.controller.approve(item.approval_id)
        assert first.ok and result.stop_reason == "completed" and ran == ["/x"]
        assert not second.ok or second.decision == "approved"
        assert (await store.load("conf")).pending_approval is None
        await _aclose(runtime)

    async def test_a_cancelled_run_gets_its_terminal_save(self, make_store):
        store = make_store()
        started = asyncio.Event()

        @ark.tool
        async def wait_forever() -> str:
            """Wait."""
            started.set()
            await asyncio.Event().wait()
            return "never"

        model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[ToolCall(id="c1", name="wait_forever")])])
        runtime = ark.AgentRuntime(model, tools=[wait_forever], storage=store, session_id="conf")
        handle = runtime.start("wait")
        await asyncio.wait_for(started.wait(), 30)
        runtime.cancel()
        assert (await asyncio.wait_for(handle.wait(), 30)).stop_reason == "cancelled"
        saved = await store.load("conf")
        assert saved.last_stop_reason == "cancelled" and not saved.is_running
        assert saved.history[-1].role == "tool"  # the call is answered (not executed), history stays paired
        await _aclose(runtime)

    # -- operations, outbox, leases (OperationStore only) ------------------------------------------

    def _operations(self, store: Any) -> Any:
        if not isinstance(store, OperationStore):
            pytest.skip(f"{type(store).__name__} is not an OperationStore")
        return store

    async def test_operations_move_through_their_phases_and_are_found_by_purpose(self, make_store):
        store = self._operations(make_store())
        base = Operation(operation_id="op_a", session_id="conf", run_id="r1", kind="tool_call", purpose_key="r1:c1",
                         request_event_id="req_1", created_at=1.0, updated_at=1.0)
        other = base.model_copy(update={"operation_id": "op_b", "purpose_key": "r1:c2", "run_id": "r1"})
        await store.commit(Commit(session_id="conf", operations=(base.advance(OperationPhase.EXECUTING, at=2.0),
                                                                 other)))
        done = base.advance(OperationPhase.COMPLETED, at=3.0, status=OperationStatus.SUCCEEDED,
                            raw_result={"text": "raw"}, effective_result={"text": "effective"}, result_source="hook")
        await store.commit(Commit(session_id="conf", operations=(done,)))
        found = await store.find_operation("conf", "r1:c1")
        assert found.phase is OperationPhase.COMPLETED and found.raw_result == {"text": "raw"}
        assert found.effective_result == {"text": "effective"} and found.result_source == "hook"
        assert (await store.get_operation("op_b")).phase is OperationPhase.PREPARED
        assert [op.operation_id for op in await store.list_operations("conf")] == ["op_a", "op_b"]  # order begun
        assert await store.list_operations("conf", run_id="r2") == []
        assert await store.get_operation("op_missing") is None

    async def test_one_commit_writes_state_operations_and_events_together_or_not_at_all(self, make_store):
        store = self._operations(make_store())
        state = await _save(store, _state("conf", "one"))
        op = Operation(operation_id="op_x", session_id="conf", run_id="r1", kind="tool_call", purpose_key="r1:c9",
                       request_event_id="req_9")
        event = AgentEvent("r1:7", "tool.before", "conf", "r1", 7, 1.0, {"n": 1})
        stale = state.model_copy(update={"revision": 0, "history": (AgentMessage.user("stale"),)})
        with pytest.raises(ArkError):
            await store.commit(Commit(session_id="conf", state=stale, operations=(op,), events=(event,)))
        assert await store.get_operation("op_x") is None and await store.read_events("conf") == []
        await store.commit(Commit(session_id="conf", state=state, operations=(op,), events=(event,)))
        assert (await store.get_operation("op_x")) is not None
        assert [e.sequence for e in await store.read_events("conf")] == [7]

    async def test_the_outbox_reads_back_in_sequence_order_after_a_cursor(self, make_store):
        store = self._operations(make_store())
        events = tuple(AgentEvent(f"r1:{n}", "tool.after", "conf", "r1", n, float(n), {"n": n}) for n in range(1, 8))
        await store.commit(Commit(session_id="conf", events=events[:4]))
        await store.commit(Commit(session_id="conf", events=events[3:]))  # a resent event is kept once
        assert [e.sequence for e in await store.read_events("conf")] == list(range(1, 8))
        assert [e.sequence for e in await store.read_events("conf", after_sequence=3, limit=2)] == [4, 5]
        assert (await store.read_events("conf", after_sequence=6))[0].payload == {"n": 7}

    async def test_an_outbox_read_backwards_gives_the_newest_page_below_a_cursor(self, make_store):
        store = self._operations(make_store())
        if not callable(getattr(store, "read_events_before", None)):
            pytest.skip(f"{type(store).__name__} reads its outbox forward only (timelines walk it)")
        events = tuple(AgentEvent(f"r1:{n}", "tool.after", "conf", "r1", n, float(n), {"n": n}) for n in (2, 3, 5, 8))
        await store.commit(Commit(session_id="conf", events=events))
        other = AgentEvent("x:9", "tool.after", "other", "x", 9, 9.0, {})
        await store.commit(Commit(session_id="other", events=(other,)))
        newest = await store.read_events_before("conf", limit=2)
        assert [e.sequence for e in newest] == [5, 8] and newest[-1].payload == {"n": 8}  # oldest first
        assert [e.sequence for e in await store.read_events_before("conf", 5, limit=10)] == [2, 3]
        assert [e.sequence for e in await store.read_events_before("conf", 8, limit=2)] == [3, 5]
        assert await store.read_events_before("conf", 2, limit=5) == []
        assert await store.read_events_before("conf", limit=0) == []
        assert [e.event_id for e in await store.read_events_before("conf", limit=100)] == \
            [e.event_id for e in await store.read_events("conf")]

    async def test_leases_lock_take_over_and_refuse_a_stale_commit(self, make_store):
        store = self._operations(make_store())
        mine = await store.acquire_lease("conf", "host:1:1:a", ttl=60)
        assert (await store.acquire_lease("conf", "host:1:1:a", ttl=60)).generation == mine.generation
        with pytest.raises(ArkError) as err:
            await store.acquire_lease("conf", "host:2:2:b", ttl=60)
        assert err.value.code == "session_locked" and "host:1:1:a" in err.value.message
        theirs = await store.acquire_lease("conf", "host:2:2:b", ttl=60, takeover=True)
        assert theirs.generation == mine.generation + 1
        with pytest.raises(ArkError) as err:
            await store.commit(Commit(session_id="conf", state=_state("conf", "stale"), lease=mine))
        assert err.value.code == "lease_lost"
        assert await store.load("conf") is None  # nothing of the stale commit was written
        with pytest.raises(ArkError) as err:
            await store.renew_lease(mine)
        assert err.value.code == "lease_lost"
        await store.release_lease(theirs)
        assert (await store.acquire_lease("conf", "host:3:3:c", ttl=60)).generation > theirs.generation


async def _aclose(runtime: Any) -> None:
    close = getattr(runtime, "aclose", None)
    if close is not None:
        await close()
