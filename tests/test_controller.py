"""AgentController: the zero-state control plane (seed 000 §6, checklist §14 "AgentController")."""

from __future__ import annotations

import arknb as ark
from arknb import AgentController, ApprovalDecision, ApprovalDecisionResult, ApprovalHost, EventTypes
from arknb.events import AgentEvent, EventBus

from tests.runtime._approval_kit import call, dangerous_turn, finish_background, make_runtime


class RecordingHost:
    """A minimal ApprovalHost: proves the controller needs nothing but the protocol."""

    def __init__(self, batch=None) -> None:
        self.batch = batch
        self.calls: list[tuple] = []

    def get_pending_approval_batch(self):
        return self.batch

    async def apply_approval_decision(self, approval_id, decision, deny_reason=None):
        self.calls.append((approval_id, decision, deny_reason))
        return ApprovalDecisionResult.success(approval_id, decision, all_decided=False)


def two_dangerous_calls():
    return ark.ScriptedTurn(tool_calls=[call("c1", "clear_cache", path="/a"), call("c2", "drop_table", 1, table="t")])


async def test_controller_holds_no_runtime_state():
    runtime, tools, _ = make_runtime([dangerous_turn(), "Done."])
    controller = runtime.controller
    before = dict(vars(controller))

    await runtime.run("go")
    [item] = controller.list_pending_approvals()
    await controller.approve(item.approval_id)
    await finish_background(runtime)

    # Only the bus and the host binding: no state, history, batch or run flags of its own,
    # and a full approval round trip did not add or change any of its attributes.
    assert set(vars(controller)) == {"bus", "_host"}
    assert vars(controller) == before
    assert controller.list_pending_approvals() == []  # read through the host, never cached


async def test_bind_approval_host_is_a_one_way_bridge():
    host = RecordingHost()
    controller = AgentController(EventBus())
    controller.bind_approval_host(host)

    await controller.approve("a1")
    await controller.deny("a2", "no")

    assert host.calls == [("a1", ApprovalDecision.APPROVED, None), ("a2", ApprovalDecision.DENIED, "no")]
    assert not any(v is controller for v in vars(host).values())  # the host never gets the controller
    assert isinstance(ark.AgentRuntime(ark.ScriptedModel([])), ApprovalHost)
    try:
        controller.bind_approval_host(object())
    except ark.ArkError as exc:
        assert exc.code == "invalid_argument"
    else:
        raise AssertionError("binding a non-host must be refused")


async def test_list_pending_approvals_returns_copies():
    runtime, _, _ = make_runtime([two_dangerous_calls(), "Done."])
    await runtime.run("go")
    batch = runtime.state.pending_approval
    listed = runtime.controller.list_pending_approvals()

    assert [i.approval_id for i in listed] == [i.approval_id for i in batch.items]
    assert all(copy is not original for copy, original in zip(listed, batch.items))
    # Force a change into the copies (they are frozen, so this takes effort): nothing moves.
    object.__setattr__(listed[0], "decision", ApprovalDecision.APPROVED)
    object.__setattr__(listed[1].tool_call, "name", "add")
    listed.clear()

    assert runtime.state.pending_approval == batch
    again = runtime.controller.list_pending_approvals()
    assert [i.decision for i in again] == ["pending", "pending"] and again[1].tool_call.name == "drop_table"


async def test_list_pending_approvals_lists_only_undecided_items():
    runtime, _, _ = make_runtime([two_dangerous_calls(), "Done."])
    await runtime.run("go")
    first, second = runtime.controller.list_pending_approvals()

    await runtime.controller.approve(first.approval_id)

    assert [i.approval_id for i in runtime.controller.list_pending_approvals()] == [second.approval_id]
    assert runtime.controller.pending_batch().find(first.approval_id).decision == "approved"


