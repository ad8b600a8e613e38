"""``delegate_task``: running a sub-agent as a tool call, with its approvals at the parent.

What :class:`SubAgentsExtension` contributes through the seam (DESIGN §14):

* the ``delegate_task(agent, task)`` tool. A delegation builds the child (its session is
  ``{parent_session}.{name}.{n}``, recorded in the parent's slice so a restore finds it),
  re-publishes every child event on the parent's bus with ``parent_run_id`` and
  ``parent_call_id`` (the timeline nests them under the call), runs the task and answers
  with the child's final text. Cancelling the parent cancels the child (the call's task
  is cancelled, and a parent cancelled while paused cancels its paused children).
* the ``"subagent"`` approval kind. A child that stops ``awaiting_approval`` makes the
  call defer itself (``ToolContext.defer``): the parent saves its pending batch with one
  item for the call and pauses. That item is an approval source: the parent's
  ``controller.list_pending_approvals()`` shows the child's own pending items instead,
  as ``{name}/{approval_id}`` (a grandchild's as ``{name}/{child}/{id}``); deciding one
  there decides it in the child, which saves it and continues; once the child has
  nothing left to decide, the parent's item is approved, so the parent's call runs
  again, waits for the child's run and answers with its final text.
* restore: a restored parent rebuilds the children its pending items wait for
  (``runtime_factory`` again, same session ids) before anything is decided; a parent
  restored with ``takeover=True`` takes its children's sessions over too.
* close: a parent's ``aclose`` (or kernel shutdown) closes its children with it; a child
  suspended so before it finished pauses its call for a person instead of answering it.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Iterable, Sequence

from pydantic import Field
from pydantic_core import to_jsonable_python

from ..domain import ArkError, ErrorCode, ErrorLayer, ToolCall, ToolResult, invalid_argument
from ..hooks import AfterRunHookContext, AgentHook
from ..runtime import AgentRunResult, AgentRuntime
from ..runtime.extensions import ApprovalKind, Extension, ExtensionScope, WaitingCall
from ..state import AgentState, ApprovalDecision, ApprovalDecisionResult, PendingApprovalBatch, PendingApprovalItem
from ..tools import Tool, ToolContext, tool
from .subagents import SubAgent

__all__ = ["DELEGATE_TASK", "SUBAGENT_KIND", "SUBAGENTS_SLICE", "SubAgentsExtension", "subagents_extension"]

DELEGATE_TASK = "delegate_task"
SUBAGENT_KIND = "subagent"
SUBAGENTS_SLICE = "subagents"


def subagents_extension(value: Any) -> SubAgentsExtension | None:
    """What ``AgentRuntime(subagents=value)`` installs (None for an empty list)."""
    if isinstance(value, SubAgent):
        value = (value,)
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise invalid_argument(f"subagents= takes a list of ark.SubAgent, got {type(value).__name__}")
    agents = tuple(value)
    return SubAgentsExtension(agents) if agents else None


@dataclass(slots=True)
class _Child:
    """A child runtime alive in this process, and how its events reach the parent."""

    agent: SubAgent
    runtime: AgentRuntime
    call_id: str
    parent_run_id: str
    unsubscribe: Callable[[], None] | None = None
    last: AgentRunResult | None = None
    tasks: set = field(default_factory=set)
    held: list | None = None
    """The child's events kept back while it continues after its last approval and the
    parent's call has not run again yet (see :meth:`SubAgentsExtension.hold`)."""


