"""A graph run, what waits for a person in it, and the controller that answers.

:class:`GraphRun` is the handle ``Graph.run`` / ``Graph.start`` / ``Graph.restore``
return: its ``status`` (``running``, ``completed``, ``awaiting_human``, ``failed``,
``cancelled``), its typed ``state``, the ``path`` it took and, while it waits, the
:class:`PendingStep` items its :class:`GraphController` lists and answers.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from arknb.domain import ArkError, ErrorCode, ErrorInfo, ErrorLayer, invalid_argument
from arknb.events import EventBus

if TYPE_CHECKING:
    from ._engine import Engine
    from .graph import Graph

__all__ = ["GraphController", "GraphRun", "GraphStatus", "PendingStep"]


class GraphStatus(StrEnum):
    """Where a graph run stands."""

    RUNNING = "running"
    COMPLETED = "completed"
    AWAITING_HUMAN = "awaiting_human"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class PendingStep:
    """Something in a graph run that waits for a person.

    Attributes:
        item_id: answer or decide it with this id.
        kind: ``human`` (a human node's question: ``answer_human``), ``in_doubt`` (a
            step a crash interrupted that may not run twice: ``rerun`` / ``mark_done`` /
            ``mark_failed``), or an agent node's own pending item, named
            ``{node}/{approval_id}`` (``tool``, ``in_doubt``, ...: ``approve`` / ``deny``
            or the in-doubt choices).
        node: the node it belongs to.
        step: the step it belongs to.
        question: what the person is asked.
        schema: the JSON Schema of the expected answer (human nodes).
        detail: anything else the card shows (the tool call of an agent's approval).
    """

    item_id: str
    kind: str
    node: str
    step: int
    question: str = ""
    schema: dict[str, Any] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "kind": self.kind, "node": self.node, "step": self.step,
                "question": self.question, "schema": self.schema, "detail": self.detail}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PendingStep:
        return cls(str(data["item_id"]), str(data["kind"]), str(data["node"]), int(data["step"]),
                   str(data.get("question", "")), dict(data.get("schema") or {}), dict(data.get("detail") or {}))


class GraphRun:
    """One run of a :class:`~arknb.graphs.Graph`, live in this process.

    Attributes:
        run_id: the run's id (``Graph.restore(run_id, storage=...)`` reopens it).
        graph: the graph it runs.
        bus: its events (``graph.step_started``, ``graph.step_finished``,
            ``graph.waiting``, and the events of its agent nodes' runtimes, nested under
            their step).
        controller: answers its human nodes and decides its in-doubt steps.
    """

    def __init__(self, graph: Graph, engine: Engine) -> None:
        self.graph = graph
        self._engine = engine
        self.bus: EventBus = engine.bus
        self.controller = GraphController(self)

    @property
    def run_id(self) -> str:
        return self._engine.run_id

    @property
    def status(self) -> GraphStatus:
        """``running``, ``completed``, ``awaiting_human``, ``failed`` or ``cancelled``."""
        return self._engine.status

    @property
    def state(self) -> BaseModel:
        """The graph's state as of the last finished step (an instance of the graph's state model)."""
        return self._engine.state

    @property
    def state_version(self) -> int:
        """How many updates the state has merged."""
        return self._engine.version

    @property
    def step(self) -> int:
        """The number of the step under way, or of the last one."""
        return self._engine.step

    @property
    def frontier(self) -> tuple[str, ...]:
        """The nodes of the step under way (empty once it ended)."""
        return tuple(self._engine.frontier)

    @property
    def path(self) -> tuple[tuple[int, str, str], ...]:
        """Every step's nodes as ``(step, node, status)``, in order: the path taken (after a
        restore, the saved run's latest 20 steps, then the steps run since)."""
        return tuple((int(s), str(n), str(st)) for s, n, st in self._engine.path)

    @property
    def pending(self) -> tuple[PendingStep, ...]:
        """What waits for a person (empty unless ``awaiting_human``)."""
        return tuple(self._engine.pending)

    @property
    def error(self) -> ArkError | None:
        """Why a failed run failed (naming the node)."""
        info = self._engine.error
        return info.to_error() if isinstance(info, ErrorInfo) else None

    @property
    def done(self) -> bool:
        """True when no step of this run is under way in this process."""
        task = self._engine.task
        return task is None or task.done()

    async def wait(self) -> GraphRun:
        """Wait until the run stops (finished, failed, cancelled, or waiting for a person)."""
        task = self._engine.task
        if task is not None:
            await asyncio.shield(task)
        return self

    def __await__(self):
        return self.wait().__await__()

    def cancel(self) -> bool:
        """Cancel the run: the steps under way are cancelled and the run ends ``cancelled``."""
        return self._engine.cancel()

    async def aclose(self) -> None:
        """Give the run's store session up (its lease, on a durable store); the saved run
        stays as it is, to be restored."""
        await self._engine.close()

    def __repr__(self) -> str:
        extra = f", waiting for {len(self.pending)}" if self.pending else ""
        why = f", error={self._engine.error.code}" if self._engine.error is not None else ""
        return f"GraphRun({self.run_id!r}, graph={self.graph.name!r}, status={self.status.value!r}, step={self.step}{extra}{why})"

    def _repr_html_(self) -> str:
        from .drawing import graph_svg
        return graph_svg(self.graph.describe(), run=self.snapshot())

    def watch(self, callback: Any) -> Any:
        """Call ``callback()`` after every saved change of the run (an observer: what it
        raises is ignored); returns the function that stops it."""
        self._engine.watchers.append(callback)

        def stop() -> None:
            if callback in self._engine.watchers:
                self._engine.watchers.remove(callback)
        return stop

    def snapshot(self) -> dict[str, Any]:
        """Statuses for drawing: ``{"status", "node_status": {node: status}, "path": [[from, to], ...],
        "waiting": [node, ...], "step"}``."""
        return self._engine.snapshot()


