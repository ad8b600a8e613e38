"""Sub-agents (DESIGN §14): delegate_task, child sessions, events with parent ids, approvals
decided at the parent (also nested and in parallel), cancellation, clone."""

from __future__ import annotations

import asyncio

import pytest

import arknb as ark
from arknb import EventTypes, ScriptedModel, ScriptedTurn

from ._subagent_kit import call, cleaner, delegate, effect_tools, effects, uploader


def reporter(storage, answers: list[str], seen_hooks: list | None = None) -> ark.SubAgent:
    model = ScriptedModel(answers)

    def build(session_id: str) -> ark.AgentRuntime:
        child = ark.AgentRuntime(model, storage=storage, session_id=session_id)
        if seen_hooks is not None:
            @child.hooks.before_run
            def note(ctx):  # the child's own hooks
                seen_hooks.append(ctx.session_id)
        return child

    return ark.SubAgent("reporter", "Writes short reports.", build)


async def test_delegate_task_answers_with_the_childs_final_text_in_its_own_session() -> None:
    storage = ark.MemoryStateStorage()
    hooks: list[str] = []
    model = ScriptedModel([delegate("d1", "reporter", "Report on A."), delegate("d2", "reporter", "Report on B."),
                           "Both reports are in."])
    parent = ark.AgentRuntime(model, storage=storage, session_id="lead",
                              subagents=[reporter(storage, ["A is fine.", "B is late."], hooks)])
    events: list[ark.AgentEvent] = []
    parent.bus.subscribe(EventTypes.ANY, events.append)
    result = await parent.run("Report on A and B.")

    assert result.stop_reason == "completed" and result.text == "Both reports are in."
    answers = [m for m in parent.state.history if m.role == "tool"]
    assert [(m.tool_call_id, m.text) for m in answers] == [("d1", "A is fine."), ("d2", "B is late.")]
    assert hooks == ["lead.reporter.1", "lead.reporter.2"]
    assert (await storage.load("lead.reporter.1")).history[0].text == "Report on A."
    child_events = [e for e in events if e.session_id.startswith("lead.reporter.")]
    assert {(e.session_id, e.parent_call_id) for e in child_events} == {("lead.reporter.1", "d1"),
                                                                        ("lead.reporter.2", "d2")}
    assert {e.parent_run_id for e in child_events} == {result.run_id}
    assert all(e.parent_run_id is None for e in events if e.session_id == "lead")
    # Each child's events arrive between the parent's tool.before and tool.after of its call.
    types = [(e.type, e.session_id) for e in events]
    first = types.index(("agent.started", "lead.reporter.1"))
    assert types.index(("tool.before", "lead")) < first < types.index(("tool.after", "lead"))
    assert child_events[0].to_dict()["parent_call_id"] == "d1"
    assert ark.AgentEvent.from_dict(child_events[0].to_dict()) == child_events[0]


async def test_a_childs_approval_is_listed_at_the_parent_and_deciding_it_there_resumes_both(tmp_path) -> None:
    storage = ark.MemoryStateStorage()
    model = ScriptedModel([delegate("d1", "cleaner", "Clear /tmp/cache."), "Done."])
    parent = ark.AgentRuntime(model, storage=storage, session_id="p", subagents=[cleaner(tmp_path, storage)])
    paused = await parent.run("Free space.")
    assert paused.stop_reason == "awaiting_approval"
    batch = parent.state.pending_approval
    assert batch.kind == "subagent" and [i.tool_call.id for i in batch.items] == ["d1"]
    [item] = parent.controller.list_pending_approvals()
    assert item.approval_id.startswith("cleaner/approval_") and item.tool_call.name == "clear_cache"
    assert item.risk_level == "dangerous"
    with pytest.raises(ark.ArkError) as info:
        parent.start("something else")
    assert info.value.code == "pending_approval_blocks_input"
    assert effects(tmp_path) == []

    decided = await parent.controller.approve(item.approval_id)
    assert decided.ok and decided.all_decided
    result = await parent.current_run.wait()
    assert result.stop_reason == "completed" and result.text == "Done."
    assert effects(tmp_path) == ["cleared /tmp/cache"]
    assert parent.state.history[-2].text == "The cache at /tmp/cache is cleared."
    again = await parent.controller.approve(item.approval_id)
    assert not again.ok  # its batch is resolved: nothing runs twice
    assert effects(tmp_path) == ["cleared /tmp/cache"]


