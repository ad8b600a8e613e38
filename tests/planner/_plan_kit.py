"""Shared pieces of the planner tests: tools that count what ran, todo calls, a runtime."""

from __future__ import annotations

import json
from typing import Any

import arknb as ark
from arknb import ScriptedModel, ScriptedTurn, ToolCall

__all__ = ["PlanTools", "todos", "tool_call", "review_runtime"]


def tool_call(call_id: str, name: str, index: int = 0, **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments), index=index)


def todos(call_id: str, *items: str | tuple[str, str], index: int = 0) -> ToolCall:
    """A write_todos call; an item is its content, or (content, status)."""
    listed = [{"content": i, "status": "pending"} if isinstance(i, str) else {"content": i[0], "status": i[1]}
              for i in items]
    return tool_call(call_id, "write_todos", index, todos=listed)


class PlanTools:
    """``read_logs`` (read-only) and ``restart_service`` (changes things); ``ran`` records calls."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        ran = self.ran

        @ark.tool(read_only=True)
        def read_logs(service: str) -> str:
            """Read a service's recent log lines."""
            ran.append(f"read_logs:{service}")
            return f"{service}: out of memory at 03:12"

        @ark.tool
        def restart_service(service: str) -> str:
            """Restart a service."""
            ran.append(f"restart_service:{service}")
            return f"{service} restarted"

        self.all = [read_logs, restart_service]


def review_runtime(turns: list, tools: PlanTools | None = None, **options: Any):
    tools = tools or PlanTools()
    model = ScriptedModel(turns)
    runtime = ark.AgentRuntime(model, tools=tools.all, plan_mode=ark.PlanMode.REVIEW, **options)
    return runtime, model, tools


def first_plan_turn() -> ScriptedTurn:
    return ScriptedTurn(text="Here is my plan.", tool_calls=[todos("t1", "Read the logs", "Restart the service")])
