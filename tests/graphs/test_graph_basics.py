"""ark.Graph as DESIGN §16 writes it: nodes, edges, routes, maps, merges and the build checks."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel

import arknb as ark


class Triage(BaseModel):
    question: str
    notes: Annotated[list[str], ark.append] = []
    approved: bool | None = None
    count: Annotated[int, operator.add] = 0
    title: str = ""


def scripted_agent(*answers: str):
    """A runtime_factory whose runtimes answer in turn, and the session ids it was asked for."""
    asked: list[str] = []

    def factory(session_id: str):
        asked.append(session_id)
        return ark.AgentRuntime(ark.ScriptedModel(list(answers)), session_id=session_id)
    return factory, asked


async def test_function_nodes_sync_and_async_merge_field_by_field_with_reducers() -> None:
    g = ark.Graph("merge", state=Triage)
    seen: list[ark.NodeContext] = []

    @g.node
    def first(state: Triage) -> dict:
        return {"notes": "a", "count": 2, "title": "one"}

    @g.node
    async def second(state: Triage, ctx: ark.NodeContext) -> Triage:
        seen.append(ctx)
        return Triage(question=state.question, notes=["b", "c"], count=3)  # set fields only

    @g.node
    def third(state: Triage) -> None:
        return None

    g.edge(ark.START, "first"); g.edge("first", "second"); g.edge("second", "third"); g.edge("third", ark.END)
    run = await g.run(Triage(question="q"))
    assert run.status == "completed"
    assert run.state.notes == ["a", "b", "c"]          # appended, not replaced
    assert run.state.count == 5                         # operator.add as a reducer
    assert run.state.title == "one"                     # untouched by second (not in its set fields)
    assert run.path == ((1, "first", "completed"), (2, "second", "completed"), (3, "third", "completed"))
    ctx = seen[0]
    assert (ctx.graph, ctx.node, ctx.step, ctx.state_version) == ("merge", "second", 2, 1)
    assert ctx.idempotency_key == f"{run.run_id}:2:second"


async def test_an_agent_node_gets_its_prompt_from_the_state_and_answers_into_a_field() -> None:
    factory, asked = scripted_agent("Forty-two.")
    g = ark.Graph("agent_node", state=Triage)
    g.agent("answer", factory, prompt=lambda s: f"Answer: {s.question}", output="title")
    g.edge(ark.START, "answer")
    seen: list[ark.AgentEvent] = []
    run = await g.start(Triage(question="life?"), run_id="a1")
    run.bus.subscribe("*", seen.append)
    await run.wait()
    assert run.status == "completed" and run.state.title == "Forty-two."
    assert asked == ["graph.a1.answer.1"]
    # the agent's events are re-published nested under the step
    started = next(e for e in seen if e.type == ark.EventTypes.GRAPH_STEP_STARTED)
    llm = [e for e in seen if e.type == ark.EventTypes.LLM_AFTER]
    assert llm and all(e.parent_run_id == "a1" and e.parent_call_id == started.payload["step_id"] for e in llm)


async def test_a_human_node_waits_and_its_answer_is_checked_against_the_type() -> None:
    g = ark.Graph("human_node", state=Triage)
    g.human("review", ask=lambda s: f"Publish {s.question!r}?", output="approved")
    g.edge(ark.START, "review")
    run = await g.run(Triage(question="q"))
    assert run.status == "awaiting_human"
    (item,) = run.controller.list_pending()
    assert (item.kind, item.node, item.question, item.schema) == ("human", "review", "Publish 'q'?", {"type": "boolean"})
    with pytest.raises(ark.ArkError) as info:
        await run.controller.answer_human(item.item_id, "yes")
    assert info.value.code == "human_answer_invalid" and "review" in info.value.message
    assert run.status == "awaiting_human"
    with pytest.raises(ark.ArkError) as missing:
        await run.controller.answer_human("nope", True)
    assert missing.value.code == "approval_not_found"
    await run.controller.answer_human(item.item_id, False)
    await run.wait()
    assert run.status == "completed" and run.state.approved is False


async def test_a_route_loops_back_until_it_ends() -> None:
    g = ark.Graph("loop", state=Triage)

    @g.node
    def work(state: Triage) -> dict:
        return {"count": 1}

    def again(state: Triage) -> Literal["work", "__end__"]:
        return ark.END if state.count >= 3 else "work"

    g.edge(ark.START, "work")
    g.route("work", again)
    assert g.routes["work"][1] == ("work", "__end__")  # targets read from the Literal annotation
    run = await g.run(Triage(question="q"))
    assert run.status == "completed" and run.state.count == 3
    assert [node for _, node, _ in run.path] == ["work", "work", "work"]


@pytest.mark.parametrize("returned", [None, "nowhere", []])
async def test_a_route_returning_none_or_an_unknown_name_fails_the_run_naming_the_node(returned) -> None:
    g = ark.Graph("bad_route", state=Triage)
    g.node(lambda s: {"count": 1}, name="decide")
    g.node(lambda s: None, name="other")
    g.edge(ark.START, "decide")
    g.route("decide", lambda s: returned)
    run = await g.run(Triage(question="q"))
    assert run.status == "failed"
    assert run.error.code == "graph_route_invalid"
    assert "'decide'" in run.error.message and repr(returned if returned != [] else None) in run.error.message


async def test_a_node_that_raises_or_returns_a_bad_update_fails_the_run_naming_it() -> None:
    g = ark.Graph("raises", state=Triage)

    @g.node
    def boom(state: Triage) -> dict:
        raise ValueError("no luck")

    g.edge(ark.START, "boom")
    run = await g.run(Triage(question="q"))
    assert run.status == "failed" and run.error.code == "graph_node_failed"
    assert "'boom'" in run.error.message and "no luck" in run.error.message

    g2 = ark.Graph("bad_update", state=Triage)
    g2.node(lambda s: {"colour": "red"}, name="paint")
    g2.edge(ark.START, "paint")
    run = await g2.run(Triage(question="q"))
    assert run.error.code == "graph_node_failed" and "'colour'" in run.error.message and "'paint'" in run.error.message
    g3 = ark.Graph("bad_value", state=Triage)
    g3.node(lambda s: {"count": "many"}, name="tally")
    g3.edge(ark.START, "tally")
    run = await g3.run(Triage(question="q"))
    assert "'tally'" in run.error.message and "count" in run.error.message
    assert run.state.count == 0  # nothing of a refused update is merged


async def test_parallel_branches_run_together_and_join() -> None:
    g = ark.Graph("fan", state=Triage)
    both_running = asyncio.Event()
    running = set()

    async def branch(name):
        running.add(name)
        if len(running) == 2:
            both_running.set()
        await asyncio.wait_for(both_running.wait(), 5)  # each waits for the other: they must overlap
        return {"notes": name}

    g.node(lambda s: branch("left"), name="left")
    g.node(lambda s: branch("right"), name="right")
    g.node(lambda s: {"title": "+".join(s.notes)}, name="join")
    g.edge(ark.START, "left"); g.edge(ark.START, "right")
    g.edge("left", "join"); g.edge("right", "join")
    run = await g.run(Triage(question="q"))
    assert run.status == "completed"
    assert run.state.title == "left+right"   # merged in frontier order, joined once
    assert [n for _, n, _ in run.path].count("join") == 1


async def test_a_route_returning_several_names_runs_them_together() -> None:
    g = ark.Graph("route_fan", state=Triage)
    g.node(lambda s: None, name="split")
    g.node(lambda s: {"notes": "x"}, name="x")
    g.node(lambda s: {"notes": "y"}, name="y")
    g.edge(ark.START, "split")
    g.route("split", lambda s: ["y", "x"], targets=["x", "y"])
    run = await g.run(Triage(question="q"))
    assert run.status == "completed" and run.state.notes == ["y", "x"]   # the route's order
    assert [(step, node) for step, node, _ in run.path] == [(1, "split"), (2, "y"), (2, "x")]


async def test_parallel_branches_respect_the_graphs_max_parallel() -> None:
    g = ark.Graph("fan_limited", state=Triage, max_parallel=2)
    in_flight, peak = 0, 0

    async def branch(state, name):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return {"notes": name}

    for name in ("a", "b", "c", "d"):
        g.node(lambda s, n=name: branch(s, n), name=name)
        g.edge(ark.START, name)
    run = await g.run(Triage(question="q"))
    assert run.status == "completed" and peak == 2
    assert run.state.notes == ["a", "b", "c", "d"]   # merged in the frontier's order


async def test_a_map_keeps_the_input_order_and_the_limit() -> None:
    g = ark.Graph("map_order", state=Triage)
    in_flight, peak = 0, 0

    async def slow(item: str) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.001 * (5 - int(item[1:]) % 5))  # later items finish first
        in_flight -= 1
        return item.upper()

    g.map("shout", over=lambda s: [f"n{i}" for i in range(20)], node=slow, into="notes", limit=3)
    g.edge(ark.START, "shout")
    run = await g.run(Triage(question="q"))
    assert run.state.notes == [f"N{i}" for i in range(20)]
    assert peak == 3


async def test_a_map_over_ten_thousand_items_keeps_memory_bounded_and_order() -> None:
    g = ark.Graph("map_big", state=Triage)
    in_flight, peak, peak_tasks = 0, 0, 0
    taken = 0

    def items(state):
        nonlocal taken
        for i in range(10_000):   # a generator: never turned into 10,000 tasks
            taken += 1
            yield i

    async def double(i: int, ctx: ark.NodeContext) -> str:
        nonlocal in_flight, peak, peak_tasks
        assert ctx.item_index == i
        in_flight += 1
        peak = max(peak, in_flight)
        peak_tasks = max(peak_tasks, len(asyncio.all_tasks()))
        await asyncio.sleep(0)
        in_flight -= 1
        return str(i * 2)

    g.map("double", over=items, node=double, into="notes", limit=4)
    g.edge(ark.START, "double")
    run = await g.run(Triage(question="q"))
    assert run.status == "completed"
    assert run.state.notes == [str(i * 2) for i in range(10_000)]
    assert taken == 10_000 and peak == 4
    assert peak_tasks <= 4 + 4  # the workers, the run's task, the test's: never one task per item


async def test_a_map_item_that_raises_fails_the_step_naming_the_item() -> None:
    g = ark.Graph("map_fail", state=Triage)

    def picky(i: int) -> str:
        if i == 7:
            raise RuntimeError("seven")
        return str(i)

    g.map("pick", over=lambda s: range(10), node=picky, into="notes", limit=2)
    g.edge(ark.START, "pick")
    run = await g.run(Triage(question="q"))
    assert run.status == "failed" and "item 7" in run.error.message and "'pick'" in run.error.message


def _graph(name="checks"):
    g = ark.Graph(name, state=Triage)
    for node in ("a", "b", "c"):
        g.node(lambda s: None, name=node)
    return g


@pytest.mark.parametrize("build, words", [
    (lambda g: (g.edge(ark.START, "a"), g.edge("a", "nowhere")), ["'nowhere'", "names no node"]),
    (lambda g: (g.edge(ark.START, "a"), g.edge("a", "b")), ["'c'", "cannot be reached"]),
    (lambda g: (g.edge(ark.START, "a"), g.edge("a", "b"), g.edge("b", "c"), g.edge("c", "b")),
     ["b, c", "cycle with no way out"]),
    (lambda g: (g.edge("a", "b"),), ["nothing leaves START"]),
    (lambda g: (g.edge(ark.START, "a"), g.route("a", lambda s: "b", targets=["b", "zz"])), ["'zz'"]),
])
async def test_the_graph_is_checked_when_built_naming_the_node(build, words) -> None:
    g = _graph()
    build(g)
    with pytest.raises(ark.ArkError) as info:
        await g.run(Triage(question="q"))
    assert info.value.code == "graph_invalid"
    for word in words:
        assert word in info.value.message


def test_a_cycle_with_a_route_out_is_fine_and_a_node_writing_an_unknown_field_is_refused() -> None:
    g = _graph("cycle_ok")
    g.edge(ark.START, "a"); g.edge("a", "b"); g.edge("b", "c")
    g.route("c", lambda s: "a", targets=["a", ark.END])
    g.validate()
    with pytest.raises(ark.ArkError) as info:
        g.human("ask", ask="?", output="colour")
    assert info.value.code == "graph_invalid" and "'colour'" in info.value.message


async def test_the_graph_draws_itself_before_it_runs_and_the_run_colours_it() -> None:
    g = _graph("drawn")
    g.edge(ark.START, "a"); g.edge("a", "b"); g.edge("b", "c"); g.edge("c", ark.END)
    before = g._repr_html_()
    assert "<svg" in before and 'data-node="a" data-status="pending"' in before
    run = await g.run(Triage(question="q"))
    after = run._repr_html_()
    assert 'data-node="b" data-status="completed"' in after
    assert 'data-edge="a->b" data-taken="1"' in after and 'data-edge="c->__end__" data-taken="1"' in after


async def test_memory_and_file_storage_run_graphs_too(tmp_path) -> None:
    g = ark.Graph("plain", state=Triage)
    g.node(lambda s: {"count": 1}, name="one")
    g.human("ok", ask="ok?", output="approved")
    g.edge(ark.START, "one"); g.edge("one", "ok")
    storage = ark.FileStateStorage(tmp_path)
    run = await g.run(Triage(question="q"), storage=storage, run_id="p1")
    assert run.status == "awaiting_human"
    await run.aclose()
    again = await ark.Graph.restore("p1", storage=ark.FileStateStorage(tmp_path))
    assert again.status == "awaiting_human" and again.state.count == 1
    await again.controller.answer_human(again.pending[0].item_id, True)
    await again.wait()
    assert again.status == "completed" and again.state.approved is True and again.state.count == 1


async def test_a_saved_run_id_is_refused_unless_fresh() -> None:
    g = _graph("fresh")
    g.edge(ark.START, "a"); g.edge("a", "b"); g.edge("a", "c")
    storage = ark.MemoryStateStorage()
    await g.run(Triage(question="q"), storage=storage, run_id="r")
    with pytest.raises(ark.ArkError) as info:
        await g.run(Triage(question="q"), storage=storage, run_id="r")
    assert "fresh=True" in info.value.message
    run = await g.run(Triage(question="again"), storage=storage, run_id="r", fresh=True)
    assert run.status == "completed" and run.state.question == "again"


async def test_restore_of_an_unknown_run_is_an_error() -> None:
    with pytest.raises(ark.ArkError) as info:
        await ark.Graph.restore("nothing", storage=ark.MemoryStateStorage())
    assert info.value.code == "graph_run_not_found"


async def test_cancel_ends_the_run_cancelled() -> None:
    g = ark.Graph("cancel", state=Triage)
    entered = asyncio.Event()

    async def forever(state):
        entered.set()
        await asyncio.Event().wait()

    g.node(forever, name="wait")
    g.edge(ark.START, "wait")
    run = await g.start(Triage(question="q"))
    await entered.wait()
    assert run.cancel()
    await run.wait()
    assert run.status == "cancelled" and run.error.code == "cancelled"
