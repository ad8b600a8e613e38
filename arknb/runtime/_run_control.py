"""The run facade of :class:`~arknb.runtime.AgentRuntime`: starting, cancelling,
suspending and resuming runs, and the decisions that continue a paused one.

``AgentRuntime`` (``runtime.py``: construction, loading, state, events) inherits these
methods; they read and change the runtime's own fields, so this is a part of that class
kept in a module of its own, not a separate object.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable

from ..domain import AgentMessage, ArkError, ContentPart, ErrorCode, ErrorLayer, Role, invalid_argument
from ..events import AgentEvent
from ..state import ApprovalDecision, ApprovalDecisionResult, PendingApprovalBatch, PendingApprovalItem
from ._approvals import apply_decision
from ._channel import EventChannel
from ._context import RunContext
from ._in_doubt import apply_in_doubt_decision, interrupted
from ._loop import drive
from ._session import detached_error
from . import lifecycle
from .handle import RunHandle
from .result import AgentRunResult

if TYPE_CHECKING:
    from .runtime import RunInput

__all__ = ["RunControl"]


def _current_task() -> asyncio.Task | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running loop: called from plain synchronous code
        return None


class RunControl:
    """Runs of an :class:`~arknb.runtime.AgentRuntime` (a base of that class only)."""

    __slots__ = ()

    @property
    def current_run(self) -> RunHandle | None:
        """The active run's handle (also for runs continued after an approval), or None."""
        ctx = self._active
        return RunHandle(ctx.task, ctx.run_id, self.cancel) if ctx is not None and ctx.task is not None else None

    async def run(self, input: RunInput, *, output_type: Any = None) -> AgentRunResult:
        """Run to the end and return the result. Cancelling the awaiting task cancels the run.

        A saved session is loaded first; if its state cannot be read, the load error is
        raised and nothing is saved over it. ``output_type`` asks this run for a typed
        answer (``result.output``; DESIGN §17) instead of the runtime's ``output_type``.
        """
        await self._load()
        handle = self.start(input, output_type=output_type)
        try:
            return await handle.wait()
        except asyncio.CancelledError:
            self.cancel()
            await asyncio.wait({handle.task})
            raise

    def start(self, input: RunInput, *, output_type: Any = None) -> RunHandle:
        """Start a run as a background task on the running loop and return its handle.

        This is what widgets use: the notebook cell returns at once, so button clicks
        keep reaching the kernel while the run streams. A runtime that was not loaded yet
        loads first, in the task; a refusal found then (a pending approval, a load error)
        is raised by ``await handle``.
        """
        messages = self._coerce_input(input)
        self._check_can_start(new_input=True)
        self._check_model_takes(messages)
        self._run_output = self._output_phase(output_type)
        return self._launch(lambda ctx: drive(self, ctx, new_input=messages),
                            recheck=lambda: self._check_state_allows(new_input=True))

    async def run_stream(self, input: RunInput, *, output_type: Any = None) -> AsyncIterator[AgentEvent]:
        """Run and yield every event of the run as it happens; ``runtime.last_result`` holds the result."""
        channel: EventChannel[AgentEvent] = EventChannel()
        run_ids: set[str] = set()

        def listener(event: AgentEvent) -> None:
            if event.run_id in run_ids:
                channel.put(event)

        await self._load()
        unsubscribe = self.bus.subscribe("*", listener)
        handle: RunHandle | None = None
        try:
            handle = self.start(input, output_type=output_type)
            run_ids.add(handle.run_id)
            # Every event of the run is published before its task completes.
            handle.task.add_done_callback(lambda _task: channel.close())
            buffer = channel.buffer
            while True:
                while buffer:
                    yield buffer.popleft()
                if channel.closed:
                    break
                await channel.wait()
        finally:
            unsubscribe()
            if handle is not None and not handle.done:
                self.cancel()
                await asyncio.wait({handle.task})

    def cancel(self) -> bool:
        """Cancel the active run, or a run paused for approval or suspended: final, it ends
        ``cancelled`` (pending calls are answered as not executed). False if there is nothing
        to cancel."""
        ctx = self._active
        if ctx is None:
            return self._cancel_paused()
        if ctx.cancel_requested:
            return True
        ctx.cancel_requested = True
        ctx.cancel.cancel("cancelled by user")
        # Interrupt whatever the run awaits (model stream, tools) unless it is already
        # finishing, or has not started (it then sees the token at its first step), or
        # this call comes from inside the run itself (a listener or hook): the run then
        # sees the token at its next checkpoint. Interrupting our own task would leave a
        # pending cancellation that Python 3.11 cannot withdraw; it would hit the terminal
        # save or turn the finished run's result into a bare CancelledError.
        if ctx.started and not ctx.finishing and ctx.task is not None and ctx.task is not _current_task():
            ctx.task.cancel()
        return True

    def _cancel_paused(self) -> bool:
        if not self._paused():
            return False
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        if self._approval_lock.locked():
            # A decision is being saved: the Stop applies to what it leads to (the run it
            # continues, or the batch still paused), once it is recorded (see
            # apply_approval_decision). Acting now would race it: two runs at once.
            self._stop_after_decision = True
            return True
        self._end_paused()
        return True

    def _paused(self) -> bool:
        state = self._state
        return (state.is_running and not state.not_resumable and self._detached is None and not self.closed
                and self._loaded and self._active is None)

    def _end_paused(self) -> None:
        # Ending a paused run is a (very short) run of its own, under the paused run's id:
        # the same terminal path answers the frozen calls (each with what is known of it),
        # saves (mandatory), publishes agent.cancelled, after_run.
        state = self._state
        batch = state.pending_approval
        self._set_state(pending_approval=None)
        self._launch(lambda ctx: drive(self, ctx, cancel_paused=True, paused=batch),
                     run_id=state.current_run_id or None, turn=state.current_loop_count)

    def request_suspend(self) -> bool:
        """Ask the active run to pause at the next safe checkpoint (never between a tool
        call and its result), save, and end ``suspended``. False if nothing runs."""
        ctx = self._active
        if ctx is None:
            return False
        ctx.suspend_requested = True
        return True

    async def resume(self) -> AgentRunResult:
        """Continue a suspended run with a fresh model call and wait for it.

        A run paused only for calls that wait for no person's decision (a sub-agent that
        was suspended when this runtime closed while it worked, DESIGN §14 "Lifecycle") is
        continued too: those items are approved (saved first, as any decision), each child
        resumes where it stopped, and the run goes on with the child's answer.
        """
        await self._load()
        handle = await self._continue_waiting_for_nobody()
        return await (handle or self.start_resume()).wait()

    async def _continue_waiting_for_nobody(self) -> RunHandle | None:
        """Approve the pending items that wait for no person (see :meth:`resume`) and return
        the continued run's handle; None if the pending batch is not such a pause."""
        batch = self._state.pending_approval
        items = self._extensions.continued_by_resume(batch)
        if not items:
            return None
        self._check_not_running()
        for item in items:
            decided = await self.apply_approval_decision(item.approval_id, ApprovalDecision.APPROVED,
                                                         batch_id=batch.batch_id)
            if not decided.ok:
                raise decided.error.to_error()
        # None if a Stop came while the decision was saved: start_resume() then says why.
        return self.current_run

    def start_resume(self) -> RunHandle:
        """Continue a suspended run in the background (what the widget's Resume button calls)."""
        self._check_can_start(new_input=False)
        if not self._loaded:
            return self._launch(lambda ctx: drive(self, ctx, resume_reason="suspend"),
                                recheck=self._check_resumable)
        self._check_resumable()
        state = self._state
        if interrupted(state):
            # Interrupted by a crash: the same run goes on where its operations stand.
            return self._launch(lambda ctx: drive(self, ctx, resume_reason="interrupted"),
                                run_id=state.current_run_id, turn=state.current_loop_count)
        return self._launch(lambda ctx: drive(self, ctx, resume_reason="suspend"))

    def _check_resumable(self) -> None:
        state = self._state
        if state.not_resumable:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.NOT_RESUMABLE,
                           f"session {self.session_id!r} is marked not resumable (a final save failed)")
        if state.pending_approval is not None:
            raise self._extensions.blocks_input_error(state.pending_approval)
        if not state.is_running:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.NOTHING_TO_RESUME,
                           f"session {self.session_id!r} has no suspended run to resume "
                           f"(last run ended {state.last_stop_reason or 'never started'})")
        missing = self._run_output.unavailable()
        if missing is not None:
            raise missing

    # -- ApprovalHost ---------------------------------------------------------------

    def list_pending_approvals(self) -> list[PendingApprovalItem]:
        """The items a person decides now (for the controller): the pending batch's items,
        with a sub-agent's item replaced by the sub-agent's own, under namespaced ids."""
        return self._extensions.pending_items(self._state.pending_approval)

    def get_pending_approval_batch(self) -> PendingApprovalBatch | None:
        """The pending batch (immutable), for the controller."""
        return self._state.pending_approval

    async def apply_approval_decision(self, approval_id: str, decision: ApprovalDecision,
                                      deny_reason: str | None = None, *,
                                      batch_id: str | None = None) -> ApprovalDecisionResult:
        """Apply one decision (the controller's only way in); ok only once it is saved.

        With ``batch_id``, only an item of that batch is decided (a card of another batch
        is refused). An id that an item's kind listed in its place (a sub-agent's
        ``{name}/{approval_id}``) is routed to that kind.
        """
        if self._detached is None and batch_id is None:
            try:
                await self._load()
            except ArkError:
                pass  # apply_decision below reports it
            else:
                # Outside the lock: routing may decide the item it belongs to, through the controller.
                routed = await self._extensions.route(self._state.pending_approval, approval_id,
                                                      ApprovalDecision(decision), deny_reason)
                if routed is not None:
                    return routed
        async with self._approval_lock:
            if self._detached is not None or self.closed:
                return ApprovalDecisionResult.failure(approval_id, detached_error(self))
            await self._extensions.restored()  # a state given to the constructor: tell the extensions first
            missing = self._run_output.unavailable()  # a restored run's type this process cannot rebuild
            if missing is not None:
                return ApprovalDecisionResult.failure(approval_id, missing)
            try:
                return await apply_decision(self, approval_id, ApprovalDecision(decision), deny_reason, batch_id)
            finally:
                self._stop_if_asked_while_deciding()

    # -- InDoubtHost -------------------------------------------------------------------

    async def apply_in_doubt_decision(self, item_id: str, resolution: str,
                                      text: str | None = None) -> ApprovalDecisionResult:
        """Apply a person's decision on an in-doubt call (the controller's only way in). An
        id that an item's kind listed in its place (a sub-agent's in-doubt call,
        ``{name}/{operation_id}``) is routed to that kind."""
        if self._detached is None:
            try:
                await self._load()
            except ArkError:
                pass  # apply_in_doubt_decision below reports it
            else:
                routed = await self._extensions.route(self._state.pending_approval, item_id, None, None,
                                                      resolution=resolution, text=text)
                if routed is not None:
                    return routed
        async with self._approval_lock:
            if self._detached is not None or self.closed:
                return ApprovalDecisionResult.failure(item_id, detached_error(self))
            missing = self._run_output.unavailable()
            if missing is not None:
                return ApprovalDecisionResult.failure(item_id, missing)
            try:
                return await apply_in_doubt_decision(self, item_id, resolution, text)
            finally:
                self._stop_if_asked_while_deciding()

    def _stop_if_asked_while_deciding(self) -> None:
        """Stop was pressed while a decision was being saved (see :meth:`_cancel_paused`):
        end what the decision led to, now that it is recorded (or was refused)."""
        if not self._stop_after_decision:
            return
        self._stop_after_decision = False
        if self._active is not None:
            self.cancel()   # the run the decision continued, before it runs a call
        elif self._paused():
            self._end_paused()

    # -- helpers the phases use ------------------------------------------------------

    def _launch(self, make: Callable[[RunContext], Any], recheck: Callable[[], None] | None = None, *,
                run_id: str | None = None, turn: int = 0) -> RunHandle:
        if self._detached is not None or self.closed:
            raise detached_error(self)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.NO_RUNNING_LOOP,
                           "starting a run needs a running asyncio loop: in a notebook cell call it directly "
                           "(or `await runtime.run(...)`); in a script use asyncio.run(main())") from None
        ctx = RunContext(run_id or self._new_id("run"))
        ctx.output = self._run_output
        ctx.turn = turn
        ctx.continued = run_id is not None
        self._active = ctx
        pending_load = recheck if not self._loaded else None
        ctx.task = loop.create_task(self._guarded(ctx, make, pending_load), name=f"arknb-{ctx.run_id}")
        if pending_load is not None:
            # A refusal found after loading is raised by `await handle`; nobody awaiting it is fine.
            ctx.task.add_done_callback(lambda task: task.cancelled() or task.exception())
        lifecycle.track(self)  # so a kernel shutdown can still end this run cleanly
        return RunHandle(ctx.task, ctx.run_id, self.cancel)

    async def _guarded(self, ctx: RunContext, make: Callable[[RunContext], Any],
                       recheck: Callable[[], None] | None) -> AgentRunResult:
        if recheck is not None:
            # The checks start() made on the empty state, made again on the loaded one.
            try:
                await self._load()
                recheck()
            except BaseException:
                self._release(ctx)
                raise
        ctx.started = True
        result = self._redactor.result(await make(ctx))
        self.last_result = result
        return result

    def _continue_after_approval(self, batch: PendingApprovalBatch) -> None:
        # The saved state already holds the batch as consumed (the last decision's save).
        # The paused run goes on under its own id: its operations are keyed by it, so a
        # crash during the continuation finds them.
        reason = self._extensions.kind(batch.kind).resume_reason  # "approval", "in_doubt_resolved", ...
        self._launch(lambda ctx: drive(self, ctx, resume_batch=batch, resume_reason=reason),
                     run_id=batch.run_id, turn=self._state.current_loop_count)

    def _release(self, ctx: RunContext) -> None:
        if self._active is ctx:
            self._active = None

    def _check_can_start(self, *, new_input: bool) -> None:
        self._check_not_running()
        self._check_state_allows(new_input=new_input)

    def _check_not_running(self) -> None:
        if self._detached is not None or self.closed:
            raise detached_error(self)
        asking = self._elicitations.blocks_input_error() if self._elicitations is not None else None
        if asking is not None:  # a question a tool's server asks mid-call waits like a batch (DESIGN §15)
            raise asking
        if self._active is not None:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.RUN_ALREADY_ACTIVE,
                           f"run {self._active.run_id} is still active; await it, or cancel() it first")

    def _check_state_allows(self, *, new_input: bool) -> None:
        state = self._state
        if new_input and state.pending_approval is not None and not state.not_resumable:
            # Seed 000 §10.2: new input must not clear a frozen batch and leave unpaired calls.
            # (A batch of a session marked not resumable can never be decided: new input
            # ends it, answering its calls as not executed, so the session is never stuck.)
            # The batch's kind words the refusal (e.g. pending_plan_review_blocks_input).
            raise self._extensions.blocks_input_error(state.pending_approval)

    def _check_model_takes(self, messages: tuple[AgentMessage, ...]) -> None:
        # A part the model cannot take (an image for a text-only profile) is refused here,
        # before the message reaches history: a refused message never poisons the session.
        check = getattr(self.model, "check_input", None)
        if callable(check):
            check(messages)

    def _coerce_input(self, value: Any) -> tuple[AgentMessage, ...]:
        if isinstance(value, str):
            if not value.strip():
                raise invalid_argument("input is empty; give the agent some text")
            return (AgentMessage.user(value),)
        if isinstance(value, AgentMessage):
            messages: tuple[AgentMessage, ...] = (value,)
        elif isinstance(value, ContentPart):
            return (AgentMessage.user([value]),)
        elif isinstance(value, (list, tuple)):
            items = list(value)
            if not items:
                raise invalid_argument("input is an empty list; give at least one message or part")
            if all(isinstance(i, AgentMessage) for i in items):
                messages = tuple(items)
            elif all(isinstance(i, (str, ContentPart)) for i in items):
                return (AgentMessage.user(items),)
            else:
                kinds = sorted({type(i).__name__ for i in items})
                raise invalid_argument(f"input list must hold only AgentMessage values, or only str/ContentPart "
                                       f"parts of one user message; got {', '.join(kinds)}")
        else:
            raise invalid_argument(f"input must be a str, AgentMessage, ContentPart or a list of them, "
                                   f"got {type(value).__name__}")
        for message in messages:
            if message.role is Role.TOOL:
                raise invalid_argument("input cannot contain tool messages: they only answer tool calls")
        return messages

