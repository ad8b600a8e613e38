"""One node's part of a step: run it, or pick up what a crash or a person left of it.

For each node of the step under way the runner looks at the node's operation (only
when the step is being re-entered: after a restore or a person's answer):

=====================  ==============================================================
found                  what happens
=====================  ==============================================================
nothing                the node runs: ``executing`` is committed first
``completed``          its recorded update is reused; the node does not run again
``executing``          function / map item: runs again if ``idempotent=True``, else
                       it is in doubt (a person says ``rerun``, ``mark_done``,
                       ``mark_failed``); agent: its child session is resumed
``prepared`` (human)   the question still waits for its answer
=====================  ==============================================================
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_core import to_jsonable_python

from arknb.domain import ArkError, ErrorCode, ErrorInfo, ErrorLayer, invalid_argument
from arknb.durable import Attempt, Operation, OperationPhase, OperationStatus
from arknb.events import EventTypes

from .nodes import AgentNode, FunctionNode, HumanNode, MapNode, NodeContext, call_user
from .reducers import merge_update, update_of, update_to_json
from .run import PendingStep

if TYPE_CHECKING:
    from ._engine import Engine

__all__ = ["NodeOutcome", "StepRunner"]


@dataclass(slots=True)
class NodeOutcome:
    """What one node's part of a step came to."""

    update: dict[str, Any] = field(default_factory=dict)
    error: ErrorInfo | None = None
    waiting: list[PendingStep] = field(default_factory=list)
    ops: list[Operation] = field(default_factory=list)   # to commit with the step's checkpoint
    step_id: str = ""
    node: str | None = None


_DECIDED = ("approval.decided", "agent.resumed")


def _failure(node: str, exc: BaseException) -> ErrorInfo:
    if isinstance(exc, ArkError):
        return exc.info()
    return ArkError(ErrorLayer.RUNTIME, ErrorCode.GRAPH_NODE_FAILED,
                    f"graph node {node!r} raised {type(exc).__name__}: {exc}").info()


def _began_before(op: Operation) -> bool:
    return op.phase is OperationPhase.EXECUTING and not op.completed


