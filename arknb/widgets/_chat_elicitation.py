"""The chat's elicitation cards (DESIGN §15): a tool's server asks a person mid-call.

The questions come from ``controller.list_elicitations()`` as items of kind
``"elicitation"`` (their ``detail`` holds the ``message`` and the form's ``schema``); the
front end (js/src/chat_elicitation.js) renders the schema as a small form with Accept /
Decline / Cancel and sends ``{"type": "elicit", "approval_id", "action", "content"}``.
"""

from __future__ import annotations

from typing import Any

from ._chat_approvals import approval_dict
from ._payload import error_text

__all__ = ["ELICIT_ACTIONS", "answer_elicitation", "elicitation_rows"]

ELICIT_ACTIONS = ("accept", "decline", "cancel")


def elicitation_rows(runtime: Any) -> list[dict[str, Any]]:
    """One card row per question waiting on ``runtime``'s controller."""
    if runtime is None:
        return []
    listing = getattr(runtime.controller, "list_elicitations", None)
    return [{**approval_dict(item), "kind": "elicitation"} for item in (listing() if callable(listing) else ())]


async def answer_elicitation(runtime: Any, approval_id: str, action: str, content: Any) -> tuple[bool, str | None]:
    """Answer a question through the controller; ``(ok, error text)``."""
    controller = runtime.controller
    if action == "accept":
        result = await controller.answer_elicitation(approval_id, dict(content or {}))
    elif action == "decline":
        result = await controller.decline_elicitation(approval_id)
    elif action == "cancel":
        result = await controller.cancel_elicitation(approval_id)
    else:
        return False, f"unknown elicitation action {action!r}"
    if bool(getattr(result, "ok", False)):
        return True, None
    return False, error_text(getattr(result, "error", None)) or "the runtime refused the answer"
