"""Graph events (DESIGN §16): graph.step_started / graph.step_finished / graph.waiting,
saved in the outbox of a durable store, and the timeline nesting each step's spans."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel

import arknb as ark
from arknb.durable import MemoryStore
from arknb.widgets._timeline_model import spans


class Doc(BaseModel):
    topic: str
    notes: Annotated[list[str], ark.append] = []
    ok: bool | None = None


def build(store) -> ark.Graph:
    g = ark.Graph("events", state=Doc)

    @ark.tool
    def lookup(q: str) -> str:
        """Look something up."""
        return f"facts about {q}"

    def factory(session_id: str):
        model = ark.ScriptedModel([
            ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="c1", name="lookup", arguments_json='{"q": "tides"}')]),
            "Tides follow the moon."])
        return ark.AgentRuntime(model, tools=[lookup], storage=store, session_id=session_id)

    g.node(lambda s: {"notes": "start"}, name="prepare")
    g.agent("research", factory, prompt=lambda s: s.topic, output="notes")
    g.human("review", ask=lambda s: f"Keep {s.notes[-1]!r}?", output="ok")
    g.edge(ark.START, "prepare"); g.edge("prepare", "research"); g.edge("research", "review")
    g.edge("review", ark.END)
    return g


async def test_steps_publish_their_events_in_order_and_the_waiting_one_after_it_is_saved() -> None:
    store = MemoryStore()
    g = build(store)
    seen: list[ark.AgentEvent] = []
    saved_when_announced: list[str] = []

    def on_waiting(event: ark.AgentEvent) -> None:
        # saved first, then announced: the store already lists the question
        saved_when_announced.append(event.payload["item_id"])

    run = await g.start(Doc(topic="tides"), storage=store, run_id="e1")
    run.bus.subscribe("*", seen.append)
    run.bus.subscribe(ark.EventTypes.GRAPH_WAITING, on_waiting)
    await run.wait()
    graph_events = [(e.type, e.payload["node"]) for e in seen if e.type.startswith("graph.")]
    assert graph_events == [  # (start() returns before the first step's start is published)
        ("graph.step_started", "prepare"), ("graph.step_finished", "prepare"),
        ("graph.step_started", "research"), ("graph.step_finished", "research"),
        ("graph.step_started", "review"), ("graph.waiting", "review"),
    ]
    assert saved_when_announced == ["e1:3:review"]
    outbox = await store.read_events("graph.e1")
    assert [e.type for e in outbox] == ["graph.step_started", "graph.step_finished", "graph.step_started",
                                        "graph.step_finished", "graph.step_started", "graph.waiting"]
    assert [e.sequence for e in outbox] == sorted(e.sequence for e in outbox)
    ops = await store.list_operations("graph.e1")
    assert [(op.kind, op.raw_input["node"], op.phase.value) for op in ops] == [
        ("node", "prepare", "completed"), ("node", "research", "completed"), ("node", "review", "prepared")]
    assert ops[0].effective_result == {"notes": "start"}
    assert ops[1].raw_input["state_version"] == 1 and ops[1].raw_input["session"] == "graph.e1.research.2"


async def test_the_timeline_nests_an_agent_steps_spans_under_its_step_span() -> None:
    store = MemoryStore()
    g = build(store)
    events: list[ark.AgentEvent] = []
    run = await g.start(Doc(topic="tides"), storage=store, run_id="e2")
    run.bus.subscribe("*", events.append)
    await run.wait()
    out = spans([e.to_dict() for e in events])
    step = next(s for s in out if s["kind"] == "step" and s["node"] == "research")
    assert step["status"] == "ok" and step["label"] == "step 2 research"
    child_run = next(s for s in out if s["kind"] == "run" and s["parent"] == step["id"])
    inner = [s for s in out if s["run_id"] == child_run["run_id"] and s["kind"] in ("model", "tool")]
    assert {s["kind"] for s in inner} == {"model", "tool"}
    assert all(_ancestor(out, s, step["id"]) for s in inner)
    review = next(s for s in out if s["kind"] == "step" and s["node"] == "review")
    assert review["status"] == "open"  # waiting for a person


def _ancestor(out, span, ancestor_id) -> bool:
    while span["parent"] is not None:
        if span["parent"] == ancestor_id:
            return True
        span = out[span["parent"]]
    return False