class SubAgentsExtension(Extension):
    """The sub-agents installed in one runtime."""

    name = SUBAGENTS_SLICE

    def __init__(self, agents: Iterable[SubAgent]) -> None:
        self.agents: dict[str, SubAgent] = {}
        for agent in agents:
            if not isinstance(agent, SubAgent):
                raise invalid_argument(f"subagents= takes ark.SubAgent objects, got {type(agent).__name__}")
            if agent.name in self.agents:
                raise invalid_argument(f"two sub-agents are named {agent.name!r}; names must be unique")
            self.agents[agent.name] = agent
        if not self.agents:
            raise invalid_argument("SubAgentsExtension needs at least one SubAgent")
        self.children: dict[str, _Child] = {}
        """Children alive in this process, by the parent's ``delegate_task`` call id."""
        self._scope: ExtensionScope | None = None
        self._tool = self._build_tool()
        self._kind = _SubAgentKind(self)
        self._hook = _CancelChildren(self)
        self._background: set[asyncio.Task] = set()

    # -- the seam ------------------------------------------------------------------------------

    def for_new_session(self) -> SubAgentsExtension:
        return SubAgentsExtension(self.agents.values())

    def setup(self, scope: ExtensionScope) -> None:
        if self._scope is not None:
            raise invalid_argument("a sub-agents extension serves one runtime; pass subagents=[...] to each")
        self._scope = scope

    def tools(self, state: AgentState) -> tuple[Tool, ...]:
        return (self._tool,)

    def hooks(self) -> tuple[AgentHook, ...]:
        return (self._hook,)

    def approval_kinds(self) -> tuple[ApprovalKind, ...]:
        return (self._kind,)

    async def on_restore(self, state: AgentState) -> None:
        batch = state.pending_approval
        if batch is None:
            return
        for item in batch.items:
            if item.kind != SUBAGENT_KIND or not item.is_pending():
                continue
            record = self._records().get(item.tool_call.id)
            if record is None:
                continue
            child = await self._child(item.tool_call.id, record, batch.run_id)
            state = child.runtime.state
            if state.pending_approval is None and state.last_stop_reason != "suspended":
                # The child's decisions were saved but the parent's item was not (a crash in
                # between): approve it now, outside the approval lock this may run under. A
                # suspended child waits for the person (the item says so), like its parent.
                self._later(self._scope.controller.approve(item.approval_id))

    async def waiting_calls(self, run_id: str, calls: Sequence[ToolCall]) -> list[WaitingCall]:
        # A delegation a crash interrupted whose child now waits for a person (its own
        # restore paused it for an approval or a call in doubt): the parent lists the
        # child's items at once, as it does for its own in-doubt calls (DESIGN §13),
        # rather than only once resume() has run the delegation again to find them.
        records = self._records()
        waiting = []
        for call in calls:
            record = records.get(call.id)
            if call.name != DELEGATE_TASK or record is None:
                continue
            try:
                child = await self._child(call.id, record, run_id)
            except ArkError:
                continue  # the call, run again, answers with the error
            if child.runtime.state.pending_approval is None:
                continue  # resume() continues the child where it stands
            count = len(child.runtime.controller.list_pending_approvals())
            waiting.append(WaitingCall(call, f"sub-agent {record['agent']} waits for {count} decision(s)",
                                       SUBAGENT_KIND, {"agent": record["agent"], "session": record["session"]}))
        return waiting

    async def on_close(self, grace: float) -> None:
        # The parent is closing: its children close with it (a running child suspends at its
        # own checkpoint, and its call then pauses the parent's batch, see delegate), and
        # none keeps its session's lease, which would lock another process out of it.
        children = list(self.children.values())
        await asyncio.gather(*(child.runtime.aclose(grace) for child in children), return_exceptions=True)

    # -- the slice: which session each delegation uses ------------------------------------------

    def _records(self) -> dict[str, dict[str, Any]]:
        slice_ = self._scope.slice or {}
        calls = slice_.get("calls", {})
        return calls if isinstance(calls, dict) else {}

    def _new_record(self, call_id: str, agent: str, task: str) -> dict[str, Any]:
        slice_ = dict(self._scope.slice or {})
        counters = dict(slice_.get("counters", {}))
        n = int(counters.get(agent, 0)) + 1
        counters[agent] = n
        record = {"agent": agent, "session": f"{self._scope.session_id}.{agent}.{n}", "task": task,
                  "started": False}
        calls = dict(slice_.get("calls", {}))
        calls[call_id] = record
        self._scope.set_slice({"counters": counters, "calls": calls})
        return record

    def _mark_started(self, call_id: str) -> None:
        slice_ = dict(self._scope.slice or {})
        calls = dict(slice_.get("calls", {}))
        if call_id in calls:
            calls[call_id] = {**calls[call_id], "started": True}
            slice_["calls"] = calls
            self._scope.set_slice(slice_)

    # -- children ---------------------------------------------------------------------------------

    async def _child(self, call_id: str, record: dict[str, Any], parent_run_id: str) -> _Child:
        child = self.children.get(call_id)
        if child is not None and child.runtime.detached is None:
            child.parent_run_id = parent_run_id
            return child
        if child is not None and child.unsubscribe is not None:
            child.unsubscribe()  # closed (or replaced) meanwhile: a new runtime continues its session
        agent = self.agents.get(record["agent"])
        if agent is None:
            raise ArkError(ErrorLayer.TOOL, ErrorCode.SUBAGENT_NOT_FOUND,
                           f"the saved delegation {call_id} used sub-agent {record['agent']!r}, which this runtime "
                           f"does not have (subagents: {', '.join(self.agents)})")
        runtime = await agent.build(record["session"], self._scope.runtime_options())
        child = _Child(agent, runtime, call_id, parent_run_id)
        scope = self._scope

        def forward(event) -> None:  # an observer: it only re-publishes
            if child.held is not None:
                child.held.append(event)
                return
            scope.republish(event, parent_run_id=child.parent_run_id, parent_call_id=child.call_id)

        child.unsubscribe = runtime.bus.subscribe("*", forward)
        # A parent taken over from a live owner takes its children too: that owner's child
        # runtimes would otherwise hold their leases (and decide their approvals) for good.
        await runtime.load(takeover=scope.took_over)
        self.children[call_id] = child
        return child

    async def delegate(self, agent_name: str, task: str, ctx: ToolContext) -> ToolResult | str:
        """The body of ``delegate_task``."""
        agent = self.agents.get(agent_name)
        if agent is None:
            return ToolResult.from_text(
                f"subagent_not_found: there is no sub-agent {agent_name!r}; choose one of: "
                f"{', '.join(self.agents)}", is_error=True, error_code=ErrorCode.SUBAGENT_NOT_FOUND.value)
        record = self._records().get(ctx.call_id)
        if record is None:
            record = self._new_record(ctx.call_id, agent_name, task)
            # Saved before the child's session exists: after a crash the saved counter would
            # otherwise lag behind the sessions in the store, and the next delegation (once a
            # person settled or cancelled this one) would be handed this one's session, with
            # its task and its finished or in-doubt calls.
            saved = await self._scope.persist("subagent_delegated", mandatory=True)
            if not saved.ok:
                return saved.refusal(f"sub-agent {agent_name} was not started: its delegation could not be saved")
        try:
            child = await self._child(ctx.call_id, record, ctx.run_id)
        except ArkError as exc:
            return ToolResult.from_error(exc)
        runtime = child.runtime
        self.release(child)  # what the child did since its last approval nests under this call
        try:
            result = await self._drive(child, record, task)
        except asyncio.CancelledError:
            runtime.cancel()  # the parent's cancellation reaches the child
            handle = runtime.current_run
            if handle is not None:
                await asyncio.wait({handle.task})
            raise
        child.last = result
        if result.stop_reason == "awaiting_approval":
            waiting = len(runtime.controller.list_pending_approvals())
            return ctx.defer(f"sub-agent {agent_name} waits for {waiting} approval(s)", kind=SUBAGENT_KIND,
                             detail={"agent": agent_name, "session": record["session"]})
        if result.stop_reason == "suspended":
            # Its runtime was closed (aclose, kernel shutdown) before it finished: the task is
            # not done, so this is no answer. The call pauses the parent for a person; approved,
            # it runs again and resumes the child where it stopped.
            return ctx.defer(f"sub-agent {agent_name} was suspended before it finished its task (its runtime "
                             "was closed); approve to continue it, deny to stop it", kind=SUBAGENT_KIND,
                             detail={"agent": agent_name, "session": record["session"], "suspended": True})
        if result.stop_reason == "completed":
            if result.output is not None:  # a typed answer (SubAgent(output_type=...)): its JSON
                return json.dumps(to_jsonable_python(result.output), ensure_ascii=False)
            return result.text or "(the sub-agent finished without a text answer)"
        why = result.error.message if result.error is not None else "no error was given"
        return ToolResult.from_text(f"sub-agent {agent_name} did not finish its task: it ended "
                                    f"{result.stop_reason.value} ({why})", is_error=True,
                                    error_code=result.error.code if result.error is not None else None)

    async def _drive(self, child: _Child, record: dict[str, Any], task: str) -> AgentRunResult:
        """Start the task, or pick the child up where it is (continued after an approval,
        suspended, interrupted by a crash, or already finished)."""
        runtime = child.runtime
        handle = runtime.current_run
        if handle is not None:
            return await handle.wait()
        state = runtime.state
        # The child's own saved state says whether the task began: the parent's record of it
        # may not have been saved when a crash came (running the task again would leave the
        # child's interrupted call unanswered in its history).
        if not record.get("started") and not state.history:
            self._mark_started(child.call_id)
            return await runtime.run(task)
        if state.pending_approval is not None:
            return _waiting(runtime, runtime.last_result)
        if state.is_running and not state.not_resumable:
            return await runtime.resume()
        last = runtime.last_result  # the child's latest run (it may have finished meanwhile)
        if last is not None:
            return last
        text = next((m.text for m in reversed(state.history) if m.role == "assistant" and m.text), "")
        return _finished(runtime, state.last_stop_reason, text)

    def hold(self, child: _Child) -> None:
        """Keep the child's events back until :meth:`release`.

        After the child's last approval the child continues at once, but the parent's
        call runs again only when the parent's own item is decided and its run resumes:
        re-published meanwhile, the child's events would nest under the call's first,
        paused attempt. Held, they are published when the call runs again (or the parent
        run ends), so a timeline nests them under the attempt that waits for them.
        """
        if child.held is None:
            child.held = []

    def release(self, child: _Child) -> None:
        """Publish the held events of ``child`` on the parent's bus (nested under its call) and stop holding."""
        held, child.held = child.held, None
        for event in held or ():
            self._scope.republish(event, parent_run_id=child.parent_run_id, parent_call_id=child.call_id)

    def _later(self, awaitable) -> None:
        task = asyncio.get_running_loop().create_task(awaitable)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- the tool --------------------------------------------------------------------------------------

    def _build_tool(self) -> Tool:
        extension = self
        names = list(self.agents)
        listing = "\n".join(f"- {a.name}: {a.description}" for a in self.agents.values())

        async def delegate_task(agent, task, ctx):
            return await extension.delegate(agent, task, ctx)

        # Real objects, not the strings this module's annotations are: the enum of names is
        # built here, at run time.
        delegate_task.__annotations__ = {
            "agent": Annotated[str, Field(description="The sub-agent's name.", json_schema_extra={"enum": names})],
            "task": Annotated[str, Field(min_length=1, description="The complete task for the sub-agent.")],
            "ctx": ToolContext, "return": ToolResult | str}
        # Idempotent: run again with the same call id it picks its child up where the child
        # stands (a durable store then continues a delegation a crash interrupted, rather
        # than asking a person whether it ran).
        delegate_task = tool(name=DELEGATE_TASK, idempotent=True, description=(
            "Hand a self-contained task to a sub-agent, which works on it with its own tools and context and "
            "returns its final answer as this tool's result. Describe the task fully: the sub-agent does not "
            f"see this conversation. Sub-agents:\n{listing}"))(delegate_task)
        return delegate_task