class GraphController:
    """Answers what a graph run waits for (``run.controller``).

    Example:
        >>> item = run.controller.list_pending()[0]              # doctest: +SKIP
        >>> await run.controller.answer_human(item.item_id, True)  # doctest: +SKIP
        >>> await run.wait()                                      # doctest: +SKIP
    """

    def __init__(self, run: GraphRun) -> None:
        self._run = run

    def list_pending(self) -> list[PendingStep]:
        """Everything waiting for a person, human questions and in-doubt steps alike."""
        return list(self._run._engine.pending)

    def list_in_doubt(self) -> list[PendingStep]:
        """The steps (and agent nodes' calls) a crash left with an unknown fate."""
        return [item for item in self._run._engine.pending if item.kind == "in_doubt"]

    async def answer_human(self, item_id: str, value: Any) -> None:
        """Answer a human node; the graph continues in the background (``await run.wait()``).

        The answer is checked against the node's type and saved before the graph goes on.

        Raises:
            ArkError: ``human_answer_invalid`` (the node's type refuses ``value``; nothing
                is saved), ``approval_not_found`` (no human question with that id waits).
        """
        item = self._find(item_id, "human")
        await self._run._engine.answer(item, value)

    async def rerun(self, item_id: str) -> None:
        """Run an in-doubt step again."""
        await self._decide(item_id, "rerun", None)

    async def mark_done(self, item_id: str, update: Any = None) -> None:
        """Record that an in-doubt step ran: ``update`` (a dict of fields, or the result
        text of an agent's call) is what it produced."""
        await self._decide(item_id, "done", update)

    async def mark_failed(self, item_id: str, reason: str) -> None:
        """Record that an in-doubt step did not succeed: the run fails with ``reason``."""
        if not isinstance(reason, str):
            raise invalid_argument(f"reason must be a string, got {type(reason).__name__}")
        await self._decide(item_id, "failed", reason)

    async def approve(self, item_id: str) -> None:
        """Approve an agent node's pending tool call (``{node}/{approval_id}``)."""
        await self._decide(item_id, "approve", None)

    async def deny(self, item_id: str, reason: str | None = None) -> None:
        """Deny an agent node's pending tool call (``{node}/{approval_id}``)."""
        await self._decide(item_id, "deny", reason)

    async def _decide(self, item_id: str, choice: str, value: Any) -> None:
        item = self._find(item_id, None)
        await self._run._engine.decide(item, choice, value)

    def _find(self, item_id: str, kind: str | None) -> PendingStep:
        if not isinstance(item_id, str) or not item_id:
            raise invalid_argument(f"item_id must be a non-empty string, got {item_id!r}")
        for item in self._run._engine.pending:
            if item.item_id == item_id and (kind is None or item.kind == kind):
                return item
        waiting = ", ".join(i.item_id for i in self._run._engine.pending) or "nothing"
        what = "human question" if kind == "human" else "pending item"
        raise ArkError(ErrorLayer.RUNTIME, ErrorCode.APPROVAL_NOT_FOUND,
                       f"graph run {self._run.run_id!r} has no {what} {item_id!r} waiting (waiting: {waiting})")
