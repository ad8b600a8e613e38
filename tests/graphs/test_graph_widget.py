"""GraphWidget and the chat's human cards, driven by a fake front end (the messages the
JS sends); tests/browser/test_graph_browser.py drives the real one."""

from __future__ import annotations

import asyncio
from typing import Annotated

from pydantic import BaseModel

import arknb as ark


class Doc(BaseModel):
    topic: str
    notes: Annotated[list[str], ark.append] = []
    approved: bool | None = None
    rating: int = 0


def build(gate: asyncio.Event | None = None) -> ark.Graph:
    g = ark.Graph("widget_graph", state=Doc)

    @g.node
    async def research(state: Doc) -> dict:
        if gate is not None:
            await gate.wait()
        return {"notes": "found"}

    g.human("review", ask=lambda s: f"Publish {s.notes[-1]!r}?", output="approved")
    g.human("rate", ask="Rate it 1-5", output="rating")
    g.node(lambda s: {"notes": "published"}, name="publish")
    g.edge(ark.START, "research"); g.edge("research", "review")
    g.route("review", lambda s: "rate" if s.approved else "research", targets=["rate", "research"])
    g.edge("rate", "publish"); g.edge("publish", ark.END)
    return g


async def until(predicate, what: str, widget=None) -> None:
    """Wait (awaiting trait changes, never sleeping) until ``predicate()`` holds."""
    widget = widget or _current[0]
    ready = asyncio.Event()

    def check(_change=None) -> None:
        if predicate():
            ready.set()

    widget.observe(check)
    try:
        check()
        await asyncio.wait_for(ready.wait(), 10)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None
    finally:
        widget.unobserve(check)


_current: list = [None]


def node_status(widget, node: str) -> str:
    marker = f'data-node="{node}" data-status="'
    start = widget.svg.index(marker) + len(marker)
    return widget.svg[start:widget.svg.index('"', start)]


async def test_a_graph_widget_draws_the_shape_before_any_run() -> None:
    widget = ark.GraphWidget(build())
    assert widget.status == "" and widget.pending == []
    assert node_status(widget, "research") == "pending" and 'data-edge="review->rate"' in widget.svg
    assert 'stroke-dasharray="5 4"' in widget.svg  # routes are dashed


async def test_the_widget_follows_a_run_live_and_answers_a_person_through_its_cards() -> None:
    gate = asyncio.Event()
    g = build(gate)
    run = await g.start(Doc(topic="tides"))
    widget = _current[0] = ark.GraphWidget(run)
    await until(lambda: node_status(widget, "research") == "running", "research running")
    assert widget.status == "running"
    gate.set()
    await until(lambda: widget.status == "awaiting_human", "the review question")
    assert node_status(widget, "research") == "completed" and node_status(widget, "review") == "waiting"
    assert 'stroke="#d97706" stroke-width="2" stroke-dasharray' in widget.svg  # the waiting node outlined
    (card,) = widget.pending
    assert card["kind"] == "human" and card["question"] == "Publish 'found'?" and card["schema"]["type"] == "boolean"
    # a refused answer: the error shows and the card stays
    widget._on_msg(widget, {"type": "answer_human", "item_id": card["item_id"], "value": "perhaps"})
    await until(lambda: widget.error != "", "the refusal")
    assert "human_answer_invalid" in widget.error or "expects" in widget.error
    assert widget.pending and widget.status == "awaiting_human"
    widget._on_msg(widget, {"type": "answer_human", "item_id": card["item_id"], "value": True})
    await until(lambda: widget.pending and widget.pending[0]["node"] == "rate", "the rating question")
    assert widget.error == ""
    widget._on_msg(widget, {"type": "answer_human", "item_id": widget.pending[0]["item_id"], "value": 4})
    await until(lambda: widget.status == "completed", "the end")
    await run.wait()
    assert run.state.rating == 4 and run.state.notes == ["found", "published"]
    for a, b in [("__start__", "research"), ("research", "review"), ("review", "rate"), ("publish", "__end__")]:
        assert f'data-edge="{a}->{b}" data-taken="1"' in widget.svg
    assert 'data-edge="review->research" data-taken="0"' in widget.svg
    static = widget._static_html()
    assert "<svg" in static and "status: completed" in static


async def test_the_static_copy_lists_the_question_waiting() -> None:
    run = await build().run(Doc(topic="tides"))
    widget = ark.GraphWidget(run)
    static = widget._static_html()
    assert "Publish &#x27;found&#x27;?" in static and 'data-status="waiting"' in static


async def test_a_chat_following_a_graph_shows_its_question_and_answers_it() -> None:
    run = await build().run(Doc(topic="tides"))
    chat = ark.ChatWidget(ark.AgentRuntime(ark.ScriptedModel(["hi"])))
    chat.follow_graph(run)
    _current[0] = chat
    (card,) = chat.humans
    assert card["node"] == "review" and card["kind"] == "human"
    chat._on_msg(chat, {"type": "answer_human", "item_id": card["item_id"], "value": False})  # reject: loops back
    await until(lambda: chat.humans and chat.humans[0]["step"] == 4, "the question asked again")
    assert [n for _, n, _ in run.path] == ["research", "review", "research"]
