"""AgentRuntime: the facade that wires the phases of a run together (DESIGN §7).

The runtime is the only owner of the session state. Its loop lives in ``_loop.py``
and its phases in ``_model_call.py``, ``_tool_batch.py``, ``_approvals.py`` and
``_persistence.py``; this module holds the public surface and the small shared
helpers those phases call.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterable
from typing import Any, AsyncIterator, Callable

from ..controller import AgentController
from ..domain import (
    AgentMessage, ArkError, ContentPart, ErrorCode, ErrorLayer, ModelConfig, ModelRequest, Role, ToolResult,
    Usage, invalid_argument,
)
from ..events import AgentEvent, EventBus
from ..events.envelope import new_event
from ..hooks import AgentHook, HookPipeline, HookRegistry
from ..providers.base import LLMClient
from ..state import (
    AgentState, ApprovalDecision, ApprovalDecisionResult, MemoryStateStorage, PendingApprovalBatch, SecretLint,
    StateStorage, validate_session_id,
)
from ..tools import ToolRegistry
from ._approvals import apply_decision
from ._in_doubt import IN_DOUBT, apply_in_doubt_decision, pause_interrupted_run
from ._channel import EventChannel
from ._context import RunContext
from ._invocation import DirectInvocations, SessionScope
from ._loop import drive
from ._tool_batch import tool_message, unanswered_calls
from .handle import RunHandle
from .loop_detector import LoopDetector
from .result import AgentRunResult

__all__ = ["AgentRuntime", "RunInput"]

_RESTORE_SEQUENCE_GAP = 10_000

RunInput = str | AgentMessage | ContentPart | Iterable[str | ContentPart | AgentMessage]


def _current_task() -> asyncio.Task | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running loop: called from plain synchronous code
        return None


class AgentRuntime:
    """Runs an agent: streamed model calls, tool batches, hooks, approvals, persistence.

    Args:
        model: any :class:`LLMClient` (``ScriptedModel`` offline, ``OpenAICompatibleClient``).
        tools: ``@tool`` functions (or plain typed functions) or a ``ToolRegistry``.
        system_prompt: the system message put before the history on every call.
        hooks: ``AgentHook`` instances to register (more via ``runtime.hooks``).
        storage: where state is saved (default: in memory). ``FileStateStorage(dir)`` survives restarts.
        session_id: names the saved session (default: a fresh id).
        max_turns: model calls per run before it stops with ``max_turns``.
        loop_detector: a :class:`LoopDetector` (default 3 identical calls in 8).
        event_bus: share a bus between runtimes (default: a new one).
        config: model name and options sent with every request.
        require_approval: defer dangerous tools to a human (default True).
        secrets: extra strings that must never be saved (API keys are added automatically
            when the model exposes ``secret_values()``).

    Example:
        >>> runtime = AgentRuntime(ScriptedModel(["Hi!"]))      # doctest: +SKIP
        >>> (await runtime.run("Hello")).text                  # doctest: +SKIP
        'Hi!'
    """

    def __init__(self, model: LLMClient, *, tools: Iterable[Any] | ToolRegistry = (), system_prompt: str | None = None,
                 hooks: Iterable[AgentHook] = (), storage: StateStorage | None = None, session_id: str | None = None,
                 max_turns: int = 20, loop_detector: LoopDetector | None = None, event_bus: EventBus | None = None,
                 config: ModelConfig | None = None, require_approval: bool = True, max_model_retries: int = 2,
                 secrets: Iterable[str] = (), clock: Callable[[], float] | None = None,
                 state: AgentState | None = None) -> None:
        if not callable(getattr(model, "stream", None)):
            raise invalid_argument(f"model must be an LLMClient with a stream() method (e.g. ScriptedModel), "
                                   f"got {type(model).__name__}")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise invalid_argument(f"system_prompt must be a string or None, got {type(system_prompt).__name__}")
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise invalid_argument(f"max_turns must be an int >= 1, got {max_turns!r}")
        if isinstance(max_model_retries, bool) or not isinstance(max_model_retries, int) or max_model_retries < 0:
            raise invalid_argument(f"max_model_retries must be an int >= 0, got {max_model_retries!r}")
        if storage is not None and not isinstance(storage, StateStorage):
            raise invalid_argument(f"storage must implement StateStorage (load/save/mark_not_resumable/delete/"
                                   f"list_sessions), got {type(storage).__name__}")
        if config is not None and not isinstance(config, ModelConfig):
            raise invalid_argument(f"config must be a ModelConfig, got {type(config).__name__}")
        if loop_detector is not None and not isinstance(loop_detector, LoopDetector):
            raise invalid_argument(f"loop_detector must be a LoopDetector, got {type(loop_detector).__name__}")
        if isinstance(tools, (str, bytes)) or not isinstance(tools, (ToolRegistry, Iterable)):
            raise invalid_argument(f"tools must be a list of @tool functions or a ToolRegistry, got {type(tools).__name__}")
        if isinstance(hooks, (str, bytes)) or not isinstance(hooks, Iterable):
            raise invalid_argument(f"hooks must be a list of AgentHook instances, got {type(hooks).__name__}")
        if event_bus is not None and not isinstance(event_bus, EventBus):
            raise invalid_argument(f"event_bus must be an EventBus or None, got {type(event_bus).__name__}")
        if not isinstance(require_approval, bool):
            raise invalid_argument(f"require_approval must be a bool, got {require_approval!r}")
        if isinstance(secrets, (str, bytes)) or not isinstance(secrets, Iterable):
            raise invalid_argument(f"secrets must be a list of strings, got {type(secrets).__name__}")
        if clock is not None and not callable(clock):
            raise invalid_argument(f"clock must be a callable returning seconds, got {type(clock).__name__}")
        if state is not None and not isinstance(state, AgentState):
            raise invalid_argument(f"state must be an AgentState or None, got {type(state).__name__}")
        self.model = model
        self.tools = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self.system_prompt = system_prompt
        self._system = (AgentMessage.system(system_prompt),) if system_prompt else ()
        self.storage: StateStorage = storage if storage is not None else MemoryStateStorage()
        if state is not None:
            session_id = state.session_id
        self.session_id = validate_session_id(session_id) if session_id is not None else f"session-{uuid.uuid4().hex[:12]}"
        self.max_turns = max_turns
        self.max_model_retries = max_model_retries
        self.loop_detector = loop_detector if loop_detector is not None else LoopDetector()
        if state is not None:
            self.loop_detector.restore(state.loop_window, state.loop_forgiven)
        self.config = config if config is not None else ModelConfig()
        self.require_approval = bool(require_approval)
        self._clock = clock or time.time
        self.bus = event_bus if event_bus is not None else EventBus()
        self.controller = AgentController(self.bus)
        self.controller.bind_approval_host(self)
        self.hooks = HookRegistry(hooks)
        self._pipeline = HookPipeline(self.hooks, self._emit)
        self.secret_lint = SecretLint(secrets)
        secret_values = getattr(model, "secret_values", None)
        if callable(secret_values):
            for value in secret_values():
                self.secret_lint.add(value)
        self._state = state if state is not None else AgentState(session_id=self.session_id)
        # A restored session continues well past its last saved sequence number: the old
        # process may have published events after that save (e.g. approval.required).
        self._seq = self._state.event_sequence + (_RESTORE_SEQUENCE_GAP if state is not None else 0)
        self._active: RunContext | None = None
        self._linted_history = 0  # history is append-only: the secret lint scans only new messages
        self._approval_lock = asyncio.Lock()
        self._invocations = self._make_invocations()
        self.last_result: AgentRunResult | None = None
        """The result of the most recent finished run."""

    def _make_invocations(self):
        """The invocation seam: the storage's own (a durable store) or the direct one."""
        scope = SessionScope(session_id=self.session_id, bus=self.bus, clock=self._clock, storage=self.storage,
                             is_idempotent=self.tools.is_idempotent)
        factory = getattr(self.storage, "invocations_for", None)
        return factory(scope) if callable(factory) else DirectInvocations(scope)

    # -- construction from storage --------------------------------------------------

    @classmethod
    async def restore(cls, session_id: str, *, storage: StateStorage, model: LLMClient,
                      tools: Iterable[Any] | ToolRegistry = (), **options: Any) -> AgentRuntime:
        """Rebuild a runtime from saved state (e.g. after a kernel restart).

        A pending approval batch comes back and can be listed, approved or denied; a
        suspended run can be continued with :meth:`resume`. A run that a crash
        interrupted is continued by :meth:`resume` too, from its operations on a durable
        store; calls whose fate is unknown are listed at once as in-doubt items
        (``controller.list_in_doubt()``) and the run continues when the last is decided.

        On a durable store the runtime takes the session's lease: ``session_locked``
        while another live owner holds it, unless ``takeover=True``.
        """
        if storage is None or not isinstance(storage, StateStorage):
            raise invalid_argument("restore() needs the storage the session was saved to")
        takeover = options.pop("takeover", False)
        if not isinstance(takeover, bool):
            raise invalid_argument(f"takeover must be a bool, got {takeover!r}")
        state = await storage.load(validate_session_id(session_id))
        if state is None:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.SESSION_NOT_FOUND,
                           f"no saved session {session_id!r} in {storage!r}")
        runtime = cls(model, tools=tools, storage=storage, state=state, **options)
        # A durable store: take the session's lease (session_locked while another live
        # owner holds it, unless takeover), then reload what that owner may have committed.
        await runtime._invocations.open(takeover=takeover)
        if takeover:
            reloaded = await storage.load(session_id)
            if reloaded is not None and reloaded.revision != state.revision:
                runtime._state = reloaded
        # A run a crash interrupted with calls in doubt waits for a person at once.
        await pause_interrupted_run(runtime)
        return runtime

    # -- public surface -------------------------------------------------------------

    @property
    def state(self) -> AgentState:
        """The current state: an immutable snapshot (holding it costs nothing)."""
        return self._state

    @property
    def history(self) -> tuple[AgentMessage, ...]:
        """The conversation so far."""
        return self._state.history

    @property
    def is_running(self) -> bool:
        """True while a run is active."""
        return self._active is not None

    @property
    def current_run(self) -> RunHandle | None:
        """The active run's handle (also for runs continued after an approval), or None."""
        ctx = self._active
        return RunHandle(ctx.task, ctx.run_id, self.cancel) if ctx is not None and ctx.task is not None else None

    async def run(self, input: RunInput) -> AgentRunResult:
        """Run to the end and return the result. Cancelling the awaiting task cancels the run."""
        handle = self.start(input)
        try:
            return await handle.wait()
        except asyncio.CancelledError:
            self.cancel()
            await asyncio.wait({handle.task})
            raise

    def start(self, input: RunInput) -> RunHandle:
        """Start a run as a background task on the running loop and return its handle.

        This is what widgets use: the notebook cell returns at once, so button clicks
        keep reaching the kernel while the run streams.
        """
        messages = self._coerce_input(input)
        self._check_can_start(new_input=True)
        return self._launch(lambda ctx: drive(self, ctx, new_input=messages))

    async def run_stream(self, input: RunInput) -> AsyncIterator[AgentEvent]:
        """Run and yield every event of the run as it happens; ``runtime.last_result`` holds the result."""
        channel: EventChannel[AgentEvent] = EventChannel()
        run_ids: set[str] = set()

        def listener(event: AgentEvent) -> None:
            if event.run_id in run_ids:
                channel.put(event)

        unsubscribe = self.bus.subscribe("*", listener)
        handle: RunHandle | None = None
        try:
            handle = self.start(input)
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
        state = self._state
        if not state.is_running or state.not_resumable:
            return False
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        # Ending a paused run is a (very short) run of its own: the same terminal path
        # answers the frozen calls, saves (mandatory), publishes agent.cancelled, after_run.
        self._set_state(pending_approval=None)
        self._launch(lambda ctx: drive(self, ctx, cancel_paused=True))
        return True

    def request_suspend(self) -> bool:
        """Ask the active run to pause at the next safe checkpoint (never between a tool
        call and its result), save, and end ``suspended``. False if nothing runs."""
        ctx = self._active
        if ctx is None:
            return False
        ctx.suspend_requested = True
        return True

    async def resume(self) -> AgentRunResult:
        """Continue a suspended run with a fresh model call and wait for it."""
        return await self.start_resume().wait()

    def start_resume(self) -> RunHandle:
        """Continue a suspended run in the background (what the widget's Resume button calls)."""
        self._check_can_start(new_input=False)
        state = self._state
        if state.not_resumable:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.NOT_RESUMABLE,
                           f"session {self.session_id!r} is marked not resumable (a final save failed)")
        if state.pending_approval is not None:
            raise ArkError(ErrorLayer.SECURITY, ErrorCode.PENDING_APPROVAL_BLOCKS_INPUT,
                           "approvals are pending: decide them with runtime.controller.approve/deny; "
                           "the run then continues by itself")
        if not state.is_running:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.NOTHING_TO_RESUME,
                           f"session {self.session_id!r} has no suspended run to resume "
                           f"(last run ended {state.last_stop_reason or 'never started'})")
        if state.last_stop_reason is None and state.current_run_id:
            # Interrupted by a crash: the same run goes on where its operations stand.
            return self._launch(lambda ctx: drive(self, ctx, resume_reason="interrupted"),
                                run_id=state.current_run_id, turn=state.current_loop_count)
        return self._launch(lambda ctx: drive(self, ctx, resume_reason="suspend"))

    # -- ApprovalHost ---------------------------------------------------------------

    def get_pending_approval_batch(self) -> PendingApprovalBatch | None:
        """The pending batch (immutable), for the controller."""
        return self._state.pending_approval

    async def apply_approval_decision(self, approval_id: str, decision: ApprovalDecision,
                                      deny_reason: str | None = None) -> ApprovalDecisionResult:
        """Apply one decision (the controller's only way in)."""
        async with self._approval_lock:
            return await apply_decision(self, approval_id, ApprovalDecision(decision), deny_reason)

    # -- InDoubtHost -------------------------------------------------------------------

    async def apply_in_doubt_decision(self, item_id: str, resolution: str,
                                      text: str | None = None) -> ApprovalDecisionResult:
        """Apply a person's decision on an in-doubt call (the controller's only way in)."""
        async with self._approval_lock:
            return await apply_in_doubt_decision(self, item_id, resolution, text)

    # -- closing ---------------------------------------------------------------------

    async def aclose(self) -> None:
        """End this runtime's ownership of its session: on a durable store, commit what
        is pending and release the lease, so another process may open the session."""
        await self._invocations.aclose()

    # -- helpers the phases use ------------------------------------------------------

    def _launch(self, make: Callable[[RunContext], Any], *, run_id: str | None = None, turn: int = 0) -> RunHandle:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.NO_RUNNING_LOOP,
                           "starting a run needs a running asyncio loop: in a notebook cell call it directly "
                           "(or `await runtime.run(...)`); in a script use asyncio.run(main())") from None
        ctx = RunContext(run_id or self._new_id("run"))
        ctx.turn = turn
        ctx.continued = run_id is not None
        self._active = ctx
        ctx.task = loop.create_task(self._guarded(ctx, make(ctx)), name=f"arknb-{ctx.run_id}")
        return RunHandle(ctx.task, ctx.run_id, self.cancel)

    async def _guarded(self, ctx: RunContext, body) -> AgentRunResult:
        ctx.started = True
        result = await body
        self.last_result = result
        return result

    def _continue_after_approval(self, batch: PendingApprovalBatch) -> None:
        self._set_state(pending_approval=None)
        if batch.kind == IN_DOUBT:
            # The interrupted run goes on: its operations are keyed by its run id.
            self._launch(lambda ctx: drive(self, ctx, resume_batch=batch, resume_reason="in_doubt_resolved"),
                         run_id=batch.run_id, turn=self._state.current_loop_count)
            return
        self._launch(lambda ctx: drive(self, ctx, resume_batch=batch, resume_reason="approval"))

    def _release(self, ctx: RunContext) -> None:
        if self._active is ctx:
            self._active = None

    def _check_can_start(self, *, new_input: bool) -> None:
        if self._active is not None:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.RUN_ALREADY_ACTIVE,
                           f"run {self._active.run_id} is still active; await it, or cancel() it first")
        if new_input and self._state.pending_approval is not None:
            # Seed 000 §10.2: new input must not clear a frozen batch and leave unpaired calls.
            raise ArkError(ErrorLayer.SECURITY, ErrorCode.PENDING_APPROVAL_BLOCKS_INPUT,
                           "tool approvals are pending: approve or deny them (runtime.controller) before "
                           "sending new input")

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

    def _emit(self, event_type: str, payload: Any, run_id: str | None = None) -> None:
        """Publish an event if anyone listens; a callable payload is built only then."""
        if not self.bus.has_listeners(event_type):
            return
        self._publish(event_type, payload() if callable(payload) else payload, run_id)

    def _publish(self, event_type: str, payload: dict, run_id: str | None = None) -> None:
        """Publish unconditionally (for callers that already checked for listeners)."""
        self._seq += 1
        ctx = self._active
        rid = run_id or (ctx.run_id if ctx is not None else (self._state.current_run_id or ""))
        self.bus.publish(new_event(event_type, self.session_id, rid, self._seq, self._clock(), payload,
                                   f"{rid}:{self._seq}"))

    def _set_state(self, **updates: Any) -> None:
        self._state = self._state.model_copy(update=updates)

    def _append_history(self, messages: Iterable[AgentMessage], usage: Usage | None = None) -> None:
        state = self._state
        updates: dict[str, Any] = {"history": state.history + tuple(messages)}
        if usage is not None:
            updates["usages"] = state.usages + (usage,)
        self._state = state.model_copy(update=updates)

    def _answer_unanswered(self, why: str) -> None:
        calls = unanswered_calls(self._state.history)
        if calls:
            self._append_history(tool_message(c, ToolResult.from_text(why, is_error=True, error_code=ErrorCode.NOT_EXECUTED.value))
                                 for c in calls)

    def _stamp_state(self) -> AgentState:
        window, forgiven = self.loop_detector.snapshot()
        self._state = self._state.model_copy(update={"event_sequence": self._seq, "updated_at": self._clock(),
                                                     "loop_window": window, "loop_forgiven": forgiven})
        return self._state

    def _build_request(self) -> ModelRequest:
        return ModelRequest.model_construct(messages=self._system + self._state.history,
                                            tools=self.tools.definitions(), config=self.config)

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_{uuid.uuid4().hex[:12]}"

    def __repr__(self) -> str:
        return (f"AgentRuntime(session_id={self.session_id!r}, tools={list(self.tools.names())}, "
                f"hooks={self.hooks.names()}, running={self.is_running})")
