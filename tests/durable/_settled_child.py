"""Child process of tests/durable/test_settled_in_doubt.py: one batch of ``stage`` (c1,
defers itself to a person), ``note`` (c2) and ``slow`` (c3). It prints ``READY`` once
``slow`` runs; the parent kills it once c1 and c2 have their results committed. Every
execution appends ``<tool>`` to ``<dir>/effects.log``; run again (after the restore)
``stage`` carries out what it staged instead of deferring.

Usage: python _settled_child.py <dir>
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import arknb as ark


def _call(call_id: str, name: str, **arguments) -> ark.ToolCall:
    return ark.ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments), index=int(call_id[1:]) - 1)


TURN = ark.ScriptedTurn(tool_calls=[_call("c1", "stage", n=1), _call("c2", "note", n=2), _call("c3", "slow", n=3)])


def make_tools(directory: str | Path, *, first_process: bool) -> list:
    folder = Path(directory)

    def record(tool: str) -> None:
        with (folder / "effects.log").open("a") as log:
            log.write(f"{tool}\n")

    @ark.tool
    def stage(n: int, ctx: ark.ToolContext) -> str:
        """Stage a change a person confirms."""
        record("stage")
        return ctx.defer("confirm the staged change") if first_process else "staged change applied"

    @ark.tool
    def note(n: int) -> str:
        """Write a note."""
        record("note")
        return "noted"

    @ark.tool
    async def slow(n: int) -> str:
        """Take a while."""
        record("slow")
        if first_process:
            print("READY", flush=True)
            await asyncio.Event().wait()  # until SIGKILL
        return "slow done"

    return [stage, note, slow]


async def main(directory: str) -> None:
    store = ark.SQLiteStore(Path(directory) / "arknb.sqlite3")
    runtime = ark.AgentRuntime(ark.ScriptedModel([TURN]), tools=make_tools(directory, first_process=True),
                               storage=store, session_id="s1")
    result = await runtime.run("go")
    print(f"UNEXPECTED {result.stop_reason}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
