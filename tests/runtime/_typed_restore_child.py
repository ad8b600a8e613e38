"""Child of tests/runtime/test_typed_restore.py: one process pauses a run asked for a typed
answer per run; another, whose runtime has no output_type, restores it and approves.

Usage: python -m tests.runtime._typed_restore_child <pause|approve|approve-without-type> <dir>
``approve`` imports the module that defines the type (as a user's new process would);
``approve-without-type`` does not, and prints the error the approval got.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import arknb as ark


@ark.tool(risk="dangerous")
def wipe(path: str) -> str:
    """Wipe a folder."""
    return f"wiped {path}"


async def main(mode: str, folder: Path) -> None:
    store = ark.SQLiteStore(folder / "s.sqlite3")
    if mode == "pause":
        from tests.runtime._typed_kit import Capital
        turns = [ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="w1", name="wipe", arguments_json='{"path": "/x"}')])]
        runtime = ark.AgentRuntime(ark.ScriptedModel(turns), tools=[wipe], storage=store, session_id="typed")
        result = await runtime.run("Wipe, then the capital.", output_type=Capital)
        print(json.dumps({"stop": result.stop_reason.value}))
        await runtime.aclose()
        return
    if mode == "approve":
        import tests.runtime._typed_kit  # noqa: F401  (the user's own module, imported again)
    answer = {"country": "France", "city": "Paris"}
    runtime = await ark.AgentRuntime.restore("typed", storage=store, tools=[wipe], model=ark.ScriptedModel(
        ['{"country": "France", "city": 7}', json.dumps(answer)]))
    [item] = runtime.controller.list_pending_approvals()
    decided = await runtime.controller.approve(item.approval_id)
    if not decided.ok:
        print(json.dumps({"ok": False, "code": decided.error.code, "message": decided.error.message,
                          "pending": len(runtime.controller.list_pending_approvals())}))
        await runtime.aclose()
        return
    result = await runtime.current_run.wait()
    print(json.dumps({"ok": True, "stop": result.stop_reason.value, "type": type(result.output).__name__,
                      "output": result.output.model_dump() if result.output is not None else None,
                      "requests": len(runtime.model.requests),
                      "asked": [r.output.name if r.output else None for r in runtime.model.requests]}))
    await runtime.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
