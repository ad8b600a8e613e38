"""The graphs the crash tests run, in the child that is killed and in the test that restores.

Every node appends ``<what>`` to the side-effect file (fsynced) when it runs, so a test
counts how often each ran across processes. A node named by ``stop_at`` prints
``AT <what>`` once it has written its side effect and then blocks, so the parent can
SIGKILL the process at that point.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel

import arknb as ark


class Verdict(BaseModel):
    """The typed answer of the ``typed_agent`` scenario's node (found again by module path after a crash)."""

    published: bool
    where: str


class Work(BaseModel):
    topic: str
    verdict: Verdict | None = None
    notes: Annotated[list[str], ark.append] = []
    answer: str = ""
    approved: bool | None = None
    parts: list[str] = []


def open_store(kind: str, where: str):
    if kind == "postgres":
        return ark.PostgresStore(where)
    return ark.SQLiteStore(Path(where) / "graph.sqlite3")


def record(effects: Path, what: str) -> None:
    with open(effects, "a", encoding="utf-8") as handle:
        handle.write(what + "\n")
        handle.flush()
        os.fsync(handle.fileno())


async def _stop_here(what: str) -> None:
    print(f"AT {what}", flush=True)
    await asyncio.Event().wait()  # killed here


def build(scenario: str, store, effects: Path, *, stop_at: str | None = None, idempotent: bool = False,
          turns: list | None = None) -> ark.Graph:
    """The graph of ``scenario``: ``function``, ``agent``, ``typed_agent``, ``map`` or ``human``."""
    g = ark.Graph(f"crash_{scenario}", state=Work)

    def step(name: str, update):
        async def node(state: Work) -> dict:
            record(effects, name)
            if stop_at == name:
                await _stop_here(name)
            return update(state)
        g.node(node, name=name, idempotent=idempotent if name == "slow" else False)

    step("research", lambda s: {"notes": f"notes on {s.topic}"})
    g.edge(ark.START, "research")
    if scenario == "function":
        step("slow", lambda s: {"answer": "slow answer"})
        step("finish", lambda s: {"notes": "finished"})
        g.edge("research", "slow"); g.edge("slow", "finish")
    elif scenario in ("agent", "typed_agent"):
        @ark.tool
        async def publish(text: str) -> str:
            """Publish the text."""
            record(effects, "publish")
            if stop_at == "publish":
                await _stop_here("publish")  # a tool mid-call: the kill comes while it runs
            return "published"

        typed = scenario == "typed_agent"
        last = ark.ScriptedTurn(output=Verdict(published=True, where="blog")) if typed else "Published it."
        script = turns if turns is not None else [
            ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="c1", name="publish", arguments_json='{"text": "hi"}')]),
            last]

        def factory(session_id: str) -> ark.AgentRuntime:
            return ark.AgentRuntime(ark.ScriptedModel(script), tools=[publish], storage=store, session_id=session_id)

        if typed:  # the node asks its runtime (which has no output_type) for a Verdict
            g.agent("writer", factory, prompt=lambda s: f"Write about {s.topic}", output="verdict",
                    output_type=Verdict)
        else:
            g.agent("writer", factory, prompt=lambda s: f"Write about {s.topic}", output="answer")
        step("finish", lambda s: {"notes": "finished"})
        g.edge("research", "writer"); g.edge("writer", "finish")
    elif scenario == "map":
        async def part(i: int) -> str:
            record(effects, f"item{i}")
            if stop_at == f"item{i}":
                await _stop_here(f"item{i}")
            return f"part {i}"
        g.map("parts", over=lambda s: range(10), node=part, into="parts", limit=1, idempotent=idempotent)
        step("finish", lambda s: {"notes": "finished"})
        g.edge("research", "parts"); g.edge("parts", "finish")
    elif scenario == "human":
        g.human("review", ask=lambda s: f"Publish {s.notes[-1]!r}?", output="approved")
        step("finish", lambda s: {"notes": "finished"})
        g.edge("research", "review")
        g.route("review", lambda s: "finish" if s.approved else "research", targets=["finish", "research"])
    g.edge("finish", ark.END)
    return g


def build_plan(store, effects: Path, *, stop_at: str | None = None, planner_turns: list | None = None,
               restored: bool = False, dangerous: bool = False):
    """A PlanAndExecute whose two executors each call ``fetch`` (idempotent) once; the
    planner plans two todos, runs them, and answers. ``restored``: the models hold only
    what is left to say after the crash (a finished model call is never asked again)."""
    import json

    def call(cid, name, **arguments):
        return ark.ToolCall(id=cid, name=name, arguments_json=json.dumps(arguments))

    todos = [{"content": f"port {p}", "status": "pending"} for p in ("brest", "dover")]
    turns = planner_turns if planner_turns is not None else [
        ark.ScriptedTurn(tool_calls=[call("t1", "write_todos", todos=todos)]),
        ark.ScriptedTurn(tool_calls=[call("r1", "run_todos")])]
    turns = turns + ["Both ports fetched."]

    planners = []

    def planner(session_id):
        runtime = ark.AgentRuntime(ark.ScriptedModel(turns), storage=store, session_id=session_id,
                                   plan_mode=ark.PlanMode.AUTO)
        planners.append(runtime)
        return runtime

    @ark.tool(idempotent=True, risk="dangerous" if dangerous else "safe")
    async def fetch(port: str) -> str:
        """Fetch a port's tide table."""
        record(effects, f"fetch-{port}")
        if stop_at == f"fetch-{port}":
            await _stop_here(stop_at)
        return f"table of {port}"

    def executor(session_id):
        port = "brest" if session_id.endswith(".1") else "dover"
        first = [] if restored else [ark.ScriptedTurn(tool_calls=[call("f1", "fetch", port=port)])]
        return ark.AgentRuntime(ark.ScriptedModel(first + [f"{port} done"]),
                                tools=[fetch], storage=store, session_id=session_id)

    team = ark.PlanAndExecute(planner=planner, executors={"fetcher": executor}, max_parallel=1, name="crash_plan")
    team.planners = planners  # the planner runtimes built (a test decides at the planner's own controller)
    return team
