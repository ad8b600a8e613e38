"""InvocationBus (DESIGN §13, seed 004 §2): assembly, the pipeline, waiting races, recovery."""

from __future__ import annotations

import asyncio

import pytest

from arknb.domain import ArkError
from arknb.durable._waiters import WaitRegistry
from arknb.durable import (
    Commit, EventRequest, HookRecord, Interception, InvocationBus, MemoryStore, OperationPhase, OperationStatus,
)


class RecordingStore(MemoryStore):
    """A MemoryStore that remembers every commit and signals completed operations."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[Commit] = []
        self.completed = asyncio.Event()
        self.reached = {phase: asyncio.Event() for phase in OperationPhase}

    async def commit(self, commit: Commit) -> int | None:
        revision = await super().commit(commit)
        self.log.append(commit)
        for op in commit.operations:
            self.reached[op.phase].set()
        if any(op.completed for op in commit.operations):
            self.completed.set()
        return revision


def req(purpose: str, payload=None, event_type: str = "echo", version: int = 1) -> EventRequest:
    return EventRequest(event_type, version, payload if payload is not None else {"x": purpose}, purpose)


def echo_bus(store=None, **kwargs) -> tuple[InvocationBus, list]:
    calls: list = []

    async def echo(request: EventRequest):
        calls.append(request)
        return {"echo": request.payload}

    bus = InvocationBus(store if store is not None else RecordingStore(), session_id="s1", run_id="r1", **kwargs)
    bus.register_handler("echo", 1, echo)
    return bus, calls


# -- assembly -----------------------------------------------------------------------


def test_a_second_handler_for_the_same_type_and_version_fails_at_assembly():
    bus, _ = echo_bus()
    with pytest.raises(ArkError) as err:
        bus.register_handler("echo", 1, lambda r: None)
    assert err.value.code == "request_handler_duplicate"
    bus.register_handler("echo", 2, lambda r: None)  # another schema version is another key


def test_registering_after_freeze_is_refused():
    bus, _ = echo_bus()
    bus.freeze()
    with pytest.raises(ArkError) as err:
        bus.register_handler("other", 1, lambda r: None)
    assert err.value.code == "invalid_argument"


async def test_a_missing_handler_is_an_explicit_failed_response_not_a_hang():
    bus, _ = echo_bus()
    response = await asyncio.wait_for(bus.request(req("p1", event_type="nobody")), 5)
    assert response.status == "failed" and response.error.code == "request_handler_missing"


async def test_an_unsupported_schema_version_is_an_explicit_response():
    bus, calls = echo_bus()
    response = await asyncio.wait_for(bus.request(req("p1", version=7)), 5)
    assert response.status == "failed" and response.error.code == "schema_unsupported"
    assert "registered versions: 1" in response.error.message and calls == []


# -- the pipeline ----------------------------------------------------------------------


async def test_a_request_commits_a_completed_operation_with_raw_and_effective_result():
    store = RecordingStore()
    bus, calls = echo_bus(store)
    response = await bus.request(req("p1", {"a": 1}))
    assert response.ok and response.result == {"echo": {"a": 1}}
    [op] = await store.list_operations("s1")
    assert (op.phase, op.status, op.raw_result, op.effective_result) == (
        OperationPhase.COMPLETED, OperationStatus.SUCCEEDED, {"echo": {"a": 1}}, {"echo": {"a": 1}})
    assert op.purpose_key == "p1" and op.idempotency_key == "s1:p1" and response.operation_id == op.operation_id
    assert [a.complete for a in op.attempts] == [True]
    assert calls[0].idempotency_key == "s1:p1" and calls[0].operation_id == op.operation_id


async def test_a_known_purpose_key_returns_the_existing_operation_and_runs_nothing_again():
    store = RecordingStore()
    bus, calls = echo_bus(store)
    first = await bus.request(req("p1"))
    second = await bus.request(req("p1", {"different": True}))
    assert second.operation_id == first.operation_id and second.result == first.result
    assert len(calls) == 1
    # A new bus on the same store (a new process) finds it too.
    other, other_calls = echo_bus(store)
    assert (await other.request(req("p1"))).operation_id == first.operation_id and other_calls == []


async def test_a_raising_handler_makes_a_failed_response_carrying_its_error():
    bus = InvocationBus(RecordingStore(), session_id="s1")

    async def broken(request):
        raise ArkError("tool", "tool_failed", "the disk is on fire")

    bus.register_handler("broken", 1, broken)
    response = await bus.request(req("p1", event_type="broken"))
    assert response.status == "failed" and response.error.code == "tool_failed"
    assert "on fire" in response.error.message


class Rewriter:
    """An interceptor that rewrites requests and results, or denies, naming itself as the source."""

    def __init__(self, deny: bool = False) -> None:
        self.deny = deny
        self.before_calls = self.after_calls = 0

    async def before(self, request, operation):
        self.before_calls += 1
        record = HookRecord(slot="before", action="deny" if self.deny else "rewrite", hook="guard")
        if self.deny:
            return Interception(records=(record,), status="denied", result={"refused": True}, source="guard")
        return Interception(records=(record,), payload={"x": "rewritten"}, source="guard")

    async def after(self, request, result, operation):
        self.after_calls += 1
        return Interception(records=(HookRecord(slot="after", action="rewrite", hook="polish"),),
                            result={"polished": result}, source="polish")


async def test_hook_rewrites_keep_the_raw_values_and_name_the_hook_as_source():
    store = RecordingStore()
    bus, calls = echo_bus(store)
    bus.set_interceptor(Rewriter())
    response = await bus.request(req("p1", {"x": "raw"}))
    [op] = await store.list_operations("s1")
    assert op.raw_input == {"x": "raw"} and op.effective_input == {"x": "rewritten"} and op.input_source == "guard"
    assert op.raw_result == {"echo": {"x": "rewritten"}} and op.result_source == "polish"
    assert response.result == op.effective_result == {"polished": {"echo": {"x": "rewritten"}}}
    assert [(r.phase, r.hook) for r in op.hook_progress] == [("request", "guard"), ("response", "polish")]
    assert calls[0].payload == {"x": "rewritten"}
    # raw_saved was committed before the response phase, completed after it
    phases = [op.phase for commit in store.log for op in commit.operations]
    assert phases == [OperationPhase.EXECUTING, OperationPhase.RAW_SAVED, OperationPhase.COMPLETED]


async def test_a_deny_in_the_request_phase_never_runs_the_handler():
    store = RecordingStore()
    bus, calls = echo_bus(store)
    bus.set_interceptor(Rewriter(deny=True))
    response = await bus.request(req("p1"))
    assert response.status == "denied" and response.result == {"refused": True} and calls == []
    [op] = await store.list_operations("s1")
    assert op.attempts == () and op.result_source == "guard"


async def test_without_an_interceptor_raw_saved_and_completed_are_one_commit():
    store = RecordingStore()
    bus, _ = echo_bus(store)
    await bus.request(req("p1"))
    assert [[op.phase for op in c.operations] for c in store.log] == [[OperationPhase.EXECUTING],
                                                                      [OperationPhase.COMPLETED]]


# -- waiting ------------------------------------------------------------------------------


class Gate:
    """A handler that blocks until released, counting how many run at once."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.running = self.peak = self.calls = 0

    async def __call__(self, request):
        self.calls += 1
        self.running += 1
        self.peak = max(self.peak, self.running)
        self.started.set()
        try:
            await self.release.wait()
        finally:
            self.running -= 1
        return {"done": request.payload}


