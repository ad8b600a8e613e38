"""The built-in ``write_todos`` tool: its argument schema, and the texts the model reads.

The model sends the whole list on every call (status ``pending | in_progress |
completed | cancelled``); the planner replaces ``state.plan`` with it. The schema the
model sees comes from :class:`Todo` through the usual ``@ark.tool`` machinery.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ..domain import ToolCall
from ..state import Plan, PlanItem

__all__ = ["MAX_TODOS", "Todo", "TodoList", "WRITE_TODOS", "WRITE_TODOS_DESCRIPTION", "items_of", "parse_todos",
           "render", "summary"]

WRITE_TODOS = "write_todos"
MAX_TODOS = 50


class Todo(BaseModel):
    """One item of the todo list, as the model writes it."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, max_length=2000,
                         description="What to do, as a short imperative sentence.")
    status: Literal["pending", "in_progress", "completed", "cancelled"] = Field(
        default="pending", description="pending (not started), in_progress (working on it now), completed, "
                                       "or cancelled (no longer needed).")


TodoList = Annotated[list[Todo], Field(min_length=1, max_length=MAX_TODOS)]

WRITE_TODOS_DESCRIPTION = (
    "Write the todo list for the current task: the whole list, every time (it replaces the previous one). "
    "Use it for tasks with several steps: write the plan before you start, then keep it current — mark an "
    "item in_progress when you start it and completed as soon as it is done, or cancelled if it no longer "
    "applies. Call it at most once per turn. To drop the plan, mark its items cancelled.")

_ADAPTER: TypeAdapter[list[Todo]] = TypeAdapter(TodoList)


def parse_todos(call: ToolCall) -> tuple[PlanItem, ...] | None:
    """The plan items a ``write_todos`` call asks for, or None if its arguments are invalid
    (the tool then answers ``tool_arguments_invalid`` with the details)."""
    try:
        arguments: Any = call.arguments
        todos = _ADAPTER.validate_python(arguments.get("todos"))
        return items_of(todos)
    except (ValidationError, AttributeError, ValueError, TypeError):
        return None
    except Exception:  # ArkError for arguments that are not a JSON object
        return None


def items_of(todos: list[Todo]) -> tuple[PlanItem, ...]:
    """Validated todos as plan items."""
    return tuple(PlanItem(content=t.content, status=t.status) for t in todos)


def summary(plan: Plan) -> str:
    """``3 items: 1 completed, 1 in progress, 1 pending`` (statuses with no item left out)."""
    counts = plan.counts()
    parts = [f"{n} {status.replace('_', ' ')}" for status, n in counts.items() if n]
    return f"{len(plan.items)} item{'s' if len(plan.items) != 1 else ''}: " + ", ".join(parts)


def render(plan: Plan) -> str:
    """The plan as a checklist for the system prompt."""
    marks = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}
    return "\n".join(f"{marks[item.status.value]} {item.content}" for item in plan.items)
