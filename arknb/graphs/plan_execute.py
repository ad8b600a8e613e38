"""``ark.PlanAndExecute``: a planner that writes todos and executors that carry them out
(seed 004's PlannerNode / ExecutorNode, DESIGN §16).

It is a graph with one agent node, ``planner``. The planner's runtime (built by your
factory, with ``plan_mode=ark.PlanMode.AUTO``, or ``REVIEW`` for ``review=True``) plans
with ``write_todos`` and gets one more tool, registered on it the way a user would
(``runtime.tools.register``): ``run_todos(executor=None, context="")``. It hands every
todo still pending to an executor, each in a private session of its own
(``{planner session}.{executor}.{call}.{n}``): the executor sees its task and the
``context`` the planner chose to pass, never the planner's history. Up to
``max_parallel`` executors run at once; their answers come back to the planner as the
tool's result, in the plan's order, and the planner re-plans (another ``write_todos``,
another ``run_todos``) until it answers in text: that answer is the graph's ``answer``.

``review=True``: the first plan is put in front of a person (the plan review of DESIGN
§14); the graph run waits (``awaiting_human``) with a ``plan`` item,
``run.controller.approve(item_id)`` / ``deny(item_id, reason)``.

An executor that stops for an approval pauses the planner's ``run_todos`` call for a
person in turn, as a sub-agent pauses ``delegate_task``: the planner runtime's own
``controller.list_pending_approvals()`` (so its ``ChatWidget`` too) lists each
executor's pending items as ``{executor}.{n}/{approval_id}``, and the graph run's
controller as ``planner/{executor}.{n}/{approval_id}``; deciding one in either place
decides it in that executor, and once none is left the planner's call runs again, waits
for the executors and answers. A restored planner rebuilds the executors it waits for.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Callable

from pydantic import BaseModel

from arknb.domain import ArkError, ContextChange, ErrorCode, ErrorLayer, invalid_argument
from arknb.hooks import ModelCallHookResult
from arknb.runtime.extensions import ApprovalKind, Extension
from arknb.state import ApprovalDecision
from arknb.tools import ToolContext, tool

from ._engine import END, START
from .graph import Graph
from .run import GraphRun

__all__ = ["EXECUTORS_KIND", "PlanAndExecute", "PlanState", "RUN_TODOS"]

RUN_TODOS = "run_todos"
EXECUTORS_KIND = "executors"
_OPEN = ("pending", "in_progress")


class PlanState(BaseModel):
    """The state of a PlanAndExecute graph: the task, and the planner's final answer."""

    task: str
    answer: str = ""


async def _build(factory: Callable[[str], Any], session_id: str) -> Any:
    runtime = factory(session_id)
    if inspect.isawaitable(runtime):
        runtime = await runtime
    return runtime