class _SubAgentKind(ApprovalKind):
    """A delegation waiting for its child's approvals: an approval source (see module docstring)."""

    name = SUBAGENT_KIND
    how_to_decide = ("decide what the sub-agent waits for (runtime.controller.list_pending_approvals() and "
                     "list_in_doubt() list its items as '<agent>/<id>'), or await runtime.resume() for a sub-agent "
                     "that was suspended")

    def __init__(self, extension: SubAgentsExtension) -> None:
        self.ext = extension

    def _child_of(self, item: PendingApprovalItem) -> _Child | None:
        return self.ext.children.get(item.tool_call.id)

    def expand(self, item: PendingApprovalItem) -> Sequence[PendingApprovalItem] | None:
        child = self._child_of(item)
        if child is None:
            return None  # not rebuilt here (yet): the item itself, whose approval re-runs the call
        prefix = f"{child.agent.name}/"
        nested = child.runtime.controller.list_pending_approvals()
        if not nested:
            return None
        return [n.model_copy(update={"approval_id": prefix + n.approval_id}) for n in nested]

    async def route(self, batch: PendingApprovalBatch, item: PendingApprovalItem, approval_id: str,
                    decision: ApprovalDecision, reason: str | None) -> ApprovalDecisionResult | None:
        child = self._child_of(item)
        agent = item.detail.get("agent")
        if not agent or not approval_id.startswith(f"{agent}/"):
            return None
        if child is None:
            return ApprovalDecisionResult.failure(approval_id, ArkError(
                ErrorLayer.RUNTIME, ErrorCode.APPROVAL_NOT_FOUND,
                f"sub-agent {agent!r} of this call is not loaded, so {approval_id!r} cannot be decided; restore "
                "the parent with AgentRuntime.restore(...) (it rebuilds its sub-agents)"))
        inner = approval_id[len(agent) + 1:]
        controller = child.runtime.controller
        return await self._decide(item, child, approval_id, inner, lambda: (
            controller.approve(inner) if decision is ApprovalDecision.APPROVED else controller.deny(inner, reason)))

    async def route_in_doubt(self, batch: PendingApprovalBatch, item: PendingApprovalItem, item_id: str,
                             resolution: str, text: str | None) -> ApprovalDecisionResult | None:
        child = self._child_of(item)
        agent = item.detail.get("agent")
        if child is None or not agent or not item_id.startswith(f"{agent}/"):
            return None
        inner = item_id[len(agent) + 1:]
        controller = child.runtime.controller
        decide = {"rerun": lambda: controller.rerun(inner), "done": lambda: controller.mark_done(inner, text or ""),
                  "failed": lambda: controller.mark_failed(inner, text or "")}.get(resolution)
        if decide is None:
            return None
        return await self._decide(item, child, item_id, inner, decide)

    async def _decide(self, item: PendingApprovalItem, child: _Child, approval_id: str, inner: str,
                      decide) -> ApprovalDecisionResult:
        """Decide ``inner`` in the child; once it has nothing left to decide, approve ``item``."""
        controller = child.runtime.controller
        if [n.approval_id for n in controller.list_pending_approvals()] == [inner]:
            self.ext.hold(child)  # the last one: the child continues before the parent's call does
        decided = await decide()
        if not decided.ok:
            self.ext.release(child)
            return decided.model_copy(update={"approval_id": approval_id})
        if child.runtime.controller.list_pending_approvals():
            self.ext.release(child)
            return decided.model_copy(update={"approval_id": approval_id, "all_decided": False})
        # The child has nothing left to decide and runs on: the parent's call may continue.
        outer = await self.ext._scope.controller.approve(item.approval_id)
        if not outer.ok:
            self.ext.release(child)
            return outer.model_copy(update={"approval_id": approval_id})
        return decided.model_copy(update={"approval_id": approval_id, "all_decided": outer.all_decided})

    async def on_decided(self, batch: PendingApprovalBatch, item: PendingApprovalItem) -> None:
        if item.decision is ApprovalDecision.DENIED:
            child = self._child_of(item)
            if child is not None:
                child.runtime.cancel()  # the delegation was refused as a whole: the child stops

    def answer(self, item: PendingApprovalItem) -> ToolResult | None:
        if item.decision is ApprovalDecision.APPROVED:
            return None  # the call runs again: it waits for the child and returns its answer
        why = item.deny_reason or "denied by the user"
        return ToolResult.from_text(f"tool_denied: the delegation was stopped: {why}", is_error=True,
                                    error_code=ErrorCode.TOOL_DENIED.value)

    def continues_on_resume(self, item: PendingApprovalItem) -> bool:
        # A child suspended when its parent closed (on_close) waits for nobody: resume()
        # continues it, as it would a suspended run of its own (DESIGN §14 "Lifecycle").
        if item.detail.get("suspended") is not True:
            return False
        child = self._child_of(item)
        return child is None or child.runtime.state.pending_approval is None

    def blocks_input_error(self, batch: PendingApprovalBatch) -> ArkError:
        suspended = [item for item in batch.items if item.is_pending() and self.continues_on_resume(item)]
        if suspended and len(suspended) == len([item for item in batch.items if item.is_pending()]):
            agents = ", ".join(sorted({str(item.detail.get("agent")) for item in suspended}))
            return ArkError(ErrorLayer.SECURITY, ErrorCode.PENDING_APPROVAL_BLOCKS_INPUT,
                            f"the run was suspended while its sub-agent ({agents}) worked: continue it with "
                            "await runtime.resume() (or stop it with runtime.cancel()) before sending new input")
        nested = [n for item in batch.items if item.is_pending() for n in (self.expand(item) or ())]
        if any(n.kind == "in_doubt" for n in nested):
            return ArkError(ErrorLayer.SECURITY, ErrorCode.PENDING_APPROVAL_BLOCKS_INPUT,
                            "a sub-agent waits for a person: a crash left its tool calls in doubt (and maybe "
                            "approvals); runtime.controller.list_in_doubt() lists them as '<agent>/<operation id>': "
                            "rerun / mark_done / mark_failed each, and decide the approvals "
                            "(list_pending_approvals()), or runtime.cancel() to end the run; then send the input")
        return ArkError(ErrorLayer.SECURITY, ErrorCode.PENDING_APPROVAL_BLOCKS_INPUT,
                        "a sub-agent waits for approvals: decide them (runtime.controller.list_pending_approvals() "
                        "lists them as '<agent>/<approval id>') before sending new input")


