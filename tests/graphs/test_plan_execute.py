"""ark.PlanAndExecute (DESIGN §16, issue 23 item 5): the planner plans with write_todos,
each todo goes to an executor in a private session, up to max_parallel at once, the
results come back as the planner's tool result, the planner re-plans until it answers;
review=True puts the plan in front of a person; an executor's approval reaches the
graph run's controller."""

from __future__ import annotations

import asyncio
import json

import pytest

import arknb as ark


def call(cid: str, name: str, **arguments) -> ark.ToolCall:
    return ark.ToolCall(id=cid, name=name, arguments_json=json.dumps(arguments))


def todos(cid: str, *items: tuple[str, str]) -> ark.ToolCall:
    return call(cid, "write_todos", todos=[{"content": c, "status": s} for c, s in items])


class Planner:
    """A planner factory with a scripted model, keeping what it built."""

    def __init__(self, turns, mode=ark.PlanMode.AUTO, storage=None) -> None:
        self.model = ark.ScriptedModel(turns)
        self.mode = mode
        self.storage = storage
        self.runtimes: list[ark.AgentRuntime] = []

    def __call__(self, session_id: str) -> ark.AgentRuntime:
        runtime = ark.AgentRuntime(self.model, session_id=session_id, plan_mode=self.mode, storage=self.storage)
        self.runtimes.append(runtime)
        return runtime


class Executors:
    """An executor factory: each executor answers its task in upper case via a tool that
    counts how many run at once."""

    def __init__(self, *, dangerous: bool = False, storage=None) -> None:
        self.storage = storage
        self.ran: list[str] = []
        self.in_flight = 0
        self.peak = 0
        self.requests: list[ark.ModelRequest] = []
        self.sessions: list[str] = []
        self.release = asyncio.Event()
        self.release.set()
        self.dangerous = dangerous

    def __call__(self, session_id: str) -> ark.AgentRuntime:
        self.sessions.append(session_id)
        owner = self

        @ark.tool(risk="dangerous" if self.dangerous else "safe")
        async def work(task: str) -> str:
            """Do the work."""
            owner.ran.append(task)
            owner.in_flight += 1
            owner.peak = max(owner.peak, owner.in_flight)
            await asyncio.sleep(0.02)   # simulated work, so executors overlap
            owner.in_flight -= 1
            return task.upper()

        class Echo:  # a model that calls work(task) on its first turn and answers with the result
            async def stream(self, request, *, cancel=None):
                owner.requests.append(request)
                last = request.messages[-1]
                if last.role == "tool":
                    turn = ark.ScriptedTurn(text=f"done: {last.text}")
                else:
                    task = last.text.split("\n")[0]
                    turn = ark.ScriptedTurn(tool_calls=[call("w1", "work", task=task)])
                async for event in ark.ScriptedModel([turn]).stream(request, cancel=cancel):
                    yield event

            async def generate(self, request):
                raise NotImplementedError

        return ark.AgentRuntime(Echo(), tools=[work], session_id=session_id, storage=self.storage)


async def test_the_planner_plans_executors_carry_out_its_todos_and_it_replans_until_it_answers() -> None:
    planner = Planner([
        ark.ScriptedTurn(tool_calls=[todos("t1", ("tides in Brest", "pending"), ("tides in Dover", "pending"),
                                           ("tides in Oslo", "pending"))]),
        ark.ScriptedTurn(tool_calls=[call("r1", "run_todos", context="Use metres.")]),
        ark.ScriptedTurn(tool_calls=[todos("t2", ("tides in Brest", "completed"), ("tides in Dover", "completed"),
                                           ("tides in Oslo", "completed"), ("compare them", "pending"))]),
        ark.ScriptedTurn(tool_calls=[call("r2", "run_todos")]),
        "Brest has the largest tides.",
    ])
    executors = Executors()
    pe = ark.PlanAndExecute(planner=planner, executors={"researcher": executors}, max_parallel=2)
    run = await pe.run("Compare the tides", run_id="pe1")
    assert run.status == "completed", run.error
    assert run.state.answer == "Brest has the largest tides."
    assert executors.peak == 2                           # three todos, two at once
    assert len(executors.sessions) == 4 and len(set(executors.sessions)) == 4
    assert executors.sessions[0] == "graph.pe1.planner.1.researcher.r1.1"
    # private context: an executor sees its todo and what the planner passed, nothing of the planner's history
    first = executors.requests[0]
    texts = [m.text for m in first.messages if m.role != "system"]
    assert texts[0].startswith("tides in ") and "Use metres." in texts[0]
    assert not any("Compare the tides" in t for t in texts)
    scope = [c for c in first.context_changes if c.source == "executor_scope"]
    assert [(c.kind, c.range) for c in scope] == [("scope", (0, 1))]   # what the model saw: a private scope
    # results came back to the planner as the tool result of run_todos, in plan order
    tool_results = [m for m in planner.runtimes[0].state.history if m.role == "tool" and m.tool_call_id == "r1"]
    (result,) = tool_results
    assert result.text.index("tides in Brest") < result.text.index("tides in Dover") < result.text.index("tides in Oslo")
    assert "done: TIDES IN BREST" in result.text