async def test_a_child_approval_denied_at_the_parent_reaches_the_child_as_a_denial(tmp_path) -> None:
    storage = ark.MemoryStateStorage()
    child_turns = [ScriptedTurn(tool_calls=[call("k1", "clear_cache", path="/data")]), "I was not allowed to."]
    model = ScriptedModel([delegate("d1", "cleaner", "Clear /data."), "The cleaner was refused."])
    parent = ark.AgentRuntime(model, storage=storage, session_id="p",
                              subagents=[cleaner(tmp_path, storage, child_turns)])
    await parent.run("Free space.")
    [item] = parent.controller.list_pending_approvals()
    decided = await parent.controller.deny(item.approval_id, "not /data")
    assert decided.ok and decided.all_decided
    result = await parent.current_run.wait()
    assert result.text == "The cleaner was refused." and effects(tmp_path) == []
    child = await storage.load("p.cleaner.1")
    denial = next(m for m in child.history if m.role == "tool")
    assert "tool_denied" in denial.text and "not /data" in denial.text
    assert parent.state.history[-2].text == "I was not allowed to."


async def test_a_grandchilds_approval_nests_its_id_and_is_decided_at_the_top(tmp_path) -> None:
    storage = ark.MemoryStateStorage()
    middle_model = ScriptedModel([delegate("m1", "cleaner", "Clear /tmp/cache."), "Cleaner reports success."])
    middle = ark.SubAgent("manager", "Manages cleaners.", lambda sid: ark.AgentRuntime(
        middle_model, storage=storage, session_id=sid, subagents=[cleaner(tmp_path, storage)]))
    top = ark.AgentRuntime(ScriptedModel([delegate("t1", "manager", "Get the cache cleared."), "All done."]),
                           storage=storage, session_id="top", subagents=[middle])
    seen: list[ark.AgentEvent] = []
    top.bus.subscribe(EventTypes.ANY, seen.append)
    assert (await top.run("Clean up.")).stop_reason == "awaiting_approval"
    [item] = top.controller.list_pending_approvals()
    assert item.approval_id.startswith("manager/cleaner/approval_")
    decided = await top.controller.approve(item.approval_id)
    assert decided.ok and decided.all_decided
    result = await top.current_run.wait()
    assert result.text == "All done." and effects(tmp_path) == ["cleared /tmp/cache"]
    assert top.state.history[-2].text == "Cleaner reports success."
    grandchild = [e for e in seen if e.session_id == "top.manager.1.cleaner.1"]
    manager_run = next(e.run_id for e in seen if e.session_id == "top.manager.1")
    # A grandchild's events keep their own parent (the manager's run and call), for nesting.
    assert grandchild and {(e.parent_run_id, e.parent_call_id) for e in grandchild} <= {
        (r, "m1") for r in {e.run_id for e in seen if e.session_id == "top.manager.1"}}
    assert manager_run


async def test_two_parallel_delegations_wait_for_all_their_approvals(tmp_path) -> None:
    storage = ark.MemoryStateStorage()
    turns = ScriptedTurn(tool_calls=[call("d1", "delegate_task", 0, agent="cleaner", task="Clear /a."),
                                     call("d2", "delegate_task", 1, agent="cleaner", task="Clear /b.")])
    child_model_turns = [ScriptedTurn(tool_calls=[call("k1", "clear_cache", path="/a")]),
                         ScriptedTurn(tool_calls=[call("k1", "clear_cache", path="/b")]), "a done", "b done"]
    model = ScriptedModel([turns, "Both cleared."])
    parent = ark.AgentRuntime(model, storage=storage, session_id="p",
                              subagents=[cleaner(tmp_path, storage, child_model_turns)])
    assert (await parent.run("Clear both.")).stop_reason == "awaiting_approval"
    items = parent.controller.list_pending_approvals()
    assert len(items) == 2 and all(i.approval_id.startswith("cleaner/") for i in items)
    first = await parent.controller.approve(items[0].approval_id)
    assert first.ok and not first.all_decided and parent.current_run is None
    second = await parent.controller.approve(items[1].approval_id)
    assert second.ok and second.all_decided
    result = await parent.current_run.wait()
    assert result.text == "Both cleared."
    assert sorted(effects(tmp_path)) == ["cleared /a", "cleared /b"]
    answers = {m.tool_call_id: m.text for m in parent.state.history if m.role == "tool"}
    assert set(answers) == {"d1", "d2"} and set(answers.values()) == {"a done", "b done"}