def gated_bus(store=None, **kwargs) -> tuple[InvocationBus, Gate]:
    gate = Gate()
    bus = InvocationBus(store if store is not None else RecordingStore(), session_id="s1", run_id="r1", **kwargs)
    bus.register_handler("slow", 1, gate)
    return bus, gate


async def test_a_result_committed_before_the_wait_is_returned_at_once():
    store = RecordingStore()
    bus, _ = echo_bus(store)
    ref = await bus.begin(req("p1"))
    await store.completed.wait()  # committed before anyone waits
    response = await asyncio.wait_for(bus.await_result(ref), 5)
    assert response.ok and (await bus.get_result(ref)) == response


async def test_a_lost_notification_is_covered_by_the_periodic_re_read():
    store = RecordingStore()
    bus, gate = gated_bus(store, recheck_interval=0.05)

    class Deaf(WaitRegistry):
        def signal(self, operation_id):  # every notification is lost
            pass

    bus._waiters = Deaf()
    ref = await bus.begin(req("p1", event_type="slow"))
    waiting = asyncio.ensure_future(bus.await_result(ref))
    await gate.started.wait()
    gate.release.set()
    response = await asyncio.wait_for(waiting, 5)
    assert response.ok


async def test_many_waiters_get_the_same_result_of_one_execution():
    bus, gate = gated_bus()
    ref = await bus.begin(req("p1", event_type="slow"))
    waiters = [asyncio.ensure_future(bus.await_result(ref)) for _ in range(5)]
    await gate.started.wait()
    gate.release.set()
    responses = await asyncio.wait_for(asyncio.gather(*waiters), 5)
    assert len({r.model_dump_json() for r in responses}) == 1 and gate.calls == 1