async def test_approve_is_idempotent():
    runtime, tools, log = make_runtime([two_dangerous_calls(), "Done."])
    await runtime.run("go")
    first, second = runtime.controller.list_pending_approvals()

    once = await runtime.controller.approve(first.approval_id)
    twice = await runtime.controller.approve(first.approval_id)  # a double click, a UI retry
    contrary = await runtime.controller.deny(first.approval_id, "changed my mind")

    assert once.ok and twice.ok and contrary.ok
    assert once.decision == twice.decision == contrary.decision == "approved"  # the first decision stands
    assert not twice.all_decided and runtime.current_run is None  # a repeat never unfreezes the batch
    assert len(log.of(EventTypes.APPROVAL_DECIDED)) == 1
    assert runtime.controller.pending_batch().find(first.approval_id).deny_reason is None

    await runtime.controller.approve(second.approval_id)
    await finish_background(runtime)
    assert sorted(tools.names()) == ["clear_cache", "drop_table"]  # each ran once
    assert len(log.of(EventTypes.AGENT_RESUMED)) == 1


async def test_deny_is_idempotent_before_the_batch_resolves():
    runtime, tools, _ = make_runtime([two_dangerous_calls(), "Done."])
    await runtime.run("go")
    first, second = runtime.controller.list_pending_approvals()

    a = await runtime.controller.deny(first.approval_id, "no")
    b = await runtime.controller.deny(first.approval_id, "no again")
    c = await runtime.controller.approve(first.approval_id)

    assert (a.decision, b.decision, c.decision) == ("denied", "denied", "denied")
    assert not (a.all_decided or b.all_decided or c.all_decided)
    assert runtime.controller.pending_batch().find(first.approval_id).deny_reason == "no"
    await runtime.controller.approve(second.approval_id)
    await finish_background(runtime)
    assert tools.ran == [("drop_table", "t")]


async def test_unbound_controller_returns_approval_host_missing_never_retryable():
    controller = AgentController()

    approved = await controller.approve("a1")
    denied = await controller.deny("a1", "no")

    for result in (approved, denied):
        assert not result.ok and result.decision == "error" and not result.all_decided
        assert result.error.code == "approval_host_missing"
        assert result.error.layer == "runtime" and result.error.retryability == "never"
        assert not result.error.to_error().retryable
    assert controller.list_pending_approvals() == []


async def test_all_decided_reflects_batch_state():
    runtime, _, _ = make_runtime([two_dangerous_calls(), "Done."])
    await runtime.run("go")
    first, second = runtime.controller.list_pending_approvals()

    r1 = await runtime.controller.approve(first.approval_id)
    assert not r1.all_decided and not runtime.state.pending_approval.all_decided()
    again = await runtime.controller.approve(first.approval_id)
    assert not again.all_decided
    r2 = await runtime.controller.deny(second.approval_id)
    assert r2.all_decided

    await finish_background(runtime)
    assert runtime.state.pending_approval is None


async def test_controller_subscribe_publish_and_unsubscribe():
    bus = EventBus()
    controller = AgentController(bus)
    one, every = [], []
    off_one = controller.subscribe(EventTypes.LOOP_DETECTED, one.append)
    off_all = controller.subscribe_all(every.append)
    event = AgentEvent("r:1", EventTypes.LOOP_DETECTED, "s", "r", 1, 0.0, {"x": 1})

    controller.publish(event)
    controller.publish(AgentEvent("r:2", EventTypes.TURN_COMPLETED, "s", "r", 2, 0.0, {}))
    off_one()
    off_all()
    controller.publish(event)

    assert one == [event] and [e.type for e in every] == [EventTypes.LOOP_DETECTED, EventTypes.TURN_COMPLETED]


async def test_runtime_controller_sees_runtime_events():
    runtime, _, _ = make_runtime([dangerous_turn(), "Done."])
    seen = []
    runtime.controller.subscribe(EventTypes.APPROVAL_REQUIRED, seen.append)

    await runtime.run("go")

    assert len(seen) == 1 and seen[0].session_id == runtime.session_id