class PlanAndExecute:
    """A planner and its executors, as a graph.

    Args:
        planner: ``planner(session_id) -> AgentRuntime`` (sync or async); build it with
            ``plan_mode=ark.PlanMode.AUTO`` (``REVIEW`` with ``review=True``) so it has
            ``write_todos``.
        executors: ``{name: runtime_factory}``; the planner picks one per ``run_todos``
            call (the first by default).
        max_parallel: how many executors run at once.
        review: put the first plan in front of a person.
        name: the graph's name.

    Example:
        >>> pe = ark.PlanAndExecute(planner=make_planner, executors={"researcher": make_researcher})  # doctest: +SKIP
        >>> run = await pe.run("Compare the tides of two ports", storage=store)                    # doctest: +SKIP
        >>> run.state.answer                                                                        # doctest: +SKIP
    """

    def __init__(self, *, planner: Callable[[str], Any], executors: dict[str, Callable[[str], Any]],
                 max_parallel: int = 2, review: bool = False, name: str = "plan_and_execute") -> None:
        if not callable(planner):
            raise invalid_argument("PlanAndExecute: planner must be a runtime_factory(session_id)")
        if not isinstance(executors, dict) or not executors or not all(callable(f) for f in executors.values()):
            raise invalid_argument("PlanAndExecute: executors must be a non-empty {name: runtime_factory} dict")
        if isinstance(max_parallel, bool) or not isinstance(max_parallel, int) or max_parallel < 1:
            raise invalid_argument(f"PlanAndExecute: max_parallel must be a positive int, got {max_parallel!r}")
        self.planner_factory = planner
        self.executors = dict(executors)
        self.max_parallel = max_parallel
        self.review = bool(review)
        self.graph = Graph(name, state=PlanState)
        self.graph.agent("planner", self._planner, prompt=lambda s: s.task, output="answer")
        self.graph.edge(START, "planner")
        self.graph.edge("planner", END)
        self.running: dict[str, Any] = {}      # executor session -> its runtime (alive in this process)

    async def run(self, task: str, **options: Any) -> GraphRun:
        """Plan and execute ``task``; options as for :meth:`Graph.run` (storage, run_id, fresh)."""
        return await self.graph.run(PlanState(task=task), **options)

    async def start(self, task: str, **options: Any) -> GraphRun:
        """Like :meth:`run`, returning at once (the run goes on in the background)."""
        return await self.graph.start(PlanState(task=task), **options)

    async def restore(self, run_id: str, **options: Any) -> GraphRun:
        """Continue a saved run (see :meth:`Graph.restore`)."""
        return await self.graph.restore(run_id, **options)

    def _repr_html_(self) -> str:
        return self.graph._repr_html_()

    # -- the planner ----------------------------------------------------------------------

    async def _planner(self, session_id: str) -> Any:
        runtime = await _build(self.planner_factory, session_id)
        plan = next((ext for ext in runtime.extensions if getattr(ext, "name", "") == "plan"), None)
        mode = str(getattr(plan, "mode", "off"))
        wanted = "review" if self.review else "auto"
        if plan is None or mode != wanted:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.GRAPH_INVALID,
                           f"PlanAndExecute: the planner's runtime must be built with plan_mode=ark.PlanMode."
                           f"{wanted.upper()} (review={self.review}); it has plan mode {mode!r}")
        runtime.tools.register(self._run_todos_tool(runtime), replace=True)
        runtime.add_extension(_ExecutorsExtension(self))  # executors' approvals at the planner's controller
        return runtime

    def _run_todos_tool(self, planner: Any) -> Any:
        names = list(self.executors)

        async def run_todos(ctx: ToolContext, executor: str | None = None, context: str = "") -> str:
            """Hand every todo still pending in your plan to an executor (each works alone, in a
            private session: it sees its todo and `context`, nothing else of this conversation)
            and return their answers, in the plan's order. Mark todos completed with write_todos
            afterwards, add new ones if needed, or answer the task."""
            return await self._execute(planner, ctx, executor or names[0], context)

        text = " ".join(run_todos.__doc__.split())
        # idempotent: after a crash it runs again and picks each executor up in its own session
        description = f"{text} Executors: {', '.join(names)} (default {names[0]})."
        return tool(name=RUN_TODOS, idempotent=True, description=description)(run_todos)

    async def _execute(self, planner: Any, ctx: ToolContext, executor: str, context: str) -> Any:
        factory = self.executors.get(executor)
        if factory is None:
            return f"error: there is no executor {executor!r}; choose one of: {', '.join(self.executors)}"
        plan = planner.state.plan
        todos = [item for item in (plan.items if plan is not None else ()) if str(item.status) in _OPEN]
        if not todos:
            return "No todo is pending: write todos with write_todos first, or answer the task."
        gate = asyncio.Semaphore(self.max_parallel)

        async def one(index: int, content: str) -> tuple[str, Any]:
            session = f"{ctx.session_id}.{executor}.{ctx.call_id}.{index}"
            async with gate:
                runtime = self.running.get(session)
                if runtime is None:
                    runtime = self.running[session] = await _build(factory, session)
                    _mark_scope(runtime, executor)
                await runtime.load()
                task = content if not context.strip() else f"{content}\n\nFrom the planner:\n{context.strip()}"
                return session, await _drive(runtime, task)

        outcomes = await asyncio.gather(*(one(i, item.content) for i, item in enumerate(todos, 1)))
        waiting = [session for session, r in outcomes if r is None]
        if waiting:
            count = sum(len(self.running[s].controller.list_pending_approvals()) for s in waiting)
            return ctx.defer(f"{len(waiting)} executor(s) wait for {count} approval(s)", kind=EXECUTORS_KIND,
                             detail={"executor": executor, "sessions": waiting})
        lines = []
        for (session, result), item in zip(outcomes, todos):
            self.running.pop(session, None)
            lines.append(f"{item.content}\n→ {result}")
        return "\n\n".join(lines)


class _ExecutorsExtension(Extension):
    """Installed in the planner's runtime: its ``"executors"`` approval kind makes a waiting
    ``run_todos`` call an approval source, as ``delegate_task`` is for sub-agents
    (arknb.memory.delegation): the planner's ``controller.list_pending_approvals()`` lists
    each executor's own pending items as ``{executor}.{n}/{approval_id}`` and deciding one
    there decides it in that executor; once none is left, the planner's item is approved,
    so ``run_todos`` runs again, waits for the executors and answers."""

    name = "plan_executors"

    def __init__(self, team: PlanAndExecute) -> None:
        self.team = team
        self.scope: Any = None
        self.kind = _ExecutorsKind(self)

    def setup(self, scope: Any) -> None:
        self.scope = scope

    def approval_kinds(self) -> tuple[ApprovalKind, ...]:
        return (self.kind,)

    async def on_restore(self, state: Any) -> None:
        # A restored planner rebuilds the executors its pending item waits for (same
        # sessions), so their items are listed and decided at its controller at once.
        batch = state.pending_approval
        for item in batch.items if batch is not None else ():
            factory = self.team.executors.get((item.detail or {}).get("executor"))
            if item.kind != EXECUTORS_KIND or not item.is_pending() or factory is None:
                continue
            for session in item.detail.get("sessions", ()):
                runtime = self.team.running.get(session)
                if runtime is None:
                    runtime = self.team.running[session] = await _build(factory, session)
                    _mark_scope(runtime, item.detail["executor"])
                await runtime.load(takeover=self.scope.took_over)

    def executors(self, item: Any) -> list[tuple[str, Any]]:
        """``(prefix, runtime)`` of each executor ``item`` waits for that is alive here."""
        detail = item.detail or {}
        return [(f"{detail.get('executor')}.{session.rsplit('.', 1)[1]}", self.team.running[session])
                for session in detail.get("sessions", ()) if session in self.team.running]


