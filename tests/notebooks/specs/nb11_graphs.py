"""Notebook 11_graphs.ipynb: its cells, in order."""

from __future__ import annotations

from ._cells import code, md

NAME = "11_graphs.ipynb"

CELLS = [
    md("""
# 11 · Graphs: workflows with agent, function and human steps

An agent loop decides its own next step. Sometimes *you* want to decide: research, then
answer, then a person reviews, and go back if they say no. `ark.Graph` says that in a
few lines, like LangGraph's state graphs:

* the graph's **state** is a pydantic model; each node returns an **update** (a dict),
  merged field by field; a list field annotated `Annotated[list[str], ark.append]` is
  appended to instead of replaced;
* **function nodes** (`@g.node`), **agent nodes** (`g.agent`: a whole `AgentRuntime`,
  its prompt from the state, its answer into a field), **human nodes** (`g.human`: the
  graph waits for a person) and **map nodes** (`g.map`: one function over a list, a few
  at a time, results in order);
* **edges** (`g.edge`) and **routes** (`g.route`: a function of the state names the next
  node), from `ark.START` to `ark.END`.

On a durable store (`ark.SQLiteStore`, `ark.PostgresStore`) every step is saved as it
finishes: a graph whose kernel dies continues where it stopped, and nothing that
finished runs twice. Everything here runs offline on the scripted model.
"""),
    code("""
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel

import arknb as ark

workdir = Path(tempfile.mkdtemp(prefix="arknb-nb11-"))  # a fresh folder each time the notebook runs
store = ark.SQLiteStore(workdir / "graphs.sqlite3")
"""),
    md("""
## 1. Research, answer, review — and back if the reviewer says no

The agent node builds a runtime per step with `runtime_factory(session_id)`, as a
sub-agent does. Here each runtime answers from a script; with a real model it would be
`ark.AgentRuntime(client, tools=[...], storage=store, session_id=session_id)`.
"""),
    code("""
class Triage(BaseModel):
    question: str
    notes: Annotated[list[str], ark.append] = []
    approved: bool | None = None
    summaries: list[str] = []


drafts = iter(["Tides are caused by the moon.", "Tides are caused mostly by the moon's pull, and a little by the sun's."])


def writer(session_id):
    return ark.AgentRuntime(ark.ScriptedModel([next(drafts)]), storage=store, session_id=session_id)


g = ark.Graph("triage", state=Triage)


@g.node
async def research(state: Triage, ctx: ark.NodeContext) -> dict:
    return {"notes": f"source {len(state.notes) // 2 + 1} on {state.question!r}"}


g.agent("answer", writer, prompt=lambda s: s.question, output="notes")
g.human("review", ask=lambda s: f"Publish {s.notes[-1]!r}?", output="approved")
g.map("summarize", over=lambda s: s.notes, node=lambda note: note[:24], into="summaries", limit=2)
g.edge(ark.START, "research")
g.edge("research", "answer")
g.edge("answer", "review")
g.route("review", lambda s: "summarize" if s.approved else "research", targets=["summarize", "research"])
g.edge("summarize", ark.END)
g   # the graph draws itself before it runs (laid out in the kernel: no JavaScript layout, no CDN)
"""),
    md("""
`g.start(...)` runs the graph in the background, so the widget below stays live; `await
run.wait()` waits until it finishes, fails or waits for a person. The GraphWidget
colours each node by status, draws the path taken in bold and outlines the node that
waits; its cards answer the question (the chat can show them too:
`chat.follow_graph(run)`).
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
run = await g.start(Triage(question="Why are there tides?"), storage=store, run_id="triage-1")
trace = []
run.bus.subscribe(ark.EventTypes.ANY, trace.append)   # every event, the agent nodes' too (for the timeline below)
ark.GraphWidget(run)
"""),
    code("""
await run.wait()
print(run.status, "·", run.pending[0].question)
"""),
    md("""
The reviewer says no: the route sends the graph back to `research`. The answer is
checked against the node's type (`bool` here) before anything is saved.
"""),
    code("""
item = run.controller.list_pending()[0]
try:
    await run.controller.answer_human(item.item_id, "maybe")
except ark.ArkError as err:
    print(err.code)
await run.controller.answer_human(item.item_id, False)
await run.wait()
print(run.status, "·", run.pending[0].question)
"""),
    code("""
await run.controller.answer_human(run.pending[0].item_id, True)
await run.wait()
print(run.status)
for step, node, status in run.path:
    print(step, node, status)
print(run.state.summaries)
"""),
    md("""
The timeline nests each step's spans under a step span: the `answer` steps hold their
agent's run, with its model call.
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
ark.TimelineWidget(trace)
"""),
    md("""
## 2. A map over many items, a few at a time

`limit=` bounds how many items are in flight; the results come back in the items'
order whatever order they finish in, and a generator is never turned into thousands of
tasks at once.
"""),
    code("""
class Batch(BaseModel):
    results: list[int] = []


in_flight = peak = 0


async def square(n: int) -> int:
    global in_flight, peak
    in_flight += 1
    peak = max(peak, in_flight)
    await asyncio.sleep(0)
    in_flight -= 1
    return n * n


squares = ark.Graph("squares", state=Batch)
squares.map("square", over=lambda s: range(1000), node=square, into="results", limit=4)
squares.edge(ark.START, "square")
done = await squares.run(Batch())
print(done.status, done.state.results[:5], len(done.state.results), "at most", peak, "at once")
"""),
    md("""
## 3. A kernel that dies mid-step

The next cells start another Python process that runs a nightly job as a graph on
the same SQLite file, and kill it (SIGKILL, nothing gets to clean up) while it sends
the third of five emails. Every send is written to a log first, so we can count.
"""),
    code("""
PIPELINE = '''
import asyncio, os, sys
from pydantic import BaseModel
import arknb as ark


class Nightly(BaseModel):
    emails: list[str]
    sent: list[str] = []
    report: str = ""


def build(effects, stop_at=None):
    g = ark.Graph("nightly", state=Nightly)

    async def send(email):
        with open(effects, "a") as log:
            log.write(email + "\\\\n")
            log.flush()
            os.fsync(log.fileno())
        if email == stop_at:
            print("SENDING", email, flush=True)
            await asyncio.Event().wait()   # the process is killed here
        return "sent " + email

    g.map("send", over=lambda s: s.emails, node=send, into="sent", limit=1)
    g.node(lambda s: {"report": f"{len(s.sent)} emails sent"}, name="report")
    g.edge(ark.START, "send")
    g.edge("send", "report")
    return g


if __name__ == "__main__":
    db, effects, stop_at = sys.argv[1:4]
    graph = build(effects, stop_at)
    asyncio.run(graph.run(Nightly(emails=[f"email-{i}" for i in range(1, 6)]), storage=ark.SQLiteStore(db),
                          run_id="nightly-1"))
'''
script = workdir / "nightly.py"
script.write_text(PIPELINE)
effects = workdir / "sent.log"
db = workdir / "graphs.sqlite3"

child = subprocess.Popen([sys.executable, str(script), str(db), str(effects), "email-3"],
                         stdout=subprocess.PIPE, text=True)
print(child.stdout.readline().strip())
child.send_signal(signal.SIGKILL)
child.wait()
print("killed:", child.returncode == -signal.SIGKILL)
print(effects.read_text().split())
"""),
    md("""
This kernel restores the run. The first two emails are done and are never sent again;
the third *began* and may or may not have gone out, so it is **in doubt**: a person
says what happened (`rerun`, `mark_done`, `mark_failed`). A node declared
`idempotent=True` would simply run again.
"""),
    code("""
import importlib.util

spec = importlib.util.spec_from_file_location("nightly", script)
nightly = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nightly)
nightly_graph = nightly.build(str(effects))   # defines the graph "nightly" in this kernel

restored = await ark.Graph.restore("nightly-1", storage=ark.SQLiteStore(db))
print(restored.status)
for item in restored.controller.list_in_doubt():
    print(item.item_id, "·", item.question[:60], "…")
"""),
    code("""
await restored.controller.mark_done(restored.pending[0].item_id, "sent email-3")
await restored.wait()
print(restored.status, "·", restored.state.report)
print(restored.state.sent)
print(effects.read_text().split())   # every email once: nothing finished ran twice
await restored.aclose()
"""),
    md("""
## 4. A planner and its executors

`ark.PlanAndExecute` is a graph too: the planner writes todos with `write_todos` and
calls `run_todos`, which hands each pending todo to an executor in a **private
session** (it sees its task and what the planner passes, not the planner's history),
`max_parallel` at a time; their answers come back to the planner as the tool's result,
and the planner re-plans until it answers. `review=True` would put the first plan in
front of a person.
"""),
    code("""
def call(call_id, name, **arguments):
    return ark.ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))


def planner(session_id):
    todos = [{"content": f"tide tables for {port}", "status": "pending"} for port in ("Brest", "Dover")]
    return ark.AgentRuntime(ark.ScriptedModel([
        ark.ScriptedTurn(tool_calls=[call("t1", "write_todos", todos=todos)]),
        ark.ScriptedTurn(tool_calls=[call("r1", "run_todos", context="Heights in metres.")]),
        "Brest's range (up to 8 m) is about twice Dover's.",
    ]), session_id=session_id, plan_mode=ark.PlanMode.AUTO)


def researcher(session_id):
    return ark.AgentRuntime(ark.ScriptedModel(["Looked it up."]), session_id=session_id)


team = ark.PlanAndExecute(planner=planner, executors={"researcher": researcher}, max_parallel=2)
planned = await team.run("Compare the tides of Brest and Dover", run_id="plan-1")
print(planned.status, "·", planned.state.answer)
"""),
    md("""
## 5. What the model saw

Hooks, skills and the context compressor change a request on its way to the model.
Every request carries `context_version` (the length of the raw history it was built
from) and one `ark.ContextChange` per difference; the timeline's detail pane shows them
for a model call (click an `llm.before` row) as a diff against the history.
"""),
    code("""
chatty = ark.ScriptedModel([f"answer {i} " + "lorem " * 60 for i in range(6)])
long_talk = ark.AgentRuntime(chatty, system_prompt="Be brief.", compressor=ark.ContextCompressor(
    400, keep_last=2, summarize=lambda messages: f"{len(messages)} earlier messages"))
timeline = ark.TimelineWidget(long_talk)
for i in range(6):
    await long_talk.run(f"question {i} " + "ipsum " * 20)
last = chatty.requests[-1]
print("context version", last.context_version)
for change in last.context_changes:
    print(change.source, change.kind, "history", change.range, "→ request", change.sent)
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
timeline
"""),
]