async def test_review_puts_the_first_plan_in_front_of_a_person() -> None:
    planner = Planner([
        ark.ScriptedTurn(tool_calls=[todos("t1", ("one thing", "pending"))]),
        ark.ScriptedTurn(tool_calls=[call("r1", "run_todos")]),
        "All done.",
    ], mode=ark.PlanMode.REVIEW)
    executors = Executors()
    pe = ark.PlanAndExecute(planner=planner, executors={"doer": executors}, review=True, name="pe_review")
    run = await pe.run("Do one thing")
    assert run.status == "awaiting_human"
    (item,) = run.controller.list_pending()
    assert item.kind == "plan" and item.node == "planner" and item.item_id.startswith("planner/")
    assert executors.sessions == []                      # nothing ran before the plan was approved
    await run.controller.approve(item.item_id)
    await run.wait()
    assert run.status == "completed" and run.state.answer == "All done."
    assert len(executors.sessions) == 1


async def test_executors_approvals_reach_the_graph_runs_controller_one_by_one() -> None:
    planner = Planner([
        ark.ScriptedTurn(tool_calls=[todos("t1", ("delete the cache", "pending"), ("drop the table", "pending"))]),
        ark.ScriptedTurn(tool_calls=[call("r1", "run_todos")]),
        "Cache deleted, table kept.",
    ])
    executors = Executors(dangerous=True)
    pe = ark.PlanAndExecute(planner=planner, executors={"doer": executors}, name="pe_approval")
    run = await pe.run("Clean up")
    assert run.status == "awaiting_human"
    first, second = run.controller.list_pending()
    for n, item in enumerate((first, second), 1):   # each executor's own call, as sub-agents' approvals are
        assert item.node == "planner" and item.detail["tool"] == "work" and item.kind == "tool"
        assert item.item_id.startswith("planner/") and item.item_id.endswith(item.detail["approval_id"])
        assert item.question.startswith(f"executor {n}")
    assert executors.peak == 0                            # no dangerous call ran yet
    await run.controller.approve(first.item_id)
    assert [i.item_id for i in run.controller.list_pending()] == [second.item_id]
    await run.controller.deny(second.item_id, "keep the table")
    await run.wait()
    assert run.status == "completed", run.error
    assert run.state.answer == "Cache deleted, table kept." and executors.peak == 1
    (result,) = [m for m in planner.runtimes[0].state.history if m.role == "tool" and m.tool_call_id == "r1"]
    assert "done: DELETE THE CACHE" in result.text and "keep the table" in result.text


def test_a_planner_without_plan_mode_is_refused_clearly() -> None:
    pe = ark.PlanAndExecute(planner=lambda sid: ark.AgentRuntime(ark.ScriptedModel(["x"]), session_id=sid),
                            executors={"doer": Executors()}, name="pe_bad")

    async def go():
        return await pe.run("x")
    run = asyncio.run(go())
    assert run.status == "failed" and "plan_mode=ark.PlanMode.AUTO" in run.error.message
    with pytest.raises(ark.ArkError):
        ark.PlanAndExecute(planner=lambda sid: None, executors={}, name="pe_empty")


async def _settled(planner: ark.AgentRuntime, run: ark.GraphRun) -> None:
    """The planner's run continued by a decision at its own controller, then the graph's."""
    handle = planner.current_run
    if handle is not None:
        await handle.wait()
    await run.wait()


_TURNS = [
    ark.ScriptedTurn(tool_calls=[todos("t1", ("delete the cache", "pending"), ("drop the table", "pending"))]),
    ark.ScriptedTurn(tool_calls=[call("r1", "run_todos")]),
    "Cache deleted, table kept.",
]


def _two_dangerous_todos() -> Planner:
    return Planner(list(_TURNS))


