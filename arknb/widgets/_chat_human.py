"""A graph run's questions for a person, in a chat or a GraphWidget (DESIGN §16).

``graph_action`` turns a card's message (``answer_human``, ``decide_graph``) into the
controller call; :class:`GraphCards` keeps a chat's ``humans`` trait equal to what a
followed run waits for (``ChatWidget.follow_graph(run)``), so the chat shows the
question with its form next to its own approval cards (``js/src/chat_human.js``).
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable

from ..events import EventTypes
from ._base import spawn
from ._payload import error_text

__all__ = ["GRAPH_ACTIONS", "GraphCards", "graph_action"]

GRAPH_ACTIONS = frozenset({"answer_human", "decide_graph"})
_EVENTS = (EventTypes.GRAPH_STEP_STARTED, EventTypes.GRAPH_STEP_FINISHED, EventTypes.GRAPH_WAITING)


def graph_action(controller: Any, content: dict[str, Any]) -> Awaitable[Any] | None:
    """The controller call a card's message asks for (None: not a graph card's message)."""
    kind, item_id = content.get("type"), str(content.get("item_id") or "")
    if kind == "answer_human":
        return controller.answer_human(item_id, content.get("value"))
    if kind != "decide_graph":
        return None
    value = content.get("value")
    calls = {"rerun": lambda: controller.rerun(item_id),
             "done": lambda: controller.mark_done(item_id, value),
             "failed": lambda: controller.mark_failed(item_id, str(value or "marked failed")),
             "approve": lambda: controller.approve(item_id),
             "deny": lambda: controller.deny(item_id, value)}
    call = calls.get(str(content.get("choice")))
    return call() if call is not None else None


class GraphCards:
    """Keeps ``widget.humans`` current for one followed graph run and answers its cards."""

    def __init__(self, widget: Any, run: Any) -> None:
        self.widget = widget
        self.run = run
        self._tasks: set[asyncio.Future] = set()
        self._stops = [run.watch(self.refresh)] + [run.bus.subscribe(t, lambda _e: self.refresh()) for t in _EVENTS]
        self.refresh()

    def refresh(self) -> None:
        self.widget.humans = [item.to_dict() for item in self.run.pending]

    def handle(self, content: dict[str, Any]) -> None:
        action = graph_action(self.run.controller, content)
        if action is not None:
            spawn(self._act(action), self._tasks, self._refused)

    async def _act(self, action: Awaitable[Any]) -> None:
        self.widget.error = ""
        await action
        self.refresh()

    def _refused(self, exc: BaseException) -> None:
        self.widget.error = error_text(exc)
        self.refresh()
        self.widget.send_state("humans")  # the front end disabled the card's buttons

    def close(self) -> None:
        for stop in self._stops:
            stop()
        self._stops.clear()
