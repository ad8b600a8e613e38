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
import weakref
from collections.abc import Iterable
from typing import Any, AsyncIterator, Callable

from pydantic import SecretStr

from ..controller import AgentController
from ..domain import (
    AgentMessage, ArkError, ContentPart, ErrorCode, ErrorLayer, ModelConfig, ModelRequest, Role, ToolResult,
    Usage, invalid_argument,
)
from ..domain.frozen import FrozenDict
from ..events import AgentEvent, EventBus, EventTypes
from ..events.envelope import freeze_payload, new_event
from ..hooks import AgentHook, HookPipeline, HookRegistry
from ..providers.base import LLMClient
from ..state import (
    AgentState, ApprovalDecision, ApprovalDecisionResult, MemoryStateStorage, PendingApprovalBatch, SecretLint,
    StateStorage, validate_session_id,
)
from ..tools import ToolRegistry
from ._approvals import LoopKind, apply_decision
from ._in_doubt import InDoubtKind, apply_in_doubt_decision, interrupted, pause_interrupted_run
from ._channel import EventChannel
from ._context import RunContext
from ._extension_host import ExtensionHost, ToolKind, make_scope
from ._invocation import make_invocations
from ._keywords import keyword_extensions
from ._loop import drive
from ._redaction import Redactor
from ._session import _RESTORE_SEQUENCE_GAP, claim, detach, detached_error, load_session
from ._tool_batch import tool_message, unanswered_calls
from ._weak import NO_CONTROLLER, controller_of, weak_method
from . import lifecycle
from .extensions import Extension
from .handle import RunHandle
from .loop_detector import LoopDetector
from .result import AgentRunResult

__all__ = ["AgentRuntime", "RunInput"]

