"""GraphWidget: a graph run drawn live, with cards for what waits for a person (DESIGN §16).

The picture is laid out and coloured in the kernel (:mod:`arknb.graphs.drawing`) and
travels as one SVG string trait; it changes only when a step starts, ends or waits, so
the traffic is a few messages per step. The front end (``js/src/graph.js``) shows it,
the run's status and a card per pending item (``js/src/chat_human.js``): a human node's
question with a form, or an in-doubt step's three choices. Displayed, it is followed by a
static HTML copy (the SVG and the questions) that a saved notebook keeps.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anywidget
import traitlets

from ..domain import invalid_argument
from ..events import EventTypes
from ..graphs import Graph, GraphRun
from ..graphs.drawing import graph_svg
from ._base import bundle, spawn
from ._chat_human import graph_action
from ._payload import error_text
from ._static_html import StaticTwin, esc, new_static_id, static_block

__all__ = ["GraphWidget"]

_GRAPH_EVENTS = (EventTypes.GRAPH_STEP_STARTED, EventTypes.GRAPH_STEP_FINISHED, EventTypes.GRAPH_WAITING)


class GraphWidget(anywidget.AnyWidget):
    """A graph (static) or a graph run (live): nodes coloured by status, the path taken
    in bold, the node waiting for a person outlined, and answer cards.

    Args:
        target: a :class:`~arknb.GraphRun` (live) or a :class:`~arknb.Graph` (its shape).

    Example:
        >>> run = await g.start(Triage(question="..."), storage=store)   # doctest: +SKIP
        >>> ark.GraphWidget(run)                                           # doctest: +SKIP
    """

    _esm = bundle("graph.js")
    _css = bundle("graph.css")

    svg = traitlets.Unicode("").tag(sync=True)
    """The drawing (built in the kernel from escaped names only)."""
    status = traitlets.Unicode("").tag(sync=True)
    pending = traitlets.List().tag(sync=True)
    """What waits for a person (``PendingStep.to_dict()`` each)."""
    error = traitlets.Unicode("").tag(sync=True)
    """Why the run failed, or the last refused answer."""
    graph_name = traitlets.Unicode("").tag(sync=True)
    static_id = traitlets.Unicode("").tag(sync=True)

    def __init__(self, target: GraphRun | Graph, **kwargs: Any) -> None:
        if not isinstance(target, (GraphRun, Graph)):
            raise invalid_argument(f"GraphWidget takes a GraphRun or a Graph, got {type(target).__name__}")
        run = target if isinstance(target, GraphRun) else None
        graph = target.graph if run is not None else target
        super().__init__(static_id=new_static_id(), graph_name=graph.name, **kwargs)
        self._run, self._graph = run, graph
        self._tasks: set[asyncio.Future] = set()
        self._twin = StaticTwin(self, self._static_html)
        self._stops: list[Any] = []
        if run is not None:
            self._stops.append(run.watch(self.refresh))
            for etype in _GRAPH_EVENTS:
                self._stops.append(run.bus.subscribe(etype, lambda _e: self.refresh()))
        self.on_msg(self._on_msg)
        self.refresh()

    def refresh(self) -> None:
        """Redraw from the run's state (the widget does this on every step by itself)."""
        run = self._run
        snapshot = run.snapshot() if run is not None else None
        self.svg = graph_svg(self._graph.describe(), run=snapshot)
        if run is not None:
            self.status = run.status.value
            self.pending = [item.to_dict() for item in run.pending]
            failed = run.error if run.status == "failed" else None
            if failed is not None:
                self.error = failed.message
        self._twin.changed(settled=self.status not in ("running", ""))

    # -- browser -> kernel ------------------------------------------------------------

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any = None) -> None:
        if not isinstance(content, dict) or self._run is None:
            return
        action = graph_action(self._run.controller, content)
        if action is not None:
            spawn(self._act(action), self._tasks, self._refused)

    async def _act(self, action: Any) -> None:
        self.error = ""
        await action
        self.refresh()

    def _refused(self, exc: BaseException) -> None:
        self.error = error_text(exc)
        self.refresh()  # the cards come back (the front end disabled them while waiting)
        self.send_state("pending")

    # -- display -----------------------------------------------------------------------

    def _ipython_display_(self) -> None:
        self._twin.display()

    def _static_html(self) -> str:
        waiting = "".join(f'<li><b>{esc(item["node"])}</b> ({esc(item["kind"])}): {esc(item["question"])}</li>'
                          for item in self.pending)
        status = f"<div>status: {esc(self.status)}</div>" if self.status else ""
        body = f"{self.svg}{status}" + (f"<ul>{waiting}</ul>" if waiting else "")
        return static_block(self.static_id, body)

    def close(self) -> None:
        for stop in self._stops:
            stop()
        self._stops.clear()
        self._twin.close()
        super().close()

    def __repr__(self) -> str:
        return f"GraphWidget({self.graph_name!r}, status={self.status!r})"
