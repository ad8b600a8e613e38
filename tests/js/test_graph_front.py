"""The timeline's JS index nests a graph step's spans as the Python model does
(js/src/lib/timeline_index.js vs arknb/widgets/_timeline_model.py), on the events of a
real graph run with an agent node."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated

from pydantic import BaseModel

import arknb as ark
from arknb.widgets._timeline_model import spans as py_spans

from .test_timeline_front import mount, span_rows


class Doc(BaseModel):
    topic: str
    notes: Annotated[list[str], ark.append] = []


def graph_events() -> list[dict]:
    @ark.tool
    def lookup(q: str) -> str:
        """Look something up."""
        return f"facts about {q}"

    def factory(session_id: str):
        model = ark.ScriptedModel([
            ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="c1", name="lookup", arguments_json='{"q": "tides"}')]),
            "Tides follow the moon."])
        return ark.AgentRuntime(model, tools=[lookup], session_id=session_id)

    g = ark.Graph("front_events", state=Doc)
    g.node(lambda s: {"notes": "start"}, name="prepare")
    g.agent("research", factory, prompt=lambda s: s.topic, output="notes")
    g.edge(ark.START, "prepare"); g.edge("prepare", "research")

    async def go():
        seen = []
        run = await g.start(Doc(topic="tides"), run_id="f1")
        run.bus.subscribe("*", seen.append)
        await run.wait()
        return [e.to_dict() for e in seen]
    with ThreadPoolExecutor(1) as pool:  # (the sync Playwright API holds this thread's loop)
        return pool.submit(asyncio.run, go()).result()


def test_graph_step_spans_nest_their_agents_spans_in_js_as_in_python(harness):
    events = graph_events()
    mount(harness, events)
    got = span_rows(harness)
    want = [(s["kind"], f"{s['kind']} {s['label']}", s["depth"], s["status"]) for s in py_spans(events)]
    assert [tuple(x) for x in got] == want
    depth = {label: d for _, label, d, _ in got}
    assert depth["run graph front_events f1"] == 0 and depth["step step 2 research"] == 1
    child = next(label for label in depth if label.startswith("run run run_"))  # the agent's own run
    assert depth[child] == depth["step step 2 research"] + 1
    assert depth["tool lookup c1"] > depth[child]


def _item(item_id, schema, kind="human", question="?"):
    return {"item_id": item_id, "kind": kind, "node": "ask", "step": 2, "question": question, "schema": schema,
            "detail": {}}


def test_graph_cards_build_a_form_per_answer_type_and_send_typed_values(harness):
    pending = [_item("r:2:ok", {"type": "boolean"}, question="<b>Publish?</b>"),
               _item("r:2:name", {"type": "string"}),
               _item("r:2:count", {"type": "integer"}),
               _item("r:2:colour", {"enum": ["red", "blue"], "type": "string"}),
               _item("r:2:step", {}, kind="in_doubt", question="began before its process stopped")]
    harness.mount("graph", {"svg": "", "status": "awaiting_human", "pending": pending, "error": "",
                            "graph_name": "g", "static_id": ""})
    page = harness.page
    cards = page.locator("[data-testid='arknb-human-card']")
    assert cards.count() == 5
    # untrusted question text stays text
    assert cards.nth(0).get_by_test_id("arknb-human-question").inner_text() == "<b>Publish?</b>"
    assert cards.nth(1).get_by_test_id("arknb-human-input").get_attribute("type") == "text"
    assert cards.nth(2).get_by_test_id("arknb-human-input").get_attribute("type") == "number"
    assert cards.nth(3).locator("select option").all_inner_texts() == ["red", "blue"]
    cards.nth(0).get_by_test_id("arknb-human-reject").click()
    assert harness.sent()[-1] == {"type": "answer_human", "item_id": "r:2:ok", "value": False}
    harness.set("pending", pending[1:])  # the kernel answers: the card goes, the others come back enabled
    cards.nth(0).get_by_test_id("arknb-human-input").fill("Ada")
    cards.nth(0).get_by_test_id("arknb-human-send").click()
    assert harness.sent()[-1] == {"type": "answer_human", "item_id": "r:2:name", "value": "Ada"}
    harness.set("pending", pending[2:])
    cards.nth(0).get_by_test_id("arknb-human-input").fill("42")
    cards.nth(0).get_by_test_id("arknb-human-input").press("Enter")
    assert harness.sent()[-1] == {"type": "answer_human", "item_id": "r:2:count", "value": 42}
    harness.set("pending", pending[3:])
    cards.nth(0).locator("select").select_option("blue")
    cards.nth(0).get_by_test_id("arknb-human-send").click()
    assert harness.sent()[-1] == {"type": "answer_human", "item_id": "r:2:colour", "value": "blue"}
    harness.set("pending", pending[4:])
    cards.nth(0).get_by_test_id("arknb-human-rerun").click()
    assert harness.sent()[-1] == {"type": "decide_graph", "item_id": "r:2:step", "choice": "rerun", "value": None}
    harness.set("pending", [])
    assert cards.count() == 0