async def test_a_sibling_call_that_finished_before_the_pause_is_not_run_again(tmp_path) -> None:
    storage = ark.MemoryStateStorage()
    both = ScriptedTurn(tool_calls=[call("d1", "delegate_task", 0, agent="cleaner", task="Clear /tmp/cache."),
                                    call("c2", "count_files", 1, path="/tmp")])
    parent = ark.AgentRuntime(ScriptedModel([both, "Done."]), tools=effect_tools(tmp_path)[1:], storage=storage,
                              session_id="p", subagents=[cleaner(tmp_path, storage)])
    after_tool: list[str] = []
    parent.hooks.after_tool_call(lambda ctx: after_tool.append(ctx.call.id))
    assert (await parent.run("Go.")).stop_reason == "awaiting_approval"
    assert parent.state.pending_approval.finished_calls[0].call.id == "c2"
    # after_tool_call runs once per call: for the finished one as it was answered (the run
    # where it ran, so a durable store records it with its operation), for the delegation
    # when it runs again and answers with the child's text.
    assert after_tool == ["c2"]
    await parent.controller.approve(parent.controller.list_pending_approvals()[0].approval_id)
    await parent.current_run.wait()
    assert (tmp_path / "counted.log").read_text().splitlines() == ["counted /tmp"]
    assert after_tool == ["c2", "d1"]
    answers = [m.tool_call_id for m in parent.state.history if m.role == "tool"]
    assert answers == ["d1", "c2"]


