"""PlanMode: whether the model keeps a plan, and whether a person reviews it (DESIGN §14)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from ..domain import invalid_argument

__all__ = ["PlanMode"]


class PlanMode(StrEnum):
    """``AgentRuntime(..., plan_mode=...)``.

    * ``OFF``: no planning tool (the default).
    * ``AUTO``: the model keeps a todo list with the built-in ``write_todos`` tool.
    * ``REVIEW``: as ``AUTO``, and a new plan pauses the run until a person approves or
      rejects it (``runtime.controller.approve_plan()`` / ``reject_plan(reason)``); until
      a plan is approved only tools declared ``@ark.tool(read_only=True)`` run.
    """

    OFF = "off"
    AUTO = "auto"
    REVIEW = "review"

    @classmethod
    def parse(cls, value: Any) -> PlanMode:
        """``value`` as a PlanMode (its member or its string value).

        Raises:
            ArkError: ``invalid_argument`` for anything else.
        """
        try:
            return cls(value)
        except ValueError:
            raise invalid_argument(f"plan_mode must be PlanMode.OFF, AUTO or REVIEW ('off', 'auto', 'review'), "
                                   f"got {value!r}") from None
