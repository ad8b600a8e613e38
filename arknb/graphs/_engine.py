"""The engine that advances a graph run step by step and saves each step's outcome.

A run moves in *steps* (LangGraph's supersteps): the nodes of the frontier run
concurrently; when all are done their updates are merged into the state in the
frontier's order, the edges and routes of each node name the next frontier, and the
new checkpoint is committed. A node that waits for a person (a human node, a step in
doubt, an agent node's approval) holds its step: the others finish, the run saves
itself ``awaiting_human``, and answering the last item continues the same step, where
everything already finished is reused and never runs again (DESIGN §16).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from pydantic import BaseModel

from arknb.domain import ArkError, ErrorCode, ErrorInfo, ErrorLayer, invalid_argument
from arknb.durable import Attempt, Operation, OperationPhase, OperationStatus
from arknb.events import AgentEvent, EventBus, EventTypes

from ._log import StepLog, new_op_id
from ._steps import NodeOutcome, StepRunner
from .reducers import merge_update
from .run import GraphStatus, PendingStep

__all__ = ["Engine", "END", "START"]

START = "__start__"
END = "__end__"
PATH_KEPT = 20
"""How many of the latest steps a checkpoint keeps in ``path`` (each node's last status is
kept whatever the run's length): a step's save costs the same at step 10 and 10,000."""
_TERMINAL = (GraphStatus.COMPLETED, GraphStatus.FAILED, GraphStatus.CANCELLED)


class Engine:
    """One graph run's engine (see the module docstring)."""

    def __init__(self, graph: Any, log: StepLog, run_id: str) -> None:
        self.graph = graph
        self.log = log
        self.run_id = run_id
        self.bus = EventBus()
        self.status = GraphStatus.RUNNING
        self.state: BaseModel | None = None
        self.version = 0
        self.step = 0
        self.frontier: list[str] = []
        self.path: list[list[Any]] = []
        self.node_status: dict[str, str] = {}
        self.taken: list[list[str]] = []
        self.pending: list[PendingStep] = []
        self.error: ErrorInfo | None = None
        self.task: asyncio.Task | None = None
        self.resuming = False
        self.closed = False
        self.children: dict[str, Any] = {}      # agent node -> runtime waiting for a person
        self.started_at = time.time()
        self.saved: dict[str, Any] | None = None
        self.saved_pending: list[dict[str, Any]] = []
        self.watchers: list[Any] = []       # called after each checkpoint commit (observers: a drawing)
        self._decisions = asyncio.Lock()
        self.steps = StepRunner(self)

    # -- checkpoint ----------------------------------------------------------------

    def checkpoint(self) -> dict[str, Any]:
        return {"graph": self.graph.name, "run_id": self.run_id, "status": self.status.value,
                "state": self.state.model_dump(mode="json"), "version": self.version, "step": self.step,
                "frontier": list(self.frontier), "path": self.path[-PATH_KEPT:], "node_status": self.node_status,
                "taken": self.taken,
                "pending": [item.to_dict() for item in self.pending],
                "error": self.error.model_dump(mode="json") if self.error is not None else None,
                "started_at": self.started_at}

    def load(self, saved: dict[str, Any]) -> None:
        self.status = GraphStatus(saved["status"])
        self.state = self.graph.state_model.model_validate(saved["state"])
        self.version = int(saved["version"])
        self.step = int(saved["step"])
        self.frontier = list(saved["frontier"])
        self.path = [list(entry) for entry in saved.get("path", ())]
        self.node_status = dict(saved.get("node_status") or {n: st for _, n, st in self.path})
        self.taken = [list(edge) for edge in saved.get("taken", ())]
        self.pending = [PendingStep.from_dict(item) for item in saved.get("pending", ())]
        self.saved_pending = [item.to_dict() for item in self.pending]
        self.error = ErrorInfo.model_validate(saved["error"]) if saved.get("error") else None
        self.started_at = float(saved.get("started_at", time.time()))
        self.resuming = True

    def snapshot(self) -> dict[str, Any]:
        """What a drawing needs: each node's status, the edges taken, who waits."""
        node_status: dict[str, str] = dict(self.node_status)
        waiting = sorted({item.node for item in self.pending})
        if self.status is GraphStatus.RUNNING:
            for node in self.frontier:
                node_status[node] = "running"
        for node in waiting:
            node_status[node] = "waiting"
        if self.status is GraphStatus.COMPLETED:
            node_status[END] = "completed"
        node_status[START] = "completed"
        return {"status": self.status.value, "node_status": node_status, "taken": [list(e) for e in self.taken],
                "waiting": waiting, "step": self.step, "run_id": self.run_id}

    # -- events ----------------------------------------------------------------------

    def event(self, event_type: str, payload: dict[str, Any], run_id: str | None = None) -> AgentEvent:
        self.log.sequence += 1
        return AgentEvent(f"ev_{new_op_id()[3:]}", event_type, self.log.session_id, run_id or self.run_id,
                          self.log.sequence, time.time(), {"graph": self.graph.name, **payload})

    async def write(self, operations=(), events=(), *, checkpoint: bool = False, sync: bool = True,
                    soon: bool = False) -> None:
        """Commit, then publish what was committed (saved first, then announced); ``soon``
        publishes on the loop's next turn (so a listener subscribed right after
        ``Graph.start`` returns hears the first step begin)."""
        events = tuple(events)
        saved = self.checkpoint() if checkpoint and self.log.keeps_checkpoints else None
        await self.log.write(operations, events, saved, sync=sync)
        if soon and events:
            asyncio.get_running_loop().call_soon(lambda: [self.bus.publish(event) for event in events])
        else:
            for event in events:
                self.bus.publish(event)
        if checkpoint:
            self.notify()

    def notify(self) -> None:
        for watcher in list(self.watchers):
            try:
                watcher()
            except Exception:  # an observer never breaks the run
                pass

    # -- running ----------------------------------------------------------------------

    async def begin(self, state: BaseModel) -> None:
        self.state = state
        self.step = 1
        self.frontier = self.graph.successors(START, state)
        self.taken = [[START, node] for node in self.frontier]
        prepared = [p for p in (self.steps.prepare(self.graph.nodes[n], 1) for n in self.frontier) if p is not None]
        await self.write([op for op, _ in prepared], [ev for _, ev in prepared], checkpoint=True, soon=True)

    def start(self) -> None:
        if self.status is not GraphStatus.RUNNING or (self.task is not None and not self.task.done()):
            return
        self.task = asyncio.get_running_loop().create_task(self._drive(), name=f"graph:{self.run_id}")

    async def _drive(self) -> None:
        try:
            while self.status is GraphStatus.RUNNING and self.frontier:
                await self._one_step()
            if self.status is GraphStatus.RUNNING:
                self.status = GraphStatus.COMPLETED
                await self.write(checkpoint=True)
        except asyncio.CancelledError:
            self.status = GraphStatus.CANCELLED
            self.error = ArkError(ErrorLayer.CANCELLED, ErrorCode.CANCELLED,
                                  f"graph run {self.run_id!r} was cancelled").info()
            with contextlib.suppress(Exception):
                await asyncio.shield(self.write(checkpoint=True))
        except ArkError as exc:  # the store refused (lease_lost, state_save_failed): nothing more is written
            self.status = GraphStatus.FAILED
            self.error = exc.info()
        finally:
            if self.status in _TERMINAL:
                for runtime in self.children.values():
                    with contextlib.suppress(Exception):
                        await runtime.aclose()
                self.children.clear()
                await self.close()

    async def _one_step(self) -> None:
        step, nodes = self.step, list(self.frontier)
        resuming, self.resuming = self.resuming, False
        single = len(nodes) == 1
        if single:
            outcomes = [await self.steps.run(self.graph.nodes[nodes[0]], step, resuming, True)]
        else:
            gate = asyncio.Semaphore(getattr(self.graph, "max_parallel", None) or len(nodes))

            async def one(name: str) -> NodeOutcome:
                async with gate:
                    return await self.steps.run(self.graph.nodes[name], step, resuming, False)
            outcomes = list(await asyncio.gather(*(one(name) for name in nodes)))
        held = [op for outcome in outcomes for op in outcome.ops]
        waiting = [item for outcome in outcomes for item in outcome.waiting]
        if waiting:
            self.status = GraphStatus.AWAITING_HUMAN
            unchanged = resuming and not held and [i.to_dict() for i in waiting] == self.saved_pending
            self.pending = waiting
            if unchanged:  # restored while it waits: nothing new to save or announce (a restore only reads)
                self.notify()
                return
            events = [self.event(EventTypes.GRAPH_WAITING, {"node": item.node, "step": step, "item_id": item.item_id,
                                                            "kind": item.kind, "question": item.question})
                      for item in waiting]
            await self.write(held, events, checkpoint=True)
            return
        failed = next((outcome for outcome in outcomes if outcome.error is not None), None)
        finished = []
        if failed is None:
            state = self.state
            try:
                for name, outcome in zip(nodes, outcomes):
                    if outcome.update:
                        state = merge_update(state, outcome.update, name)
                        self.version += 1
                nexts: list[str] = []
                taken: list[list[str]] = []
                for name in nodes:
                    for target in self.graph.successors(name, state):
                        taken.append([name, target])
                        if target != END and target not in nexts:
                            nexts.append(target)
            except ArkError as exc:
                failed = NodeOutcome(error=exc.info(), node=getattr(exc, "node", None))
            else:
                self.state = state
                self.taken.extend(edge for edge in taken if edge not in self.taken)
        for name, outcome in zip(nodes, outcomes):
            status = "failed" if outcome.error is not None else "completed"
            self.path.append([step, name, status])
            self.node_status[name] = status
            finished.append(self.event(EventTypes.GRAPH_STEP_FINISHED, {
                "node": name, "step": step, "step_id": outcome.step_id, "status": status,
                "update": outcome.update, "error": outcome.error.model_dump(mode="json") if outcome.error else None}))
        if failed is not None:
            self.status = GraphStatus.FAILED
            self.error = failed.error
            await self.write(held, finished, checkpoint=True)
            return
        self.step = step + 1
        self.frontier = nexts
        for name in nexts:  # the next step's function and map nodes begin in this same commit
            prepared = self.steps.prepare(self.graph.nodes[name], self.step)
            if prepared is not None:
                held.append(prepared[0])
                finished.append(prepared[1])
        await self.write(held, finished, checkpoint=True)

    # -- people ----------------------------------------------------------------------

    async def answer(self, item: PendingStep, value: Any) -> None:
        node = self.graph.nodes[item.node]
        answer = node.validate(value)
        async with self._decisions:
            self._check_waiting(item)
            op = await self.log.find(item.item_id)
            if op is None or op.completed:
                raise invalid_argument(f"human question {item.item_id!r} was answered already")
            update = {node.output: answer}
            result = self.steps.to_json(update, node.name)
            done = op.advance(OperationPhase.COMPLETED, at=time.time(), status=OperationStatus.SUCCEEDED,
                              raw_result=result, effective_result=result, result_source="person")
            await self.log.write([done])
            self._settled(item)

    async def decide(self, item: PendingStep, choice: str, value: Any) -> None:
        async with self._decisions:
            self._check_waiting(item)
            if "/" in item.item_id and item.kind != "in_doubt_item":
                await self.steps.decide_child(item, choice, value)
            else:
                await self.steps.decide_in_doubt(item, choice, value)
            self._settled(item)

    def child_decided(self, node: str) -> None:
        """An agent node's child decided something at its own controller: list what it
        still waits for, and go on once it waits for nothing and runs again."""
        held = self.children.get(node)
        if held is None or self.status is not GraphStatus.AWAITING_HUMAN or self.closed:
            return
        mine = [item for item in self.pending if item.node == node and "/" in item.item_id]
        if mine:
            still = self.steps.child_items(node, mine[0].step, held[0])
            self.pending = [item for item in self.pending if item not in mine] + still
        if not self.pending and held[0].current_run is not None:
            self.status = GraphStatus.RUNNING
            self.resuming = True
            self.start()
        self.notify()

    def _check_waiting(self, item: PendingStep) -> None:
        if self.closed:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.RUNTIME_CLOSED,
                           f"graph run {self.run_id!r} was closed here; restore it with Graph.restore(...)")
        if item not in self.pending:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.APPROVAL_NOT_FOUND,
                           f"{item.item_id!r} of graph run {self.run_id!r} was decided already")

    def _settled(self, item: PendingStep) -> None:
        self.pending = [other for other in self.pending if other != item]
        still = self.steps.still_waiting(item)
        if still:
            self.pending.extend(s for s in still if s not in self.pending)
        if not self.pending:  # the step under way continues; what finished is reused
            self.status = GraphStatus.RUNNING
            self.resuming = True
            self.start()
        self.notify()

    # -- ending ---------------------------------------------------------------------

    def cancel(self) -> bool:
        if self.status in _TERMINAL:
            return False
        if self.task is not None and not self.task.done():
            return self.task.cancel()
        self.status = GraphStatus.CANCELLED  # waiting for a person: nothing runs, save the end
        self.pending = []
        self.task = asyncio.get_running_loop().create_task(self._save_end())
        return True

    async def _save_end(self) -> None:
        try:
            await self.write(checkpoint=True)
        finally:
            await self.close()

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for runtime in self.children.values():
            with contextlib.suppress(Exception):
                await runtime.aclose()
        await self.log.close()


def attempt_now(number: int) -> Attempt:
    return Attempt(number=number, started_at=time.time())


def new_step_op(engine: Engine, purpose_key: str, raw_input: dict[str, Any], *, scope: str | None = None) -> Operation:
    now = time.time()
    return Operation(operation_id=new_op_id(), session_id=engine.log.session_id, run_id=scope or engine.run_id,
                     kind="node", purpose_key=purpose_key, request_event_id=f"rq_{new_op_id()[3:]}",
                     phase=OperationPhase.EXECUTING, raw_input=raw_input, effective_input=raw_input,
                     attempts=(Attempt(number=1, started_at=now),), idempotency_key=purpose_key,
                     created_at=now, updated_at=now)
