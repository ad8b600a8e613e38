"""What the eval tests share: a small agent, its scripted model, and event recording."""

from __future__ import annotations

from pathlib import Path

import arknb as ark
from arknb import AgentEvent, EventTypes


@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def add_model(*, final: str = "It is 3.", b: int = 2, usage: bool = True) -> ark.ScriptedModel:
    """Two model calls: one calling add(1, b), then the answer."""
    return ark.ScriptedModel([
        ark.ScriptedTurn(text=["Let me ", "add."],
                         tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json=f'{{"a": 1, "b": {b}}}')],
                         usage=ark.Usage(input_tokens=10, output_tokens=5) if usage else None),
        ark.ScriptedTurn(text=[final[:5], final[5:]], usage=ark.Usage(input_tokens=20, output_tokens=3) if usage else None),
    ])


def record(runtime: ark.AgentRuntime) -> list[AgentEvent]:
    """Every event the runtime publishes from now on."""
    events: list[AgentEvent] = []
    runtime.bus.subscribe(EventTypes.ANY, events.append)
    return events


def types(events: list[AgentEvent]) -> list[str]:
    """The event-type transcript."""
    return [e.type for e in events]


async def run_add(model, *, tools=(add,), prompt: str = "What is 1 + 2?", **options):
    """Run the add agent on ``model``; returns (result, events)."""
    runtime = ark.AgentRuntime(model, tools=list(tools), **options)
    events = record(runtime)
    result = await runtime.run(prompt)
    return result, events


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()