class _CancelChildren(AgentHook):
    """A parent run that ends cancelled cancels its children too (also those paused for approval)."""

    name = "subagents"

    def __init__(self, extension: SubAgentsExtension) -> None:
        self.ext = extension

    async def after_run(self, ctx: AfterRunHookContext) -> None:
        for child in list(self.ext.children.values()):
            self.ext.release(child)  # a run that ends before the call ran again: nothing stays held
        if ctx.result.stop_reason != "cancelled":
            return
        for child in list(self.ext.children.values()):
            child.runtime.cancel()
            handle = child.runtime.current_run
            if handle is not None:
                await asyncio.wait({handle.task})


def _waiting(runtime: AgentRuntime, last: AgentRunResult | None) -> AgentRunResult:
    if last is not None and last.stop_reason == "awaiting_approval":
        return last
    return _finished(runtime, "awaiting_approval", "")


def _finished(runtime: AgentRuntime, reason: str | None, text: str) -> AgentRunResult:
    from ..domain import AgentMessage
    from ..runtime import StopReason

    stop = StopReason(reason) if reason in {r.value for r in StopReason} else StopReason.COMPLETED
    message = AgentMessage.assistant(text) if text else None
    return AgentRunResult(run_id=runtime.state.current_run_id or "", stop_reason=stop, final_message=message,
                          error=None, session_id=runtime.session_id)