async def test_a_cancelled_waiter_does_not_cancel_the_operation():
    store = RecordingStore()
    bus, gate = gated_bus(store)
    ref = await bus.begin(req("p1", event_type="slow"))
    doomed = asyncio.ensure_future(bus.await_result(ref))
    other = asyncio.ensure_future(bus.await_result(ref))
    await gate.started.wait()
    doomed.cancel()
    with pytest.raises(asyncio.CancelledError):
        await doomed
    assert bus._waiters.count(ref.operation_id) == 1  # only the cancelled waiter left
    gate.release.set()
    assert (await asyncio.wait_for(other, 5)).ok
    op = await store.get_operation(ref.operation_id)
    assert op.status is OperationStatus.SUCCEEDED


async def test_an_operation_awaiting_its_own_result_fails_with_reentrant_operation_wait():
    bus = InvocationBus(RecordingStore(), session_id="s1")
    refs = {}

    async def selfish(request):
        return await bus.await_result(refs["me"])

    bus.register_handler("selfish", 1, selfish)
    bus.freeze()
    started = asyncio.Event()
    original = bus._spawn

    def spawn(operation, previous, gate=None):  # learn the ref before the handler runs
        refs["me"] = type("Ref", (), {"operation_id": operation.operation_id, "purpose_key": "p1"})()
        started.set()
        return original(operation, previous, gate)

    bus._spawn = spawn
    response = await asyncio.wait_for(bus.request(req("p1", event_type="selfish")), 5)
    assert response.status == "failed" and response.error.code == "reentrant_operation_wait"


async def test_close_makes_pending_waits_raise_bus_closed_and_leaves_the_operation_as_committed():
    store = RecordingStore()
    bus, gate = gated_bus(store)
    ref = await bus.begin(req("p1", event_type="slow"))
    waiting = asyncio.ensure_future(bus.await_result(ref))
    await gate.started.wait()
    await bus.close()
    with pytest.raises(ArkError) as err:
        await waiting
    assert err.value.code == "bus_closed" and err.value.layer == "runtime"
    op = await store.get_operation(ref.operation_id)
    assert op.phase is OperationPhase.EXECUTING and op.status is None  # never written back as a result
    with pytest.raises(ArkError) as err:
        await bus.begin(req("p2", event_type="slow"))
    assert err.value.code == "bus_closed"


# -- request_many -----------------------------------------------------------------------------


async def test_request_many_commits_every_executing_record_in_one_transaction_before_any_handler_runs():
    store = RecordingStore()
    bus = InvocationBus(store, session_id="s1")
    commits_seen_by_handlers: list[int] = []
    release = asyncio.Event()
    order: list[str] = []

    async def handler(request):
        commits_seen_by_handlers.append(len(store.log))
        await release.wait() if request.payload["n"] == 0 else None
        order.append(request.payload["n"])
        if request.payload["n"] == 2:
            release.set()
        return request.payload["n"] * 10

    bus.register_handler("job", 1, handler)
    responses = await asyncio.wait_for(bus.request_many(
        [EventRequest("job", 1, {"n": n}, f"p{n}") for n in range(3)]), 5)
    assert [r.result for r in responses] == [0, 10, 20]  # request order, not completion order
    assert order[0] != 0  # the first request finished last
    first = store.log[0]
    assert len(first.operations) == 3 and {op.phase for op in first.operations} == {OperationPhase.EXECUTING}
    assert min(commits_seen_by_handlers) >= 1  # every handler ran after the executing commit


async def test_request_many_respects_its_concurrency_limit():
    bus, gate = gated_bus()

    async def release_soon():
        await gate.started.wait()
        gate.release.set()

    releaser = asyncio.ensure_future(release_soon())
    responses = await asyncio.wait_for(bus.request_many(
        [req(f"p{n}", {"n": n}, event_type="slow") for n in range(6)], concurrency=2), 5)
    await releaser
    assert gate.peak <= 2 and [r.result for r in responses] == [{"done": {"n": n}} for n in range(6)]


# -- recovery (a new bus on the store a previous one left) ----------------------------------------


async def _left_executing(store, idempotent: bool = False):
    """A bus that dies (closes) while its handler runs: the operation stays executing."""
    bus, gate = gated_bus(store)
    ref = await bus.begin(req("p1", event_type="slow"))
    await gate.started.wait()
    await bus.close()
    return ref