class StepRunner:
    """Runs nodes for one engine (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.prepared: dict[str, Operation] = {}   # next step's operations, committed already

    def key(self, node: str, step: int) -> str:
        return f"{self.engine.run_id}:{step}:{node}"

    def to_json(self, update: dict[str, Any], node: str) -> dict[str, Any]:
        return update_to_json(update, node)

    def ctx(self, node: str, step: int, key: str, attempt: int = 1, index: int | None = None) -> NodeContext:
        e = self.engine
        return NodeContext(e.graph.name, e.run_id, node, step, e.version, key, attempt, index)

    async def run(self, node: Any, step: int, resuming: bool, single: bool) -> NodeOutcome:
        key = self.key(node.name, step)
        op = await self.engine.log.find(key) if resuming else None
        if op is not None and op.completed:
            if op.status is OperationStatus.SUCCEEDED:
                return NodeOutcome(update=dict(op.effective_result or {}), step_id=op.operation_id)
            return NodeOutcome(error=op.error, step_id=op.operation_id, node=node.name)
        try:
            if isinstance(node, HumanNode):
                return await self._human(node, step, key, op)
            if isinstance(node, AgentNode):
                return await self._agent(node, step, key, op, single)
            if isinstance(node, MapNode):
                from ._map import run_map
                return await run_map(self, node, step, key, op, single)
            return await self._function(node, step, key, op, single)
        except asyncio.CancelledError:
            raise
        except ArkError as exc:
            if exc.code in (ErrorCode.LEASE_LOST, ErrorCode.STATE_SAVE_FAILED, ErrorCode.STATE_CONFLICT):
                raise  # the store refused: the run ends without writing more
            return NodeOutcome(error=exc.info(), node=node.name)

    async def started(self, op: Operation, node: Any, step: int) -> None:
        # A step that may not run twice waits for the disk before it runs (after a power
        # cut it must be found in doubt); an idempotent one only needs the write to reach
        # the operating system (a killed process loses nothing), as a model call's does.
        await self.engine.write([op], [self.engine.event(EventTypes.GRAPH_STEP_STARTED, {
            "node": node.name, "step": step, "kind": node.kind, "step_id": op.operation_id,
            "state_version": self.engine.version, "attempt": len(op.attempts)})],
            sync=not (node.idempotent and isinstance(node, FunctionNode)))

    def prepare(self, node: Any, step: int) -> tuple[Operation, Any] | None:
        """The ``executing`` operation and ``graph.step_started`` event of a function or map
        node of the next step, to commit with the step that leads to it: one commit per
        step instead of two (the node's start is still on record before it runs)."""
        from ._engine import new_step_op
        if not isinstance(node, (FunctionNode, MapNode)):
            return None  # an agent's prompt, a person's question: made by user code when the step runs
        e = self.engine
        key = self.key(node.name, step)
        op = new_step_op(e, key, {"node": node.name, "kind": node.kind, "step": step, "state_version": e.version})
        self.prepared[key] = op
        return op, e.event(EventTypes.GRAPH_STEP_STARTED, {
            "node": node.name, "step": step, "kind": node.kind, "step_id": op.operation_id,
            "state_version": e.version, "attempt": 1})

    def take_prepared(self, key: str) -> Operation | None:
        return self.prepared.pop(key, None)

    def finish(self, op: Operation, update: dict[str, Any] | None, error: ErrorInfo | None) -> Operation:
        now = time.time()
        attempts = op.attempts
        if attempts and attempts[-1].ended_at is None:
            attempts = attempts[:-1] + (attempts[-1].ended(now, "ok" if error is None else "error"),)
        if error is None:
            return op.advance(OperationPhase.COMPLETED, at=now, status=OperationStatus.SUCCEEDED, raw_result=update,
                              effective_result=update, attempts=attempts)
        return op.advance(OperationPhase.COMPLETED, at=now, status=OperationStatus.FAILED, error=error,
                          attempts=attempts)

    async def settle(self, op: Operation, update: dict[str, Any] | None, error: ErrorInfo | None,
                     single: bool, node: str) -> NodeOutcome:
        """The node's outcome; its completed operation is committed now, or with the
        step's checkpoint when it is the step's only node (one commit fewer)."""
        done = self.finish(op, update, error)
        if single:
            return NodeOutcome(update=update or {}, error=error, ops=[done], step_id=op.operation_id, node=node)
        await self.engine.log.write([done])
        return NodeOutcome(update=update or {}, error=error, step_id=op.operation_id, node=node)

    def in_doubt(self, op: Operation, node: str, step: int, item_id: str, what: str) -> NodeOutcome:
        held = op if op.status is OperationStatus.INDETERMINATE else op.copy_with(
            {"status": OperationStatus.INDETERMINATE, "updated_at": time.time()})
        item = PendingStep(item_id, "in_doubt", node, step,
                           f"{what} began before its process stopped and may or may not have run: run it again "
                           "(rerun), record what it did (mark_done) or record that it failed (mark_failed)",
                           detail={"operation_id": op.operation_id, "attempts": len(op.attempts),
                                   "started_at": op.attempts[-1].started_at if op.attempts else None})
        already = op.status is OperationStatus.INDETERMINATE  # (on record: nothing to write again)
        return NodeOutcome(waiting=[item], ops=[] if already else [held], step_id=op.operation_id, node=node)

    def retry_op(self, op: Operation) -> Operation:
        """``op`` with its interrupted attempt closed and a new one begun."""
        now = time.time()
        attempts = op.attempts
        if attempts and attempts[-1].ended_at is None:
            attempts = attempts[:-1] + (attempts[-1].ended(now, "interrupted", complete=False),)
        return op.copy_with({"attempts": attempts + (Attempt(number=len(attempts) + 1, started_at=now),),
                             "status": None, "updated_at": now})

    def may_rerun(self, op: Operation, idempotent: bool) -> bool:
        return idempotent or (bool(op.attempts) and op.attempts[-1].outcome == "rerun")

    # -- function nodes --------------------------------------------------------------

    async def _function(self, node: FunctionNode, step: int, key: str, op: Operation | None,
                        single: bool) -> NodeOutcome:
        from ._engine import new_step_op
        e = self.engine
        prepared = self.take_prepared(key) if op is None else None
        if prepared is not None:
            op = prepared  # committed with the step before
        elif op is None:
            op = new_step_op(e, key, {"node": node.name, "kind": node.kind, "step": step, "state_version": e.version})
            await self.started(op, node, step)
        elif _began_before(op):
            if not self.may_rerun(op, node.idempotent):
                return self.in_doubt(op, node.name, step, key, f"step {node.name!r} (step {step})")
            op = self.retry_op(op)
            await self.started(op, node, step)
        else:
            await self.started(op, node, step)
        update, error = None, None
        try:
            value = await call_user(node.fn, e.state, self.ctx(node.name, step, key, len(op.attempts)), node.arity)
            update = update_of(value, node.name)
            merge_update(e.state, update, node.name)  # refused here, it names this node
            update = self.to_json(update, node.name)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = _failure(node.name, exc)
        return await self.settle(op, update, error, single, node.name)

    # -- human nodes -----------------------------------------------------------------

    async def _human(self, node: HumanNode, step: int, key: str, op: Operation | None) -> NodeOutcome:
        from ._engine import new_step_op
        e = self.engine
        if op is None:
            question = node.ask(e.state) if node.ask is not None else f"Answer for {node.output!r}?"
            if asyncio.iscoroutine(question):
                question = await question
            op = new_step_op(e, key, {"node": node.name, "kind": "human", "step": step, "question": str(question),
                                      "schema": node.schema(), "state_version": e.version})
            op = op.copy_with({"phase": OperationPhase.PREPARED, "attempts": ()})
            await self.started(op, node, step)
        detail = op.raw_input or {}
        item = PendingStep(key, "human", node.name, step, str(detail.get("question", "")), dict(detail.get("schema") or {}),
                           detail={"output": node.output})
        return NodeOutcome(waiting=[item], step_id=op.operation_id, node=node.name)

    # -- agent nodes ------------------------------------------------------------------

    async def _agent(self, node: AgentNode, step: int, key: str, op: Operation | None, single: bool) -> NodeOutcome:
        from ._engine import new_step_op
        e = self.engine
        if op is None:
            prompt = node.prompt(e.state)
            if asyncio.iscoroutine(prompt):
                prompt = await prompt
            session = f"{e.log.session_id}.{node.name}.{step}"
            op = new_step_op(e, key, {"node": node.name, "kind": "agent", "step": step, "session": session,
                                      "prompt": str(prompt), "state_version": e.version})
            await self.started(op, node, step)
        held = e.children.pop(node.name, None)
        if held is None:
            runtime = await node.build(op.raw_input["session"])
            step_id = op.operation_id
            name = node.name

            def forward(ev: Any) -> None:
                e.bus.publish(ev.with_parent(e.run_id, step_id))
                if ev.type in _DECIDED:  # decided at the child's own controller (e.g. a planner's ChatWidget)
                    e.child_decided(name)
            unsubscribe = runtime.bus.subscribe("*", forward)
            held = (runtime, unsubscribe)
        runtime, unsubscribe = held
        waiting = False
        try:
            await runtime.load()
            stop, answer, error = await _drive_child(runtime, op.raw_input["prompt"], node.output_type)
            if stop == "awaiting_approval":
                waiting = True
                e.children[node.name] = held
                return NodeOutcome(waiting=self.child_items(node.name, step, runtime), step_id=op.operation_id,
                                   node=node.name)
        finally:
            if not waiting:
                unsubscribe()
                with contextlib.suppress(Exception):
                    await runtime.aclose()
        if stop != "completed":
            why = error.message if error is not None else "no error was given"
            info = ArkError(ErrorLayer.RUNTIME, ErrorCode.GRAPH_NODE_FAILED,
                            f"agent node {node.name!r}: its runtime ended {stop} ({why})").info()
            return await self.settle(op, None, info, single, node.name)
        update = {node.output: answer}
        try:
            merge_update(e.state, update, node.name)
        except ArkError as exc:
            return await self.settle(op, None, exc.info(), single, node.name)
        return await self.settle(op, self.to_json(update, node.name), None, single, node.name)

    def child_items(self, node: str, step: int, runtime: Any) -> list[PendingStep]:
        items = []
        # As the child's controller lists them: an item standing for others' (a sub-agent's,
        # a PlanAndExecute planner's executors') is listed as those, decided there by id.
        for item in runtime.controller.list_pending_approvals():
            call = item.tool_call
            items.append(PendingStep(f"{node}/{item.approval_id}", item.kind, node, step, item.reason or "",
                                     detail={"tool": call.name, "arguments": call.arguments,
                                             "approval_id": item.approval_id}))
        return items

    def still_waiting(self, item: PendingStep) -> list[PendingStep]:
        """After a decision on an agent node's item: the child's items still pending."""
        held = self.engine.children.get(item.node)
        if held is None or "/" not in item.item_id:
            return []
        return self.child_items(item.node, item.step, held[0])

    async def decide_child(self, item: PendingStep, choice: str, value: Any) -> None:
        held = self.engine.children.get(item.node)
        if held is None:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.APPROVAL_NOT_FOUND,
                           f"agent node {item.node!r} is not loaded here, so {item.item_id!r} cannot be decided")
        controller = held[0].controller
        inner = item.item_id.split("/", 1)[1]
        if choice == "approve":
            result = await controller.approve(inner)
        elif choice == "deny":
            result = await controller.deny(inner, value)
        elif choice == "rerun":
            result = await controller.rerun(inner)
        elif choice == "done":
            result = await controller.mark_done(inner, value if isinstance(value, str) else str(value or ""))
        elif choice == "failed":
            result = await controller.mark_failed(inner, value)
        else:
            raise invalid_argument(f"unknown decision {choice!r}")
        if not result.ok:
            raise result.error

    async def decide_in_doubt(self, item: PendingStep, choice: str, value: Any) -> None:
        """A person's word on an in-doubt step (or map item): recorded, then the step goes on."""
        if item.kind != "in_doubt":
            raise invalid_argument(f"{item.item_id!r} is a {item.kind} item: answer it with answer_human")
        e = self.engine
        op = await e.log.find(item.item_id)
        if op is None:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.OPERATION_NOT_FOUND, f"no step {item.item_id!r} is on record")
        now = time.time()
        if choice == "rerun":
            attempts = op.attempts[:-1] + (op.attempts[-1].ended(now, "rerun", complete=False),) if op.attempts else ()
            await e.log.write([op.copy_with({"attempts": attempts, "status": None, "updated_at": now})])
        elif choice == "done":
            node = e.graph.nodes[item.node]
            if isinstance(node, MapNode):  # a map item: value is that item's result
                result = to_jsonable_python(value)
            else:
                update = update_of(value, item.node)
                merge_update(e.state, update, item.node)
                result = self.to_json(update, item.node)
            await e.log.write([op.advance(OperationPhase.COMPLETED, at=now, status=OperationStatus.SUCCEEDED,
                                          raw_result=result, effective_result=result, result_source="person")])
        elif choice == "failed":
            error = ArkError(ErrorLayer.RUNTIME, ErrorCode.GRAPH_NODE_FAILED,
                             f"graph node {item.node!r}: a person marked its interrupted step failed: {value}").info()
            await e.log.write([op.advance(OperationPhase.COMPLETED, at=now, status=OperationStatus.FAILED,
                                          error=error, result_source="person")])
        else:
            raise invalid_argument(f"an in-doubt step takes rerun, mark_done or mark_failed, not {choice!r}")


async def _drive_child(runtime: Any, prompt: str, output_type: Any = None) -> tuple[str, Any, Any]:
    """Start the agent's task, or pick its session up where it stands; the answer is the
    typed one (``result.output``) when the run asked for a type, else the final text."""
    handle = runtime.current_run
    if handle is not None:
        result = await handle.wait()
    else:
        state = runtime.state
        if state.pending_approval is not None:
            return "awaiting_approval", "", None
        if not state.history:
            result = await runtime.run(prompt, output_type=output_type)
        elif state.is_running and not state.not_resumable:
            result = await runtime.resume()
        else:
            last = getattr(runtime, "last_result", None)
            if last is not None:
                result = last
            else:  # finished before a crash: its answer is the last one in history
                message = next((m for m in reversed(state.history) if m.role == "assistant"
                                and (m.text or m.output is not None)), None)
                if message is None:
                    answer: Any = ""
                elif message.output is not None:  # a typed answer, saved with its message (DESIGN §17)
                    answer = message.output.value()
                else:
                    answer = message.text
                return str(state.last_stop_reason or "completed"), answer, None
    answer = result.output if result.output is not None else result.text
    return str(result.stop_reason.value if hasattr(result.stop_reason, "value") else result.stop_reason), \
        answer, result.error
