"""GraphWidget in real JupyterLab (issue 23 item 4): the graph drawn before it runs, its
nodes coloured live during a run, the node waiting for a person outlined, and the
person's answer given from the chat's card (ChatWidget.follow_graph) continuing the
graph, which the widget then shows completed with the path taken."""

from __future__ import annotations

from playwright.sync_api import expect

GRAPH = "[data-testid='arknb-graph'][data-ready='true']"
CHAT = "[data-testid='arknb-chat'][data-ready='true']"

SETUP = '''
import asyncio
from typing import Annotated
from pydantic import BaseModel
import arknb as ark

class Triage(BaseModel):
    question: str
    notes: Annotated[list[str], ark.append] = []
    approved: bool | None = None

gate = asyncio.Event()
g = ark.Graph("triage_browser", state=Triage)

@g.node
async def research(state: Triage) -> dict:
    await gate.wait()
    return {"notes": f"notes on {state.question}"}

g.agent("answer", lambda sid: ark.AgentRuntime(ark.ScriptedModel(["Tides follow the moon."]), session_id=sid),
        prompt=lambda s: s.question, output="notes")
g.human("review", ask=lambda s: f"Publish {s.notes[-1]!r}?", output="approved")
g.node(lambda s: {"notes": "published"}, name="publish")
g.edge(ark.START, "research"); g.edge("research", "answer"); g.edge("answer", "review")
g.route("review", lambda s: "publish" if s.approved else "research", targets=["publish", "research"])
g.edge("publish", ark.END)
run = await g.start(Triage(question="tides"))
widget = ark.GraphWidget(run)
widget
'''

CHAT_CELL = '''
chat = ark.ChatWidget(ark.AgentRuntime(ark.ScriptedModel(["hi"])))
chat.follow_graph(run)
chat
'''


def node(widget, name: str):
    return widget.locator(f"[data-node='{name}']")


def test_the_graph_widget_colours_a_run_live_and_the_chat_answers_its_question(lab):
    notebook = lab.server.write_notebook("graph_widget.ipynb", [SETUP, "gate.set()", CHAT_CELL])
    lab.open(notebook)
    lab.run_cell(0)
    widget = lab.page.locator(GRAPH).first
    widget.wait_for()
    expect(node(widget, "research")).to_have_attribute("data-status", "running")
    expect(node(widget, "review")).to_have_attribute("data-status", "pending")
    expect(widget.get_by_test_id("arknb-graph-status")).to_have_text("running")
    lab.screenshot("graph_running", locator=widget)

    lab.run_cell(1)  # research may finish: the agent answers, then a person is asked
    expect(node(widget, "review")).to_have_attribute("data-status", "waiting")
    expect(node(widget, "answer")).to_have_attribute("data-status", "completed")
    expect(widget.get_by_test_id("arknb-human-question")).to_have_text("Publish 'Tides follow the moon.'?")
    expect(widget.locator("[data-edge='research->answer']")).to_have_attribute("data-taken", "1")
    lab.screenshot("graph_waiting", locator=widget)

    lab.run_cell(2)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    card = chat.get_by_test_id("arknb-human-card")
    expect(card.get_by_test_id("arknb-human-question")).to_have_text("Publish 'Tides follow the moon.'?")
    lab.screenshot("chat_human_card", locator=chat)
    card.get_by_test_id("arknb-human-approve").click()

    expect(widget.get_by_test_id("arknb-graph-status")).to_have_text("completed")
    expect(node(widget, "publish")).to_have_attribute("data-status", "completed")
    expect(widget.locator("[data-edge='review->publish']")).to_have_attribute("data-taken", "1")
    expect(widget.locator("[data-edge='review->research']")).to_have_attribute("data-taken", "0")
    expect(chat.get_by_test_id("arknb-human-card")).to_have_count(0)
    expect(widget.get_by_test_id("arknb-human-card")).to_have_count(0)
    lab.screenshot("graph_completed", locator=widget)
    assert lab.kernel_exec("print(run.status, run.state.approved, run.state.notes)").strip() == \
        "completed True ['notes on tides', 'Tides follow the moon.', 'published']"


TIMELINE = "[data-testid='arknb-timeline'][data-ready='true']"
ROWS = "[data-testid='arknb-timeline-row']"

COMPRESSED = '''
import arknb as ark
model = ark.ScriptedModel([f"answer {i} " + "lorem " * 60 for i in range(6)])
runtime = ark.AgentRuntime(model, system_prompt="Be brief.",
                           compressor=ark.ContextCompressor(400, keep_last=2, summarize=lambda ms: f"{len(ms)} earlier messages"))
timeline = ark.TimelineWidget(runtime)   # made first: a runtime without a durable store keeps no outbox
for i in range(6):
    await runtime.run(f"question {i} " + "ipsum " * 20)
timeline
'''


def test_the_timeline_shows_what_the_model_saw_for_a_compressed_request(lab):
    notebook = lab.server.write_notebook("context_view.ipynb", [COMPRESSED])
    lab.open(notebook)
    lab.run_cell(0)
    timeline = lab.page.locator(TIMELINE).first
    timeline.wait_for()
    row = timeline.locator(f"{ROWS}[data-type='llm.before']").last
    row.scroll_into_view_if_needed()
    row.click()
    detail = timeline.get_by_test_id("arknb-timeline-detail")
    view = detail.get_by_test_id("arknb-context-view")
    expect(view).to_be_visible()
    summary = view.locator("[data-testid='arknb-context-change'][data-kind='summary']")
    expect(summary).to_have_count(1)
    expect(summary.get_by_test_id("arknb-ctx-del").first).to_contain_text("question 0")
    expect(summary.get_by_test_id("arknb-ctx-add").first).to_contain_text("[Summary of the first")
    expect(view.locator("[data-testid='arknb-context-change'][data-source='system_prompt']")).to_have_count(1)
    lab.screenshot("context_view", locator=detail)