def recovering_bus(store, idempotent: bool):
    calls = []

    async def handler(request):
        calls.append(request)
        return {"again": request.payload}

    bus = InvocationBus(store, session_id="s1", run_id="r2")
    bus.register_handler("slow", 1, handler, idempotent=idempotent)
    return bus, calls


async def test_an_interrupted_non_idempotent_call_becomes_in_doubt_and_is_not_run_again():
    store = RecordingStore()
    await _left_executing(store)
    bus, calls = recovering_bus(store, idempotent=False)
    response = await asyncio.wait_for(bus.request(req("p1", event_type="slow")), 5)
    assert response.status == "indeterminate" and calls == []
    [op] = await store.list_operations("s1")
    assert op.in_doubt and op.phase is OperationPhase.EXECUTING


async def test_an_interrupted_idempotent_call_runs_again_with_the_same_idempotency_key():
    store = RecordingStore()
    await _left_executing(store)
    bus, calls = recovering_bus(store, idempotent=True)
    response = await asyncio.wait_for(bus.request(req("p1", event_type="slow")), 5)
    assert response.ok and len(calls) == 1 and calls[0].idempotency_key == "s1:p1"
    [op] = await store.list_operations("s1")
    assert [(a.number, a.complete, a.outcome) for a in op.attempts] == [(1, False, "interrupted"), (2, True, "ok")]


async def test_a_saved_raw_result_only_goes_through_the_response_phase():
    store = RecordingStore()
    first = InvocationBus(store, session_id="s1")
    stop = asyncio.Event()

    class StuckAfter:
        async def before(self, request, operation):
            return Interception()

        async def after(self, request, result, operation):
            await stop.wait()  # the process dies in the response hook
            return Interception()

    async def handler(request):
        return "raw"

    first.register_handler("slow", 1, handler)
    first.set_interceptor(StuckAfter())
    ref = await first.begin(req("p1", event_type="slow"))
    await store.reached[OperationPhase.RAW_SAVED].wait()  # the pipeline is in the response hook
    await first.close()
    bus, calls = recovering_bus(store, idempotent=True)
    rewriter = Rewriter()
    bus.set_interceptor(rewriter)
    response = await asyncio.wait_for(bus.request(req("p1", event_type="slow")), 5)
    assert calls == [] and rewriter.before_calls == 0 and rewriter.after_calls == 1
    assert response.result == {"polished": "raw"}


async def test_a_person_settles_or_reruns_an_in_doubt_operation():
    store = RecordingStore()
    ref = await _left_executing(store)
    bus, calls = recovering_bus(store, idempotent=False)
    assert (await bus.request(req("p1", event_type="slow"))).status == "indeterminate"
    settled = await bus.settle(ref.operation_id, status="succeeded", result="it ran")
    assert settled.ok and settled.result == "it ran"
    op = await store.get_operation(ref.operation_id)
    assert op.completed and op.result_source == "person" and calls == []
    with pytest.raises(ArkError) as err:
        await bus.settle(ref.operation_id, status="failed")
    assert err.value.code == "operation_not_in_doubt"
    with pytest.raises(ArkError) as err:
        await bus.rerun("op_unknown")
    assert err.value.code == "operation_not_found"

    store2 = RecordingStore()
    ref2 = await _left_executing(store2)
    bus2, calls2 = recovering_bus(store2, idempotent=False)
    assert (await bus2.request(req("p1", event_type="slow"))).status == "indeterminate"
    rerun = await bus2.await_result(await bus2.rerun(ref2.operation_id))
    assert rerun.ok and len(calls2) == 1 and calls2[0].idempotency_key == "s1:p1"
    op2 = await store2.get_operation(ref2.operation_id)
    assert [(a.complete, a.outcome) for a in op2.attempts] == [(False, "rerun approved"), (True, "ok")]


def test_an_operations_fast_copy_equals_pydantics():
    from arknb.durable import Attempt, Operation

    op = Operation(operation_id="op_1", session_id="s", run_id="r", kind="k", purpose_key="p", request_event_id="q")
    changes = {"phase": OperationPhase.EXECUTING, "updated_at": 2.0, "attempts": (Attempt(number=1, started_at=2.0),)}
    fast, slow = op.copy_with(changes), op.model_copy(update=changes)
    assert fast == slow and fast.model_fields_set == slow.model_fields_set and fast.to_json() == slow.to_json()
    assert op.phase is OperationPhase.PREPARED  # the original is untouched
