"""Child process for the plan-review kill-and-restore test (tests/planner/test_plan_review.py).

Runs a review-mode session on a FileStateStorage until its plan waits for review,
prints ``AWAITING <session_id> <approval_id>``, then blocks until the parent kills it
with SIGKILL. ``restart_service`` appends a line to ``<directory>/effects.log`` each time
it runs (it must not run here: the plan is not approved).

Usage: python _plan_child.py <file|sqlite> <directory> <session_id>
(``sqlite`` keeps the session in ``<directory>/state.sqlite3``, a durable SQLiteStore).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import arknb as ark


def open_store(backend: str, directory: str | Path):
    """The store the parent opens too, on the same directory."""
    if backend == "sqlite":
        return ark.SQLiteStore(Path(directory) / "state.sqlite3")
    return ark.FileStateStorage(directory)


def effect_tools(directory: Path) -> list:
    """The tools of the session, counting side effects in a file (the parent uses them too)."""
    effects = directory / "effects.log"

    @ark.tool(read_only=True)
    def read_logs(service: str) -> str:
        """Read a service's recent log lines."""
        return f"{service}: out of memory at 03:12"

    @ark.tool
    def restart_service(service: str) -> str:
        """Restart a service."""
        with effects.open("a") as f:
            f.write(f"restart {service}\n")
        return f"{service} restarted"

    return [read_logs, restart_service]


async def main(backend: str, directory: str, session_id: str) -> None:
    folder = Path(directory)
    plan = [{"content": "Read the logs", "status": "pending"}, {"content": "Restart the service", "status": "pending"}]
    model = ark.ScriptedModel([
        ark.ScriptedTurn(text="Let me look first.", tool_calls=[
            ark.ToolCall(id="c1", name="restart_service", arguments_json='{"service": "api"}'),
            ark.ToolCall(id="c2", name="read_logs", arguments_json='{"service": "api"}', index=1)]),
        ark.ScriptedTurn(text="My plan.", tool_calls=[
            ark.ToolCall(id="t1", name="write_todos", arguments_json=json.dumps({"todos": plan}))]),
    ])
    runtime = ark.AgentRuntime(model, tools=effect_tools(folder), storage=open_store(backend, folder),
                               session_id=session_id, plan_mode=ark.PlanMode.REVIEW)
    result = await runtime.run("The api service is down; fix it.")
    review = runtime.controller.get_pending_plan_review()
    if result.stop_reason != "awaiting_approval" or review is None:
        print(f"UNEXPECTED {result.stop_reason} {result.error}", flush=True)
        return
    print(f"AWAITING {runtime.session_id} {review.approval_id}", flush=True)
    await asyncio.Event().wait()  # until SIGKILL


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
