"""AgentRuntime: the facade that wires the phases of a run together (DESIGN §7).

The runtime is the only owner of the session state. Its loop lives in ``_loop.py``
and its phases in ``_model_call.py``, ``_tool_batch.py``, ``_approvals.py`` and
``_persistence.py``; this module holds its construction, loading, state and events
and the small shared helpers those phases call; starting, cancelling, suspending and
resuming runs and the decisions that continue them are in ``_run_control.py``
(:class:`RunControl`, a base of this class).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
import weakref
from collections.abc import Iterable
from typing import Any, Callable

from pydantic import SecretStr

from ..controller import AgentController
from ..domain import (
    AgentMessage, ArkError, ContentPart, ErrorCode, ErrorLayer, ModelConfig, ModelRequest, ToolResult, Usage,
    invalid_argument,
)
from ..domain.frozen import FrozenDict
from ..events import EventBus, EventTypes
from ..events.envelope import freeze_payload, new_event
from ..hooks import AgentHook, HookPipeline, HookRegistry
from ..providers.base import LLMClient
from ..state import (
    AgentState, ApprovalDecisionResult, MemoryStateStorage, SecretLint, StateStorage, validate_session_id,
)
from ..tools import ToolRegistry
from ._approvals import LoopKind, resolve_decided_batch
from ._elicitation import ElicitationDesk
from ._in_doubt import InDoubtKind, pause_interrupted_run
from ._context import RunContext
from ._extension_host import ExtensionHost, ToolKind, make_scope
from ._invocation import make_invocations
from ._output import OutputPhase, output_phase, restored_phase
from ._keywords import keyword_extensions
from ._redaction import Redactor
from ._run_control import RunControl
from ._session import _RESTORE_SEQUENCE_GAP, claim, detach, detached_error, load_session
from ._tool_batch import tool_message, unanswered_calls
from ._weak import NO_CONTROLLER, controller_of, weak_method
from . import lifecycle, live
from .extensions import Extension
from .loop_detector import LoopDetector
from .output import OutputMode
from .result import AgentRunResult

__all__ = ["AgentRuntime", "RunInput"]

_log = logging.getLogger(__name__)
_DEFAULT_SAVE_TIMEOUT = 30.0

RunInput = str | AgentMessage | ContentPart | Iterable[str | ContentPart | AgentMessage]


class AgentRuntime(RunControl):
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
        plan_mode: ``PlanMode.OFF`` (default), ``AUTO`` (the model keeps a todo list with the
            built-in ``write_todos`` tool) or ``REVIEW`` (a new plan waits for a person's
            approval; until then only ``read_only`` tools run). DESIGN §14.
        skills: :class:`~arknb.skills.Skill` objects or an ``ark.load_skills(path)`` report:
            always-on skills join the system prompt, the others are offered through the
            built-in ``activate_skill`` tool.
        compressor: an :class:`~arknb.memory.ContextCompressor`: requests over its token
            budget get their older messages replaced by a summary (``state.history`` keeps
            them all; ``search_history`` finds them).
        memory: an :class:`~arknb.memory.EpisodicMemory`: completed runs are recorded as
            episodes, and ``retrieve_memory`` finds them (also from other sessions).
        subagents: :class:`~arknb.memory.SubAgent` objects the model can hand work to
            with ``delegate_task(agent, task)``.
        extensions: your own :class:`~arknb.runtime.extensions.Extension` objects (tools,
            hooks, prompt sections and a saved state slice through one seam); they run
            after the built-in ones, in order.
        fresh: discard the session's saved state (deleted when the runtime first loads,
            also a state that cannot be read) and start empty.
        save_timeout: seconds one save may take before it counts as failed
            (``state_save_failed`` naming the save and the limit); None for no limit.
        output_type: the type of every run's answer (DESIGN §17): a pydantic model,
            dataclass, TypedDict, ``list[...]``, ``Literal`` or ``str``; ``result.output``
            is then the validated value (``run(..., output_type=)`` sets it per run).
        output_mode: ``"auto"`` (native ``response_format`` json_schema where the model's
            ``capabilities.json_schema_output`` says so, else a ``final_result`` tool),
            ``"native"`` or ``"tool"``.
        max_output_retries: how many more tries a wrong typed answer gets (its validation
            errors go back to the model) before the run fails with ``output_invalid``.

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
                 compressor: Any = None, memory: Any = None, subagents: Any = None,
                 extensions: Iterable[Extension] = (), output_type: Any = None, output_mode: OutputMode = "auto",
                 max_output_retries: int = 2) -> None:
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
        if isinstance(extensions, (str, bytes)) or not isinstance(extensions, Iterable):
            raise invalid_argument(f"extensions must be a list of Extension objects, got {type(extensions).__name__}")
        if not isinstance(fresh, bool):
            raise invalid_argument(f"fresh must be a bool, got {fresh!r}")
        if fresh and state is not None:
            raise invalid_argument("fresh=True discards the saved state, so it cannot be combined with state=")
        if output_mode not in ("auto", "native", "tool"):
            raise invalid_argument(f"output_mode must be 'auto', 'native' or 'tool', got {output_mode!r}")
        if isinstance(max_output_retries, bool) or not isinstance(max_output_retries, int) or max_output_retries < 0:
            raise invalid_argument(f"max_output_retries must be an int >= 0, got {max_output_retries!r}")
        if save_timeout is not None and (isinstance(save_timeout, bool) or not isinstance(save_timeout, (int, float))
                                         or not save_timeout > 0):
            raise invalid_argument(f"save_timeout must be seconds > 0 or None, got {save_timeout!r}")
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
        self.hooks = hooks.copy() if isinstance(hooks, HookRegistry) else HookRegistry(hooks)
        emit = weak_method(self._emit)  # the pipeline and redactor are ours: no strong reference back
        # Capabilities plug in as extensions (DESIGN §14): the keywords only install them.
        this = weakref.ref(self)
        # Tool sources (MCP servers) may ask a person mid-call: their questions' desk (DESIGN §15).
        self._elicitations = ElicitationDesk() if self.tools.sources else None
        self._extensions = ExtensionHost(
            [*keyword_extensions(plan_mode=plan_mode, skills=skills, compressor=compressor, memory=memory,
                                 subagents=subagents), *extensions,
             *((self._elicitations,) if self._elicitations is not None else ())],
            kinds=(ToolKind(), LoopKind(lambda signature: this().loop_detector.forgive(signature)), InDoubtKind(emit)))
        self._pipeline = HookPipeline(self.hooks, emit, tail=self._extensions.hooks)
        # A slow async listener's dropped deliveries are announced (it never slows the run).
        self.bus.on_dropped = _drop_reporter(emit, self.bus)
        self.secret_lint = SecretLint(secrets)
        self._redactor = Redactor(self.secret_lint, emit)
        for source in self.tools.sources:  # env=/headers= values of MCP servers (DESIGN §15)
            for value in source.secret_values():
                self.secret_lint.add(value)
        secret_values = getattr(model, "secret_values", None)
        if callable(secret_values):
            for value in secret_values():
                self.secret_lint.add(value)
        observe_secrets = getattr(model, "observe_secrets", None)
        # The model reports every key it resolves (env, callables) before using it, so
        # the key is known before any result of the request can be published or saved.
        # (Held weakly by the model; closing the runtime may call this to stop at once.)
        self._unobserve_secrets = observe_secrets(self._redactor.learn) if callable(observe_secrets) else None
        # A model that writes files of its own (ev.Recorder's cassettes) redacts them with
        # this runtime's lint: the same secrets, escapes and shapes as every other exit.
        redact_with = getattr(model, "redact_with", None)
        if callable(redact_with):
            redact_with(self.secret_lint)
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
        live.record(self)  # for the IPython extension's listing (%arknb)
        previous = claim(self)
        self._predecessor: asyncio.Task | None = None
        if previous is not None:
            self._predecessor = detach(previous, "replaced", (
                f"a newer AgentRuntime took session {self.session_id!r} on {self.storage!r}; this one no longer "
                "runs or decides anything: use the newer runtime"))
        self._extensions.install(lambda name: make_scope(self, name))
        self._offered_tools()  # a tool name two owners claim fails here, not in the first run
        self.output_mode: OutputMode = output_mode
        self.max_output_retries = max_output_retries
        self._output_type = output_type
        # The output phase of the current (or next continued) run; start() makes a fresh one.
        self._run_output: OutputPhase = self._output_phase(None)
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
        if await runtime._load() is None:  # (a run a crash left with calls in doubt is paused for a person)
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.SESSION_NOT_FOUND,
                           f"no saved session {session_id!r} in {storage!r}")
        return runtime

    async def load(self, *, takeover: bool = False) -> AgentState:
        """Load the session's saved state, if it has one, and return the current state.

        Runs, resumes and decisions call it first, so it is needed only to look at a
        session before acting on it (``runtime.state``, the pending approvals; a chat
        widget shows them once loaded). Loading is done once: calling it again returns
        the state as it is now. After loading a saved state ``state.loaded`` is published.
        On a durable store the session's lease is taken before the state is read; with
        ``takeover=True`` it is taken from a live owner too, as by ``restore(...,
        takeover=True)`` (only the first load takes it).

        Raises:
            ArkError: the storage's load error if the saved state cannot be read
                (``state_corrupt`` naming the file, ``state_version_unsupported``,
                ``state_load_failed``); nothing is saved over it, and every run and
                decision fails with the same error until it is fixed (or the runtime is
                created with ``fresh=True``). ``state_conflict`` if this runtime was
                detached (a newer runtime took the session). ``session_locked`` if
                another live owner holds the session's lease (and ``takeover`` is False).
        """
        if not isinstance(takeover, bool):
            raise invalid_argument(f"takeover must be a bool, got {takeover!r}")
        if takeover and not self._loaded:
            self._takeover = True
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
                # Tool sources list their tools first, so an interrupted call of an idempotent
                # MCP tool is known as idempotent; a source that cannot start leaves its calls
                # in doubt (the safe side) and fails again when used.
                try:
                    await self.tools.refresh()
                except ArkError as exc:
                    _log.warning("arknb: a tool source could not be listed while restoring session %r: %s",
                                 self.session_id, exc)
                # A run a crash interrupted with calls in doubt waits for a person at once
                # (DESIGN §13), however the session is opened: so new input is refused
                # until they are decided, and never meets an unpaired call.
                await pause_interrupted_run(self)
                if found.is_running and self._active is None:
                    # A paused run goes on asking for the type it asked for (DESIGN §17).
                    self._run_output = restored_phase(found.run_output, self._run_output, model=self.model,
                                                      max_retries=self.max_output_retries)
            self._loaded = True
            if found is not None:
                await resolve_decided_batch(self)  # (a batch saved fully decided, yet pending)
                # What the load announced (state.loaded, a pause for calls in doubt) is in the
                # outbox, and heard, when load returns: listeners hear only committed events.
                await self._invocations.flush()
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

    def add_extension(self, extension: Extension) -> None:
        """Install ``extension`` on this runtime after it was built (a server that keeps its
        own bookkeeping in the saved state of the runtimes a user's factory builds). It is
        set up at once and goes after the installed ones. Its ``on_restore`` is called for
        a saved session adopted later, not for one this runtime already adopted (its
        :attr:`ExtensionScope.slice` reads the adopted state in any case).

        Raises:
            ArkError: ``invalid_argument`` for what ``extensions=`` refuses (not an
                extension, a name already installed); ``run_already_active`` while a run
                is active.
        """
        if self._active is not None:
            raise ArkError(ErrorLayer.RUNTIME, ErrorCode.RUN_ALREADY_ACTIVE,
                           "add_extension() while a run is active: add it before the run, or after it ends")
        self._extensions.add(extension, lambda name: make_scope(self, name))
        self._offered_tools()  # a tool name two owners claim fails here, not in the next run

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

    def _emit(self, event_type: str, payload: Any, run_id: str | None = None) -> None:
        """Publish an event if anyone listens; a callable payload is built only then."""
        if not self.bus.has_listeners(event_type):
            return
        self._publish(event_type, payload() if callable(payload) else payload, run_id)

    def _publish(self, event_type: str, payload: dict, run_id: str | None = None) -> None:
        """Publish unconditionally (for callers that already checked for listeners).

        Every secret and credential shape is redacted from the payload first
        (``_redaction``): every listener, the durable outbox, widgets and exports get the
        redacted payload. The text of ``llm.chunk`` was redacted by the model phase's
        chunk guard, since a secret may be split across chunks. Then the payload is
        frozen, once, so no listener can change it for the others (a payload built
        frozen costs nothing here).
        """
        redaction = None
        if event_type != EventTypes.LLM_CHUNK:
            payload, redaction = self._redactor.payload(event_type, payload)
        self._seq += 1
        ctx = self._active
        rid = run_id or (ctx.run_id if ctx is not None else (self._state.current_run_id or ""))
        if not isinstance(payload, FrozenDict):
            payload = freeze_payload(payload)
        self.bus.publish(new_event(f"{rid}:{self._seq}", event_type, self.session_id, rid, self._seq, self._clock(),
                                   payload, None, None))
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

    def _note_message(self, message: AgentMessage, **notes: Any) -> AgentMessage:
        """``message`` (in history) with the runtime's notes on it (e.g. its validated typed
        answer, DESIGN §17), put in its place in history so they are saved with it."""
        history = self._state.history
        index = next((i for i in range(len(history) - 1, -1, -1) if history[i] is message), None)
        if index is None:
            return message
        noted = message.model_copy(update=notes)
        checked = self._redactor.checked_from(history) == len(history)
        history = history[:index] + (noted,) + history[index + 1:]
        self._state = self._state.model_copy(update={"history": history})
        if checked:  # (the notes come from the redacted message: nothing new to check)
            self._redactor.mark_checked(history)
        return noted

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
            request = ModelRequest.model_construct(messages=self._system + state.history,
                                                   tools=self.tools.definitions(), config=self.config, output=None)
        else:
            request = ModelRequest.model_construct(
                messages=extensions.system_messages(self._system, state) + state.history,
                tools=extensions.offered_tools(self.tools, state).definitions(), config=self.config, output=None)
        # A typed answer is asked for natively (response_format) or with a final_result tool.
        return self._run_output.shape(request)

    @property
    def output_type(self) -> Any:
        """The type of every run's answer (None: plain text); ``run(..., output_type=)`` overrides it."""
        return self._output_type

    @output_type.setter
    def output_type(self, value: Any) -> None:
        previous = self._output_type
        self._output_type = value
        try:
            phase = self._output_phase(None)
        except ArkError:
            self._output_type = previous
            raise
        if self._active is None:  # a continued run (resume) asks for the new type too
            self._run_output = phase

    def _output_phase(self, output_type: Any) -> OutputPhase:
        """The output phase of a run asking for ``output_type`` (None: the runtime's own)."""
        phase = output_phase(output_type if output_type is not None else self._output_type, mode=self.output_mode,
                             model=self.model, max_retries=self.max_output_retries)
        if phase.mode == "tool":  # (only then does a tool's name matter)
            phase.check_tools(self._offered_tools().names())
        return phase

    def list_elicitations(self) -> list:
        """The questions tool sources asked a person that wait for an answer (``controller.list_elicitations``)."""
        return self._elicitations.pending() if self._elicitations is not None else []

    async def apply_elicitation_answer(self, elicitation_id: str, action: str,
                                       content: Any = None) -> ApprovalDecisionResult:
        """Answer a waiting question (the controller's ``answer/decline/cancel_elicitation``)."""
        if self._elicitations is None:
            return ApprovalDecisionResult.failure(elicitation_id, ArkError(
                ErrorLayer.SECURITY, ErrorCode.APPROVAL_NOT_FOUND,
                f"no elicitation {elicitation_id!r} is waiting (this runtime has no tool sources)"))
        return await self._elicitations.answer(elicitation_id, action, content)

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