_DEFAULT_SAVE_TIMEOUT = 30.0

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
        session_id: names the saved session (default: a fresh id). A session that has saved
            state in ``storage`` is continued, never overwritten: the runtime loads it before
            its first run or decision (or on ``await runtime.load()``). The newest runtime of
            a session on one storage owns it; an older one in this process is detached.
        max_turns: model calls per run before it stops with ``max_turns``.
        loop_detector: a :class:`LoopDetector` (default 3 identical calls in 8).
        event_bus: share a bus between runtimes (default: a new one).
        config: model name and options sent with every request.
        require_approval: defer dangerous tools to a human (default True).
        secrets: extra strings that must never leave the runtime. They, and every API key
            the model reports (``observe_secrets(observer)``, called as each key is
            resolved; ``secret_values()`` for keys known up front), are replaced by
            ``[redacted]`` in events, history, saved state and results, with a
            ``secret.redacted`` event (DESIGN §9).
        fresh: discard the session's saved state (deleted when the runtime first loads,
            also a state that cannot be read) and start empty.
        save_timeout: seconds one save may take before it counts as failed
            (``state_save_failed`` naming the save and the limit); None for no limit.
        plan_mode: ``PlanMode.OFF`` (default), ``AUTO`` (the model keeps a todo list with the
            built-in ``write_todos`` tool) or ``REVIEW`` (a new plan waits for a person's
            approval; until then only ``read_only`` tools run). DESIGN §14.
        skills: :class:`~arknb.skills.Skill` objects or an ``ark.load_skills(path)`` report:
            always-on skills join the system prompt, the others are offered through the
            built-in ``activate_skill`` tool.
        extensions: your own :class:`~arknb.runtime.extensions.Extension` objects (tools,
            hooks, prompt sections and a saved state slice through one seam); they run
            after the built-in ones, in order.

    Example:
        >>> runtime = AgentRuntime(ScriptedModel(["Hi!"]))      # doctest: +SKIP
        >>> (await runtime.run("Hello")).text                  # doctest: +SKIP
        'Hi!'
    """

    def __init__(self, model: LLMClient, *, tools: Iterable[Any] | ToolRegistry = (), system_prompt: str | None = None,
                 hooks: Iterable[AgentHook] = (), storage: StateStorage | None = None, session_id: str | None = None,
                 max_turns: int = 20, loop_detector: LoopDetector | None = None, event_bus: EventBus | None = None,
                 config: ModelConfig | None = None, require_approval: bool = True, max_model_retries: int = 2,
                 secrets: Iterable[str | SecretStr] = (), clock: Callable[[], float] | None = None,
                 state: AgentState | None = None, fresh: bool = False,
                 save_timeout: float | None = _DEFAULT_SAVE_TIMEOUT, plan_mode: Any = None, skills: Any = None,
                 extensions: Iterable[Extension] = ()) -> None:
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
        secrets = tuple(secrets)
        for number, secret in enumerate(secrets):
            plain = secret.get_secret_value() if isinstance(secret, SecretStr) else secret
            # Never quote the value: this message may be shown or logged.
            if not isinstance(plain, str):
                raise invalid_argument(f"secrets[{number}] must be a str or SecretStr, got {type(plain).__name__}")
            if len(plain) < 8:
                raise invalid_argument(f"secrets[{number}] is shorter than 8 characters: it cannot be told from "
                                       "ordinary text, so it cannot be redacted reliably")
        if clock is not None and not callable(clock):
            raise invalid_argument(f"clock must be a callable returning seconds, got {type(clock).__name__}")
        if state is not None and not isinstance(state, AgentState):
            raise invalid_argument(f"state must be an AgentState or None, got {type(state).__name__}")
        if not isinstance(fresh, bool):
            raise invalid_argument(f"fresh must be a bool, got {fresh!r}")
        if fresh and state is not None:
            raise invalid_argument("fresh=True discards the saved state, so it cannot be combined with state=")
        if save_timeout is not None and (isinstance(save_timeout, bool) or not isinstance(save_timeout, (int, float))
                                         or not save_timeout > 0):
            raise invalid_argument(f"save_timeout must be seconds > 0 or None, got {save_timeout!r}")
        if isinstance(extensions, (str, bytes)) or not isinstance(extensions, Iterable):
            raise invalid_argument(f"extensions must be a list of Extension objects, got {type(extensions).__name__}")
        self.model = model
        self.tools = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self.system_prompt = system_prompt
        self._system = (AgentMessage.system(system_prompt),) if system_prompt else ()
        self.storage: StateStorage = storage if storage is not None else MemoryStateStorage()
        if state is not None:
            session_id = state.session_id
        named = session_id is not None
        self.session_id = validate_session_id(session_id) if named else f"session-{uuid.uuid4().hex[:12]}"
        self.save_timeout: float | None = float(save_timeout) if save_timeout is not None else None
        self.max_turns = max_turns
        self.max_model_retries = max_model_retries
        self.loop_detector = loop_detector if loop_detector is not None else LoopDetector()
        if state is not None:
            self.loop_detector.restore(state.loop_window, state.loop_forgiven)
        self.config = config if config is not None else ModelConfig()
        self.require_approval = bool(require_approval)
        self._clock = clock or time.time
        self._owns_bus = event_bus is None
        self.bus = event_bus if event_bus is not None else EventBus()
        self._controller = NO_CONTROLLER  # made on first use, held weakly (see _weak.py)
        self.hooks = HookRegistry(hooks)
        emit = weak_method(self._emit)  # the pipeline and redactor are ours: no strong reference back
        # Capabilities plug in as extensions (DESIGN §14): the keywords only install them.
        this = weakref.ref(self)
        self._extensions = ExtensionHost(
            [*keyword_extensions(plan_mode=plan_mode, skills=skills), *extensions],
            kinds=(ToolKind(), LoopKind(lambda signature: this().loop_detector.forgive(signature)), InDoubtKind(emit)))
        self._pipeline = HookPipeline(self.hooks, emit, tail=self._extensions.hooks)
        # A slow async listener's dropped deliveries are announced (it never slows the run).
        self.bus.on_dropped = _drop_reporter(emit, self.bus)
        self.secret_lint = SecretLint(secrets)
        self._redactor = Redactor(self.secret_lint, emit)
        secret_values = getattr(model, "secret_values", None)
        if callable(secret_values):
            for value in secret_values():
                self.secret_lint.add(value)
        observe_secrets = getattr(model, "observe_secrets", None)
        # The model reports every key it resolves (env, callables) before using it, so
        # the key is known before any result of the request can be published or saved.
        # (Held weakly by the model; closing the runtime may call this to stop at once.)
        self._unobserve_secrets = observe_secrets(self._redactor.learn) if callable(observe_secrets) else None
        self._state = state if state is not None else AgentState(session_id=self.session_id)
        # A restored session continues well past its last saved sequence number: the old
        # process may have published events after that save (e.g. approval.required).
        self._seq = self._state.event_sequence + (_RESTORE_SEQUENCE_GAP if state is not None else 0)
        self._active: RunContext | None = None
        self._approval_lock = asyncio.Lock()
        self._stop_after_decision = False  # a Stop that came while a decision was being saved
        self._save_lock = asyncio.Lock()  # one save at a time: each is based on the revision the last one stored
        self._unsettled: list[asyncio.Future] = []  # storage calls that overran their time limit
        self._fresh = fresh
        # A given state is loaded already; a generated id names a session nobody saved yet.
        self._loaded = state is not None or not named
        self._load_lock = asyncio.Lock()
        self._detached: str | None = None
        self._detached_message = ""
        self._closing: asyncio.Future | None = None  # set by aclose(); its result once closed
        self._takeover = False  # restore(..., takeover=True): take the lease from a live owner
        self._invocations = make_invocations(self)
        self.last_result: AgentRunResult | None = None
        """The result of the most recent finished run."""
        previous = claim(self)
        self._predecessor: asyncio.Task | None = None
        if previous is not None:
            self._predecessor = detach(previous, "replaced", (
                f"a newer AgentRuntime took session {self.session_id!r} on {self.storage!r}; this one no longer "
                "runs or decides anything: use the newer runtime"))
        self._extensions.install(lambda name: make_scope(self, name))
        self._offered_tools()  # a tool name two owners claim fails here, not in the first run
        if state is not None:
            self._extensions.mark_restored(state)

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
        The same as ``AgentRuntime(model, storage=storage, session_id=session_id, ...)``
        followed by ``await runtime.load()``, except that a session with nothing saved is
        an error (``session_not_found``). Like any new runtime of the session, it detaches
        an older one of this process.

        On a durable store the runtime takes the session's lease first: ``session_locked``
        while another live owner holds it, unless ``takeover=True``.
        """
        if storage is None or not isinstance(storage, StateStorage):
            raise invalid_argument("restore() needs the storage the session was saved to")
        for option in ("state", "fresh"):
            if option in options:
                raise invalid_argument(f"restore() loads the saved state, so it takes no {option}= option")
        takeover = options.pop("takeover", False)
        if not isinstance(takeover, bool):
            raise invalid_argument(f"takeover must be a bool, got {takeover!r}")
        runtime = cls(model, tools=tools, storage=storage, session_id=validate_session_id(session_id), **options)
        runtime._takeover = takeover
        if await runtime._load() is None:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.SESSION_NOT_FOUND,
                           f"no saved session {session_id!r} in {storage!r}")
        # A run a crash interrupted with calls in doubt waits for a person at once.
        await pause_interrupted_run(runtime)
        return runtime

    async def load(self) -> AgentState:
        """Load the session's saved state, if it has one, and return the current state.

        Runs, resumes and decisions call it first, so it is needed only to look at a
        session before acting on it (``runtime.state``, the pending approvals; a chat
        widget shows them once loaded). Loading is done once: calling it again returns
        the state as it is now. After loading a saved state ``state.loaded`` is published.
        On a durable store the session's lease is taken before the state is read.

        Raises:
            ArkError: the storage's load error if the saved state cannot be read
                (``state_corrupt`` naming the file, ``state_version_unsupported``,
                ``state_load_failed``); nothing is saved over it, and every run and
                decision fails with the same error until it is fixed (or the runtime is
                created with ``fresh=True``). ``state_conflict`` if this runtime was
                detached (a newer runtime took the session). ``session_locked`` if
                another live owner holds the session's lease.
        """
        await self._load()
        return self._state

    async def _load(self) -> AgentState | None:
        """Load once; returns the saved state found (None if none, or loaded before)."""
        if self._detached is not None:
            raise detached_error(self)
        if self._loaded:
            return None
        async with self._load_lock:
            if self._loaded:
                return None
            # The lease first (durable stores): what is read then is no live owner's work in progress.
            await self._invocations.open(takeover=self._takeover)
            found = await load_session(self)
            if found is not None:
                # The extensions hear of the saved session before anything acts on it; if one
                # refuses it, the load fails and is tried again next time.
                self._extensions.mark_restored(found)
                await self._extensions.restored()
            self._loaded = True
            return found

    # -- public surface -------------------------------------------------------------

    @property
    def controller(self) -> AgentController:
        """Approve, deny and list pending approvals: the control plane bound to this runtime."""
        return controller_of(self)

    @property
    def state(self) -> AgentState:
        """The current state: an immutable snapshot (holding it costs nothing). For a session
        saved earlier it is empty until the runtime loaded it (:meth:`load`)."""
        return self._state

    @property
    def extensions(self) -> tuple[Extension, ...]:
        """The installed extensions, in the order their hooks run (built-in ones first)."""
        return self._extensions.extensions

    @property
    def history(self) -> tuple[AgentMessage, ...]:
        """The conversation so far."""
        return self._state.history

    @property
    def is_running(self) -> bool:
        """True while a run is active."""
        return self._active is not None

    @property
    def loaded(self) -> bool:
        """True once the session's saved state (if any) was read (see :meth:`load`)."""
        return self._loaded

    @property
    def detached(self) -> str | None:
        """Why this runtime no longer owns its session (``"replaced"``: a newer runtime took
        it; ``"closed"``: :meth:`aclose`), or None while it does. A detached runtime
        refuses runs and decisions."""
        return self._detached

    @property
    def closed(self) -> bool:
        """True once :meth:`aclose` began: the runtime runs and decides nothing more."""
        return self._closing is not None

    async def aclose(self, grace: float = lifecycle.DEFAULT_GRACE) -> AgentRunResult | None:
        """End this runtime's ownership of its session (DESIGN §14 "Lifecycle"): an active run
        gets ``grace`` seconds to suspend at a safe checkpoint, else it is cancelled; either
        way it is saved (suspended or ended, never as still running). Then ``runtime.detached``
        (reason ``"closed"``) is published and runs and decisions answer ``runtime_closed``.
        Kernel shutdown does the same by itself (:mod:`arknb.runtime.lifecycle`).

        Returns:
            The result of the run it ended, or None if none was active.
        """
        return await lifecycle.close_runtime(self, grace)

    async def __aenter__(self) -> AgentRuntime:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @property
    def current_run(self) -> RunHandle | None:
        """The active run's handle (also for runs continued after an approval), or None."""
        ctx = self._active
        return RunHandle(ctx.task, ctx.run_id, self.cancel) if ctx is not None and ctx.task is not None else None

    async def run(self, input: RunInput) -> AgentRunResult:
        """Run to the end and return the result. Cancelling the awaiting task cancels the run.

        A saved session is loaded first; if its state cannot be read, the load error is
        raised and nothing is saved over it.
        """
        await self._load()
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
        keep reaching the kernel while the run streams. A runtime that was not loaded yet
        loads first, in the task; a refusal found then (a pending approval, a load error)
        is raised by ``await handle``.
        """
        messages = self._coerce_input(input)
        self._check_can_start(new_input=True)
        return self._launch(lambda ctx: drive(self, ctx, new_input=messages),
                            recheck=lambda: self._check_state_allows(new_input=True))

    async def run_stream(self, input: RunInput) -> AsyncIterator[AgentEvent]:
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
        # Ending a paused run is a (very short) run of its own: the same terminal path
        # answers the frozen calls, saves (mandatory), publishes agent.cancelled, after_run.
        self._set_state(pending_approval=None)
        self._launch(lambda ctx: drive(self, ctx, cancel_paused=True))

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
        await self._load()
        return await self.start_resume().wait()

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

    # -- ApprovalHost ---------------------------------------------------------------

    def get_pending_approval_batch(self) -> PendingApprovalBatch | None:
        """The pending batch (immutable), for the controller."""
        return self._state.pending_approval

    async def apply_approval_decision(self, approval_id: str, decision: ApprovalDecision,
                                      deny_reason: str | None = None, *,
                                      batch_id: str | None = None) -> ApprovalDecisionResult:
        """Apply one decision (the controller's only way in); ok only once it is saved.

        With ``batch_id``, only an item of that batch is decided (a card of another batch
        is refused).
        """
        async with self._approval_lock:
            if self._detached is not None or self.closed:
                return ApprovalDecisionResult.failure(approval_id, detached_error(self))
            await self._extensions.restored()  # a state given to the constructor: tell the extensions first
            try:
                return await apply_decision(self, approval_id, ApprovalDecision(decision), deny_reason, batch_id)
            finally:
                self._stop_if_asked_while_deciding()

    # -- InDoubtHost -------------------------------------------------------------------

    async def apply_in_doubt_decision(self, item_id: str, resolution: str,
                                      text: str | None = None) -> ApprovalDecisionResult:
        """Apply a person's decision on an in-doubt call (the controller's only way in)."""
        async with self._approval_lock:
            if self._detached is not None or self.closed:
                return ApprovalDecisionResult.failure(item_id, detached_error(self))
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
        if self._detached is not None or self.closed:
            raise detached_error(self)
        if self._active is not None:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.RUN_ALREADY_ACTIVE,
                           f"run {self._active.run_id} is still active; await it, or cancel() it first")
        self._check_state_allows(new_input=new_input)

    def _check_state_allows(self, *, new_input: bool) -> None:
        state = self._state
        if new_input and state.pending_approval is not None and not state.not_resumable:
            # Seed 000 §10.2: new input must not clear a frozen batch and leave unpaired calls.
            # (A batch of a session marked not resumable can never be decided: new input
            # ends it, answering its calls as not executed, so the session is never stuck.)
            # The batch's kind words the refusal (e.g. pending_plan_review_blocks_input).
            raise self._extensions.blocks_input_error(state.pending_approval)

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
        """Publish unconditionally (for callers that already checked for listeners).

        The known secrets are redacted from every payload first (``_redaction``); the
        text of ``llm.chunk`` was redacted by the model phase's chunk guard, since a
        secret may be split across chunks. Then the payload is frozen, once, so no
        listener can change it for the others (a payload built frozen costs nothing here).
        """
        redaction = None
        if self.secret_lint.known_values and event_type != EventTypes.LLM_CHUNK:
            payload, redaction = self._redactor.payload(event_type, payload)
        self._seq += 1
        ctx = self._active
        rid = run_id or (ctx.run_id if ctx is not None else (self._state.current_run_id or ""))
        if not isinstance(payload, FrozenDict):
            payload = freeze_payload(payload)
        self.bus.publish(new_event(event_type, self.session_id, rid, self._seq, self._clock(), payload,
                                   f"{rid}:{self._seq}"))
        if redaction is not None:
            self._redactor.report(redaction)

    def _set_state(self, **updates: Any) -> None:
        self._state = self._state.model_copy(update=updates)

    def _append_history(self, messages: Iterable[AgentMessage], usage: Usage | None = None) -> None:
        state = self._state
        # Redacted on the way in: history is what is saved, shown and sent to the model.
        messages = self._redactor.messages(state.history, tuple(messages))
        updates: dict[str, Any] = {"history": state.history + messages}
        if usage is not None:
            updates["usages"] = state.usages + (usage,)
        self._state = state.model_copy(update=updates)

    def _answer_unanswered(self, why: str) -> None:
        calls = unanswered_calls(self._state.history)
        if calls:
            self._append_history(tool_message(c, ToolResult.from_text(why, is_error=True, error_code=ErrorCode.NOT_EXECUTED.value))
                                 for c in calls)

    def _stamped(self, state: AgentState) -> AgentState:
        """``state`` with the bookkeeping a save records (sequence, time, loop window)."""
        window, forgiven = self.loop_detector.snapshot()
        return state.model_copy(update={"event_sequence": self._seq, "updated_at": self._clock(),
                                        "loop_window": window, "loop_forgiven": forgiven})

    def _build_request(self) -> ModelRequest:
        state = self._state
        extensions = self._extensions
        if not extensions:
            return ModelRequest.model_construct(messages=self._system + state.history,
                                                tools=self.tools.definitions(), config=self.config)
        return ModelRequest.model_construct(messages=extensions.system_messages(self._system, state) + state.history,
                                            tools=extensions.offered_tools(self.tools, state).definitions(),
                                            config=self.config)

    def _offered_tools(self) -> ToolRegistry:
        """The tools the model is offered now: the user's plus the extensions' for this state."""
        return self._extensions.offered_tools(self.tools, self._state)

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_{uuid.uuid4().hex[:12]}"

    def __repr__(self) -> str:
        detached = f", detached={self._detached!r}" if self._detached is not None else ""
        return (f"AgentRuntime(session_id={self.session_id!r}, tools={list(self.tools.names())}, "
                f"hooks={self.hooks.names()}, running={self.is_running}{detached})")


def _drop_reporter(emit: Callable[..., Any], bus: EventBus) -> Callable[[str, int], None]:
    """The bus's ``on_dropped``: publish ``bus.dropped`` through the runtime's (weak) emit."""
    def report(name: str, count: int) -> None:
        emit(EventTypes.BUS_DROPPED, {"listener": name, "dropped": count, "total": bus.dropped_by.get(name, count)})

    return report
