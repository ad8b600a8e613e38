"""Child process for the crash test: records a run whose third model call never ends.

Prints ``CALL3`` (flushed) when the third model call starts; the parent then kills
it with SIGKILL while that call is in flight.
"""

from __future__ import annotations

import asyncio
import sys

import arknb as ark
import arknb.eval as ev


@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def main(path: str) -> None:
    model = ark.ScriptedModel([
        ark.ScriptedTurn(text="first", tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]),
        ark.ScriptedTurn(text="second", tool_calls=[ark.ToolCall(id="c2", name="add", arguments_json='{"a": 3, "b": 4}')]),
        ark.ScriptedTurn(text=["never ", "finished"] * 10, chunk_delay=60),
    ])
    runtime = ark.AgentRuntime(ev.Recorder(model, path), tools=[add])

    @runtime.hooks.before_model_call
    def announce(ctx):
        if ctx.turn == 3:
            print("CALL3", flush=True)

    await runtime.run("go")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