async def test_executors_approvals_are_decided_at_the_planner_runtimes_own_controller() -> None:
    planner = _two_dangerous_todos()
    executors = Executors(dangerous=True)
    pe = ark.PlanAndExecute(planner=planner, executors={"doer": executors}, name="pe_planner_ctl")
    run = await pe.run("Clean up")
    assert run.status == "awaiting_human"
    controller = planner.runtimes[0].controller
    first, second = controller.list_pending_approvals()    # the executors' own calls, as a sub-agent's are
    assert [i.approval_id.split("/")[0] for i in (first, second)] == ["doer.1", "doer.2"]
    assert first.tool_call.name == "work" and first.reason.startswith("executor 1")
    assert executors.peak == 0                             # nothing dangerous ran yet
    assert (await controller.approve(first.approval_id)).ok
    assert [i.approval_id for i in controller.list_pending_approvals()] == [second.approval_id]
    assert (await controller.deny(second.approval_id, "keep the table")).ok
    await asyncio.wait_for(_settled(planner.runtimes[0], run), 10)
    assert run.status == "completed", (run.status, run.error, run.controller.list_pending())
    assert run.state.answer == "Cache deleted, table kept."
    assert executors.peak == 1 and run.controller.list_pending() == []
    (result,) = [m for m in planner.runtimes[0].state.history if m.role == "tool" and m.tool_call_id == "r1"]
    assert "done: DELETE THE CACHE" in result.text and "keep the table" in result.text
    # the executor's tool ran once; the denied executor was told why
    ran = [m for r in executors.requests for m in r.messages if m.role == "tool"]
    assert sum("DELETE THE CACHE" in m.text for m in ran) == 1
    assert any("keep the table" in m.text for m in ran)


async def test_executors_approvals_reach_a_restored_planners_controller_on_sqlite(tmp_path) -> None:
    path = tmp_path / "plan.sqlite"
    store = ark.SQLiteStore(path)
    first_executors = Executors(dangerous=True, storage=store)
    pe = ark.PlanAndExecute(planner=Planner(_TURNS[:2], storage=store), executors={"doer": first_executors},
                            name="pe_restore")
    run = await pe.run("Clean up", storage=store, run_id="pr1")
    assert run.status == "awaiting_human"
    await run.aclose()
    # a new process's objects: the planner is restored, its executors rebuilt from their sessions
    store = ark.SQLiteStore(path)
    planner = Planner(_TURNS[2:], storage=store)
    executors = Executors(dangerous=True, storage=store)
    pe = ark.PlanAndExecute(planner=planner, executors={"doer": executors}, name="pe_restore")
    run = await pe.restore("pr1", storage=store)
    assert run.status == "awaiting_human"
    controller = planner.runtimes[0].controller
    first, second = controller.list_pending_approvals()
    assert [i.approval_id.split("/")[0] for i in (first, second)] == ["doer.1", "doer.2"]
    assert (await controller.approve(first.approval_id)).ok
    assert (await controller.deny(second.approval_id, "keep the table")).ok
    await asyncio.wait_for(_settled(planner.runtimes[0], run), 10)
    assert run.status == "completed", (run.status, run.error, run.controller.list_pending())
    assert run.state.answer == "Cache deleted, table kept."
    assert first_executors.ran == [] and executors.ran == ["delete the cache"]   # once, after the approval
    (result,) = [m for m in planner.runtimes[0].state.history if m.role == "tool" and m.tool_call_id == "r1"]
    assert "done: DELETE THE CACHE" in result.text and "keep the table" in result.text
    await run.aclose()


async def test_the_planners_chat_widget_shows_and_decides_its_executors_approvals() -> None:
    from tests.graphs.test_graph_widget import until

    planner = _two_dangerous_todos()
    executors = Executors(dangerous=True)
    pe = ark.PlanAndExecute(planner=planner, executors={"doer": executors}, name="pe_chat")
    run = await pe.run("Clean up")
    assert run.status == "awaiting_human"
    chat = ark.ChatWidget(planner.runtimes[0])
    await until(lambda: len([a for a in chat.approvals if a["live"]]) == 2, "two live cards", chat)
    first, second = chat.approvals
    assert first["approval_id"].startswith("doer.1/") and second["approval_id"].startswith("doer.2/")
    chat._on_msg(chat, {"type": "approve", "approval_id": first["approval_id"], "request_id": "q1"})
    await until(lambda: [a["approval_id"] for a in chat.approvals if a["live"]] == [second["approval_id"]],
                "the first card decided", chat)
    chat._on_msg(chat, {"type": "deny", "approval_id": second["approval_id"], "reason": "keep the table",
                        "request_id": "q2"})
    await until(lambda: not any(a["live"] for a in chat.approvals) and planner.runtimes[0].current_run is not None
                or run.status == "completed", "the second card decided", chat)
    await asyncio.wait_for(_settled(planner.runtimes[0], run), 10)
    assert run.status == "completed", (run.status, run.error)
    assert run.state.answer == "Cache deleted, table kept." and executors.ran == ["delete the cache"]