async def test_cancelling_the_parent_cancels_a_running_child() -> None:
    started = asyncio.Event()

    @ark.tool
    async def wait_forever() -> str:
        """Wait."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    storage = ark.MemoryStateStorage()
    child_model = ScriptedModel([ScriptedTurn(tool_calls=[call("w1", "wait_forever")])])
    children: list[ark.AgentRuntime] = []

    def build(sid):
        children.append(ark.AgentRuntime(child_model, tools=[wait_forever], storage=storage, session_id=sid))
        return children[-1]

    parent = ark.AgentRuntime(ScriptedModel([delegate("d1", "waiter", "Wait.")]), storage=storage,
                              session_id="p", subagents=[ark.SubAgent("waiter", "Waits.", build)])
    handle = parent.start("Wait for me.")
    await asyncio.wait_for(started.wait(), 30)
    parent.cancel()
    result = await handle.wait()
    assert result.stop_reason == "cancelled"
    assert children[0].last_result.stop_reason == "cancelled"
    assert not (await storage.load("p.waiter.1")).is_running


async def test_cancelling_a_parent_paused_for_a_childs_approval_cancels_the_child(tmp_path) -> None:
    storage = ark.MemoryStateStorage()
    parent = ark.AgentRuntime(ScriptedModel([delegate("d1", "cleaner", "Clear /tmp/cache.")]), storage=storage,
                              session_id="p", subagents=[cleaner(tmp_path, storage)])
    await parent.run("Free space.")
    assert parent.cancel()
    result = await parent.current_run.wait()
    assert result.stop_reason == "cancelled"
    child = await storage.load("p.cleaner.1")
    assert child.pending_approval is None and child.last_stop_reason == "cancelled"
    assert parent.controller.list_pending_approvals() == [] and effects(tmp_path) == []


async def test_clone_inherits_the_parents_model_tools_and_hooks(tmp_path) -> None:
    # One scripted model serves both: the clone asks the parent's own model.
    model = ScriptedModel([delegate("d1", "helper", "Count the files in /tmp."),
                           ScriptedTurn(tool_calls=[call("h1", "count_files", path="/tmp")]),
                           "There are 3 files.", "The helper says 3."])
    seen: list[tuple[str, str]] = []
    parent = ark.AgentRuntime(model, tools=effect_tools(tmp_path), storage=ark.MemoryStateStorage(),
                              session_id="p", system_prompt="You are careful.",
                              subagents=[ark.SubAgent.clone("helper", "Does side tasks.", exclude_tools=["clear_cache"])])
    parent.hooks.before_tool_call(lambda ctx: seen.append((ctx.session_id, ctx.call.name)))
    result = await parent.run("How many files are in /tmp?")
    assert result.text == "The helper says 3."
    assert seen == [("p", "delegate_task"), ("p.helper.1", "count_files")]  # the parent's hook, in the child
    child_request = model.requests[1]
    assert child_request.messages[0].text == "You are careful."
    assert [t.name for t in child_request.tools] == ["count_files"]  # no delegate_task, no excluded tool


async def test_an_unknown_agent_is_answered_with_subagent_not_found() -> None:
    model = ScriptedModel([delegate("d1", "nobody", "Hi."), "Sorry."])
    parent = ark.AgentRuntime(model, subagents=[reporter(ark.MemoryStateStorage(), ["x"])])
    await parent.run("Go.")
    answer = parent.state.history[2]
    assert answer.role == "tool" and "subagent_not_found" in answer.text and "reporter" in answer.text
    definition = next(t for t in model.requests[0].tools if t.name == "delegate_task")
    assert definition.parameters["properties"]["agent"]["enum"] == ["reporter"]
    assert "Writes short reports." in definition.description


def test_bad_sub_agents_are_refused() -> None:
    with pytest.raises(ark.ArkError, match="name"):
        ark.SubAgent("a/b", "x", lambda sid: None)
    with pytest.raises(ark.ArkError, match="description"):
        ark.SubAgent("a", " ", lambda sid: None)
    with pytest.raises(ark.ArkError, match="callable"):
        ark.SubAgent("a", "x", "factory")
    agent = ark.SubAgent("a", "x", lambda sid: None)
    with pytest.raises(ark.ArkError, match="unique"):
        ark.AgentRuntime(ScriptedModel(["x"]), subagents=[agent, agent])


async def test_a_factory_that_builds_the_wrong_session_is_reported_to_the_model() -> None:
    agent = ark.SubAgent("a", "x", lambda sid: ark.AgentRuntime(ScriptedModel(["x"]), session_id="other"))
    parent = ark.AgentRuntime(ScriptedModel([delegate("d1", "a", "Hi."), "ok"]), subagents=[agent])
    await parent.run("Go.")
    assert "session_id=session_id" in parent.state.history[2].text


def test_a_clone_starts_with_a_copy_of_the_parents_hooks_in_their_order() -> None:
    class Both(ark.AgentHook):
        name = "both"

        async def before_run(self, ctx):
            return None

        async def after_run(self, ctx):
            return None

    hooks = ark.HookRegistry()
    hooks.add(Both())
    hooks.register("before_tool_call", lambda ctx: None, name="first", order=-1)
    hooks.register("before_tool_call", lambda ctx: None, name="second")
    twin = hooks.copy()
    assert twin.names() == hooks.names()
    assert [e.name for e in twin.for_slot(ark.HookSlot.BEFORE_RUN)] == ["both"]
    assert [e.name for e in twin.for_slot(ark.HookSlot.BEFORE_TOOL_CALL)] == ["first", "second"]
    twin.remove("second")
    assert "second" in hooks.names()  # the copy is its own registry


async def test_a_delegation_whose_record_cannot_be_saved_does_not_start_the_child(tmp_path) -> None:
    from ..runtime._approval_kit import FaultyStorage

    # The parent's session only: a child's state never carries the parent's sub-agent slice.
    storage = FaultyStorage(fail_if=lambda s: s.session_id == "boss" and "subagents" in s.extensions)
    parent = ark.AgentRuntime(ScriptedModel([delegate("d1", "uploader", "Upload report.pdf."), "I could not."]),
                              storage=storage, session_id="boss",
                              subagents=[uploader(tmp_path, storage, [ScriptedTurn(tool_calls=[
                                  call("u1", "upload", filename="report.pdf")])])])
    result = await parent.run("Upload the report.")
    answer = next(m for m in parent.state.history if m.role == "tool")
    assert answer.is_error and "was not started: its delegation could not be saved" in answer.text
    assert effects(tmp_path, "uploads.log") == []  # the child never ran
    assert await storage.load("boss.uploader.1") is None
    assert result.text == "I could not."
