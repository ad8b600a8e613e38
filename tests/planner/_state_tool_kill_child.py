"""Child process of tests/planner/test_state_tool_kill.py.

One turn calls a built-in tool that changes the state (``activate_skill`` with
``skill``, ``write_todos`` with ``plan``) as c1 and ``slow`` as c2, on SQLiteStore.
``slow`` waits until c1's result is committed (raw_saved or later), prints ``READY`` and
blocks until SIGKILL: the batch never finishes, so no save after it is made.

Usage: python _state_tool_kill_child.py <directory> <skill|plan>
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import arknb as ark

NOTES = ark.Skill("notes", "Writes release notes.", "Write release notes as bullet points.")


def first_call(what: str) -> ark.ToolCall:
    if what == "skill":
        return ark.ToolCall(id="c1", name="activate_skill", arguments_json=json.dumps({"name": "notes"}), index=0)
    todos = [{"content": "Collect the changes", "status": "in_progress"}, {"content": "Write", "status": "pending"}]
    return ark.ToolCall(id="c1", name="write_todos", arguments_json=json.dumps({"todos": todos}), index=0)


def options(what: str) -> dict:
    return {"skills": [NOTES]} if what == "skill" else {"plan_mode": ark.PlanMode.AUTO}


async def main(directory: str, what: str) -> None:
    store = ark.SQLiteStore(Path(directory) / "arknb.sqlite3")

    @ark.tool
    async def slow(ctx: ark.ToolContext) -> str:
        """Take a while."""
        while True:
            op = await store.find_operation("s", f"{ctx.run_id}:c1")
            if op is not None and op.phase.rank >= ark.durable.OperationPhase.RAW_SAVED.rank:
                break
            await asyncio.sleep(0.01)
        print("READY", flush=True)
        await asyncio.Event().wait()  # until SIGKILL

    model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[
        first_call(what), ark.ToolCall(id="c2", name="slow", arguments_json="{}", index=1)])])
    runtime = ark.AgentRuntime(model, tools=[slow], storage=store, session_id="s", **options(what))
    result = await runtime.run("Prepare the release notes.")
    print(f"UNEXPECTED {result.stop_reason} {result.error}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