class _ExecutorsKind(ApprovalKind):
    """A ``run_todos`` call waiting for its executors' approvals: an approval source."""

    name = EXECUTORS_KIND
    how_to_decide = ("decide what the executors wait for (runtime.controller.list_pending_approvals() lists their "
                     "items as '<executor>.<n>/<id>')")

    def __init__(self, ext: _ExecutorsExtension) -> None:
        self.ext = ext

    def expand(self, item: Any) -> list[Any] | None:
        found = []
        for prefix, runtime in self.ext.executors(item):
            for inner in runtime.controller.list_pending_approvals():
                found.append(inner.model_copy(update={
                    "approval_id": f"{prefix}/{inner.approval_id}",
                    "reason": f"executor {prefix.rsplit('.', 1)[1]}: {inner.reason or inner.tool_call.name}"}))
        return found or None

    async def route(self, batch: Any, item: Any, approval_id: str, decision: ApprovalDecision,
                    reason: str | None) -> Any:
        return await self._decide(item, approval_id, lambda c, inner: (
            c.approve(inner) if decision is ApprovalDecision.APPROVED else c.deny(inner, reason)))

    async def route_in_doubt(self, batch: Any, item: Any, item_id: str, resolution: str, text: str | None) -> Any:
        how = {"rerun": lambda c, inner: c.rerun(inner), "done": lambda c, inner: c.mark_done(inner, text or ""),
               "failed": lambda c, inner: c.mark_failed(inner, text or "")}.get(resolution)
        return None if how is None else await self._decide(item, item_id, how)

    async def _decide(self, item: Any, approval_id: str, decide: Callable[[Any, str], Any]) -> Any:
        """Decide ``approval_id`` in its executor; once no executor waits, approve ``item``."""
        prefix, _, inner = approval_id.partition("/")
        runtime = dict(self.ext.executors(item)).get(prefix)
        if runtime is None or not inner:
            return None
        decided = await decide(runtime.controller, inner)
        if not decided.ok:
            return decided.model_copy(update={"approval_id": approval_id})
        if any(r.controller.list_pending_approvals() for _, r in self.ext.executors(item)):
            return decided.model_copy(update={"approval_id": approval_id, "all_decided": False})
        # No executor waits any more: the planner's call runs again, waits for them and answers.
        outer = await self.ext.scope.controller.approve(item.approval_id)
        if not outer.ok:
            return outer.model_copy(update={"approval_id": approval_id})
        return decided.model_copy(update={"approval_id": approval_id, "all_decided": outer.all_decided})

    async def on_decided(self, batch: Any, item: Any) -> None:
        if item.decision is ApprovalDecision.DENIED:  # the whole run_todos call was refused: executors stop
            for _, runtime in self.ext.executors(item):
                runtime.cancel()


def _mark_scope(runtime: Any, executor: str) -> None:
    """Say, on each of the executor's model requests, that it sees a private scope: its
    task and what the planner passed, not the planner's history (DESIGN §16)."""

    @runtime.hooks.before_model_call(name="executor_scope")
    def executor_scope(ctx: Any) -> Any:
        if any(c.source == "executor_scope" for c in ctx.request.context_changes):
            return None
        n = len(ctx.request.messages)
        change = ContextChange(source="executor_scope", kind="scope", range=(0, len(ctx.state.history)), sent=(0, n))
        return ModelCallHookResult.proceed(ctx.request.model_copy(
            update={"context_changes": ctx.request.context_changes + (change,)}))


async def _drive(runtime: Any, task: str) -> str | None:
    """Run (or pick up) an executor's task; None while it waits for a person. Run again
    after the planner's call was approved, it approves the executor's pending calls."""
    state = runtime.state
    handle = runtime.current_run
    if handle is None and state.pending_approval is not None:
        await runtime.controller.approve_all()  # the person approved at the planner's card
        handle = runtime.current_run
    if handle is not None:
        result = await handle.wait()
    elif not state.history:
        result = await runtime.run(task)
    elif state.is_running and not state.not_resumable:
        result = await runtime.resume()
    else:
        return next((m.text for m in reversed(state.history) if m.role == "assistant" and m.text), "")
    if str(result.stop_reason) == "awaiting_approval":
        return None
    if str(result.stop_reason) != "completed":
        why = result.error.message if result.error is not None else str(result.stop_reason)
        return f"(the executor did not finish: {why})"
    return result.text
