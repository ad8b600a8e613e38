"""The extension seam: how a capability plugs into the runtime (DESIGN §14, STYLE §11).

An :class:`Extension` contributes, through one small protocol:

* **tools** offered on the next model call (they may depend on the state, e.g. the
  tools of an activated skill) and executed like registered tools;
* a **system-prompt section** for the next model call;
* **hooks** that run after the user's hooks of each slot, in extension order, before the
  built-in approval policy (``runtime.hooks.clear()`` does not remove them; their
  decisions appear in ``hook.decision`` under their names);
* **approval kinds**: how a call the extension defers to a person is announced after
  the mandatory save, decided and answered (a plan review, a sub-agent's approval, ...);
* a **slice of the saved state** (``state.extensions[name]``, JSON-ready) that it reads
  and replaces through its :class:`ExtensionScope`;

and it is told when a saved session is restored (:meth:`Extension.on_restore`). The
loop knows none of them by name: ``plan_mode=`` and ``skills=`` only install
extensions, and ``AgentRuntime(..., extensions=[...])`` installs your own. The shape
follows pydantic-ai's capabilities and LangChain's agent middleware.

Example:
    >>> class Clock(Extension):                                   # doctest: +SKIP
    ...     name = "clock"
    ...     def setup(self, scope):
    ...         self.scope = scope
    ...     def instructions(self, state):
    ...         return f"It is turn {state.total_loop_count + 1} of this session."
    >>> runtime = AgentRuntime(model, extensions=[Clock()])       # doctest: +SKIP
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Sequence

from ..domain import ArkError, ErrorCode, ErrorLayer, ModelRequest, ModelResponse, ToolCall, ToolResult
from ..state import (
    AgentState, ApprovalDecision, ApprovalDecisionResult, DeniedCall, PendingApprovalBatch, PendingApprovalItem,
)
from .result import StopReason

if TYPE_CHECKING:
    from ..controller import AgentController
    from ..events import AgentEvent, EventBus
    from ..hooks import AgentHook
    from ..providers.base import LLMClient
    from ..tools import Tool, ToolRegistry

__all__ = ["ApprovalKind", "Extension", "ExtensionScope", "Resolution", "SaveResult", "WaitingCall"]


class Extension:
    """Base class of a runtime extension; every method is optional.

    Attributes:
        name: unique per runtime; the key of the extension's slice in
            ``state.extensions`` and the prefix of its error messages.

    The runtime calls, in this order: :meth:`setup` once when it is built, then
    :meth:`hooks` and :meth:`approval_kinds` once; :meth:`on_restore` when it adopts a
    saved session; :meth:`tools` and :meth:`instructions` before every model call (and
    :meth:`tools` again when the turn's tool calls are planned and run); :meth:`on_close`
    once when the runtime is closed. Every call
    happens on the runtime's event loop.
    """

    name: str = ""

    def setup(self, scope: ExtensionScope) -> None:
        """Called once when the runtime is built; keep ``scope`` to reach the runtime later."""

    def tools(self, state: AgentState) -> Iterable[Tool]:
        """The tools (``@ark.tool`` objects) to offer on the next model call.

        Build the tools once (in ``__init__`` or :meth:`setup`) and return them here: this
        is called every turn. A name that is already taken by a user tool or another
        extension's tool is a config error (``invalid_argument``).
        """
        return ()

    def instructions(self, state: AgentState) -> str | None:
        """A section added to the system prompt of the next model call (or None)."""
        return None

    def hooks(self) -> Iterable[AgentHook]:
        """``AgentHook`` instances that run after the user's hooks of each slot.

        Unlike a user hook, an extension hook is part of the runtime's configuration: an
        exception it raises in a decision slot fails the run with that error (an
        ``ArkError`` as it is, anything else as ``internal_error`` naming the hook) instead
        of being skipped, so a gate can never fail open. Observer slots (``after_run``,
        ``after_persist_state``) stay isolated: their failures become ``hook.diagnostic``.
        """
        return ()

    def approval_kinds(self) -> Iterable[ApprovalKind]:
        """The kinds of pending items this extension creates (see :class:`ApprovalKind`)."""
        return ()

    def on_restore(self, state: AgentState) -> Awaitable[None] | None:
        """Called (and awaited when it returns an awaitable) when the runtime adopts a saved
        session, before its first run or decision. ``state`` is the loaded state."""
        return None

    def waiting_calls(self, run_id: str, calls: Sequence[ToolCall]) -> Awaitable[Iterable[WaitingCall]] | Iterable[
            WaitingCall]:
        """Of ``calls``, the unanswered calls of run ``run_id`` that a crash interrupted,
        those whose work already waits for a person elsewhere (a sub-agent paused for its
        own approvals or in-doubt calls). Called (and awaited when it returns an awaitable)
        when such a session is restored, after :meth:`on_restore`: the run pauses at once
        with one item for each, of the given kind, instead of being continued by
        ``resume()`` only to find the same (DESIGN §13: what a person must decide is listed
        as soon as the session is restored)."""
        return ()

    def for_new_session(self) -> Extension | None:
        """A new extension configured like this one, for a runtime of another session (what
        ``%%chat --new`` carries into a new conversation; the saved slice is not carried).
        None, the default, if it cannot be copied: the caller then refuses, naming it."""
        return None

    def on_close(self, grace: float) -> Awaitable[None] | None:
        """Called (and awaited when it returns an awaitable) when the runtime is closed
        (:meth:`AgentRuntime.aclose`, kernel shutdown), after its active run was asked to
        suspend and while the runtime waits up to ``grace`` seconds for it: let go of what
        the extension holds in this process (sub-agents close their children, which suspend
        at their own checkpoints and release their sessions' leases). A failure is reported
        as ``hook.diagnostic``; the runtime closes anyway."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


@dataclass(frozen=True, slots=True)
class WaitingCall:
    """An interrupted run's call that waits for a person (see :meth:`Extension.waiting_calls`):
    it becomes a pending item of ``kind`` with ``reason`` and ``detail``, decided like one
    its tool deferred with ``ctx.defer(reason, kind=kind, detail=detail)``."""

    call: ToolCall
    reason: str
    kind: str
    detail: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class SaveResult:
    """What :meth:`ExtensionScope.persist` reports."""

    ok: bool
    skipped: bool = False
    error: ArkError | None = None

    def refusal(self, text: str, advice: str = "") -> ToolResult:
        """A tool's error answer for this failed save: ``text (why)`` and the advice, with
        the save's error code."""
        why = self.error.message if self.error is not None else "unknown error"
        return ToolResult.from_text(f"{text} ({why}){'; ' + advice if advice else ''}", is_error=True,
                                    error_code=self.error.code if self.error is not None else None)


class ExtensionScope:
    """What an extension may use of its runtime: a narrow view, not the runtime (STYLE §12).

    Handed to :meth:`Extension.setup`. Use it only on the runtime's event loop (from a
    hook, an ``async`` tool, or an approval kind), never from a worker thread.

    Attributes:
        name: the extension's name (its slice key).
        model: the runtime's model (e.g. to ask it for a summary).
        bus: the runtime's event bus (to observe; use :meth:`emit` to publish).
    """

    __slots__ = ("name", "model", "bus", "_ports")

    def __init__(self, name: str, *, model: LLMClient, bus: EventBus, ports: _ScopePorts) -> None:
        self.name = name
        self.model = model
        self.bus = bus
        self._ports = ports

    @property
    def controller(self) -> AgentController:
        """The runtime's controller (asked for when used: the runtime makes it on first use)."""
        return self._ports.controller()

    @property
    def session_id(self) -> str:
        """The session the runtime works on."""
        return self._ports.session_id()

    @property
    def state(self) -> AgentState:
        """The runtime's current state (an immutable snapshot)."""
        return self._ports.state()

    @property
    def run_id(self) -> str | None:
        """The active run, or None between runs."""
        return self._ports.run_id()

    @property
    def took_over(self) -> bool:
        """True if the runtime took its session from a live owner (``restore(...,
        takeover=True)``): a session the extension opens on its behalf (a sub-agent's)
        is taken over too, since the old owner's claim covered it as well."""
        return self._ports.took_over()

    @property
    def slice(self) -> Any:
        """This extension's slice of the state (``state.extensions[name]``), or None."""
        return self._ports.state().extensions.get(self.name)

    @property
    def tools(self) -> ToolRegistry:
        """The tools the model is offered now: the user's and every extension's."""
        return self._ports.tools()

    def set_slice(self, value: Any) -> None:
        """Replace this extension's slice; it is saved with the next save. None removes it.

        Raises:
            ArkError: ``invalid_argument`` if ``value`` is not JSON-ready (dicts with string
                keys, lists, strings, finite numbers, booleans, None).
        """
        if value is None:
            self._ports.set_slice(self.name, None)
            return
        try:
            # A copy through JSON: the state owns its slice, and nothing else can change it later.
            frozen = json.loads(json.dumps(value, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           f"extension {self.name!r}: its state slice must be JSON-ready ({exc})") from None
        self._ports.set_slice(self.name, frozen)

    def emit(self, event_type: str, payload: dict[str, Any] | Callable[[], dict[str, Any]]) -> None:
        """Publish an event of the current run (a callable payload is built only if someone listens).

        Use an :class:`~arknb.events.EventTypes` constant; a type of your own should be
        namespaced (``"myext.something"``).
        """
        if not isinstance(event_type, str) or not event_type:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           f"extension {self.name!r}: an event type must be a non-empty string")
        self._ports.emit(event_type, payload)

    def republish(self, event: AgentEvent, *, parent_run_id: str, parent_call_id: str) -> None:
        """Publish another runtime's event (a sub-agent's) on this runtime's bus, nested under
        ``parent_call_id`` of run ``parent_run_id`` (an event that already has a parent,
        a grandchild's, keeps it). Listeners see it as that runtime's event: its session,
        run and sequence are unchanged; its payload passes this runtime's redactor, as every
        event this runtime publishes does."""
        self._ports.republish(event.with_parent(parent_run_id, parent_call_id))

    async def call_model(self, request: ModelRequest, *, purpose: str) -> ModelResponse:
        """Ask the runtime's model on the extension's own behalf (a summary, a classification).

        The call is a model call like the loop's: it is announced as ``llm.before`` /
        ``llm.after`` carrying ``purpose`` (so a trace and the timeline show it), its token
        usage counts in the run's result and in ``state.usages``, the run's cancellation
        stops it, and known secrets are redacted from its events. It does not go through
        the user's model hooks: those are written for the agent's own turns (a request
        rewrite, a cached ``respond``, a retry policy), and it is made from inside one.

        Raises:
            ArkError: ``invalid_argument`` for an empty purpose; whatever the model raises.
        """
        if not isinstance(purpose, str) or not purpose.strip():
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           f"extension {self.name!r}: call_model() needs a purpose such as 'context_summary'")
        return await self._ports.call_model(request, purpose.strip())

    def runtime_options(self) -> dict[str, Any]:
        """What a runtime like this one is built from, for building a sibling (``SubAgent.clone``):
        ``model``, ``tools`` (the user's tools, not the extensions'), ``hooks`` (a copy of the
        user's hook registry), ``storage``, ``system_prompt``, ``config``, ``max_turns``,
        ``require_approval`` and ``secrets`` (the strings its saves must never hold)."""
        return self._ports.runtime_options()

    async def save_slice(self, value: Any, reason: str) -> SaveResult:
        """Replace this extension's slice and save it at once (a mandatory save): what a tool
        does before it answers with the change, since a restore reuses a call's recorded
        answer without running it again. If the save fails, the slice is put back.

        Raises:
            ArkError: ``invalid_argument`` as :meth:`set_slice`.
        """
        before = self.slice
        self.set_slice(value)
        saved = await self.persist(reason, mandatory=True)
        if not saved.ok:
            self.set_slice(before)
        return saved

    async def persist(self, reason: str, *, mandatory: bool = False) -> SaveResult:
        """Save the state now (through the persistence hooks, like the runtime's own saves).

        A mandatory save ignores ``skip``. Announce what the save records only after it
        succeeded (persist-before-announce, seed 000 §8.1).
        """
        return await self._ports.persist(reason, mandatory)

    def clock(self) -> float:
        """The runtime's clock (seconds since the epoch; replaceable in tests)."""
        return self._ports.clock()

    def new_id(self, prefix: str) -> str:
        """A fresh id from the runtime's id factory (``{prefix}_…``)."""
        return self._ports.new_id(prefix)

    def __repr__(self) -> str:
        return f"ExtensionScope(name={self.name!r}, session_id={self.session_id!r})"


@dataclass(frozen=True, slots=True)
class _ScopePorts:
    """The runtime functions a scope reaches (built by the runtime; private)."""

    session_id: Callable[[], str]
    state: Callable[[], AgentState]
    run_id: Callable[[], str | None]
    tools: Callable[[], Any]
    set_slice: Callable[[str, Any], None]
    emit: Callable[[str, Any], None]
    persist: Callable[[str, bool], Awaitable[SaveResult]]
    clock: Callable[[], float]
    new_id: Callable[[str], str]
    runtime_options: Callable[[], dict[str, Any]]
    controller: Callable[[], Any]
    call_model: Callable[[Any, str], Awaitable[Any]]
    took_over: Callable[[], bool]
    republish: Callable[[AgentEvent], None]


@dataclass(frozen=True, slots=True)
class Resolution:
    """How a fully decided batch continues (what :meth:`ApprovalKind.resolve` returns).

    Attributes:
        run: the calls to execute now.
        answered: the calls answered without running, each with its result (announced as
            ``tool.denied``).
        settled: the calls a person answered with a result of their own (an in-doubt call
            marked done or failed; announced as ``tool.after``).
        replan: send ``run`` through ``before_tool_call`` planning again (for a kind
            that paused a batch before its calls were planned, e.g. a detected loop).
        stop: end the run instead, with this stop reason and error; unanswered calls
            are answered with ``stop_text``.
    """

    run: tuple[ToolCall, ...] = ()
    answered: tuple[DeniedCall, ...] = ()
    settled: tuple[DeniedCall, ...] = ()
    replan: bool = False
    stop: tuple[StopReason, ArkError] | None = None
    stop_text: str = "not executed"


class ApprovalKind:
    """One kind of pending item: how it is announced, decided and answered.

    An extension defers a call to a person from its ``before_tool_call`` hook with
    ``ToolCallHookResult.defer(reason, kind=..., detail={...})``. The runtime freezes
    the batch exactly as for a dangerous tool: the batch is saved (mandatory) first,
    then ``approval.required`` is published, then :meth:`announce` runs, then
    ``agent.suspended``; the run ends ``awaiting_approval``. Decisions come through the
    controller (``approve`` / ``deny``, or a capability's own controller methods that
    call them); after each, :meth:`on_decided` runs. When every item is decided the run
    continues: :meth:`resolve` says which calls run and which are answered.

    The runtime's own kinds are ``"tool"`` (a dangerous or hook-deferred call),
    ``"loop"`` (a detected loop asking to continue or stop) and ``"in_doubt"`` (a call a
    crash left with an unknown fate, DESIGN §13). Calls of the model message that the
    decided batch does not cover (a crash left them unplanned) are planned when it resolves.

    Attributes:
        name: the kind's name, stored in ``PendingApprovalItem.kind`` and
            ``PendingApprovalBatch.kind``; unique per runtime.
    """

    name: str = ""
    suspend_reason: str = "awaiting_approval"
    """The ``reason`` of the ``agent.suspended`` event when a batch of this kind pauses the run."""
    resume_reason: str = "approval"
    """The ``reason`` of the ``agent.resumed`` event when the decided batch continues the run."""
    how_to_decide: str = "decide them with runtime.controller.approve/deny"
    """How a person decides this kind's items: the paused run's error message (``awaiting_approval``) says it."""

    def announce(self, batch: PendingApprovalBatch, items: tuple[PendingApprovalItem, ...]) -> None:
        """Publish this kind's own events about ``items`` (already saved)."""

    async def on_decided(self, batch: PendingApprovalBatch, item: PendingApprovalItem) -> None:
        """Called after a decision on one of this kind's items was applied."""

    def answer(self, item: PendingApprovalItem) -> ToolResult | None:
        """The result a decided item's call gets without running, or None to run it.

        By default an approved call runs and a denied one is answered ``tool_denied`` with
        the reason.
        """
        if item.decision is ApprovalDecision.APPROVED:
            return None
        why = item.deny_reason or "denied by the user"
        return ToolResult.from_text(f"tool_denied: {why}", is_error=True, error_code=ErrorCode.TOOL_DENIED.value)

    def resolve(self, batch: PendingApprovalBatch,
                answer: Callable[[PendingApprovalItem], ToolResult | None]) -> Resolution:
        """How the fully decided ``batch`` continues (called for the batch's kind).

        ``answer`` applies each item's own kind (a batch may mix kinds). By default the
        calls the hooks allowed and the approved calls run; the others are answered.
        """
        run = list(batch.allowed_calls)
        answered = list(batch.denied_calls)
        for item in batch.items:
            result = answer(item)
            if result is None:
                run.append(item.tool_call)
            else:
                answered.append(DeniedCall(call=item.tool_call, result=result,
                                           reason=item.deny_reason or "denied by the user", hook="approval"))
        return Resolution(run=tuple(run), answered=tuple(answered))

    def expand(self, item: PendingApprovalItem) -> Sequence[PendingApprovalItem] | None:
        """What a person decides in place of ``item`` (None: ``item`` itself).

        An approval *source*: a kind whose item stands for decisions made elsewhere (a
        sub-agent's own pending approvals) lists those here, under ids of its choosing;
        ``controller.list_pending_approvals()`` shows them instead of ``item``, and a
        decision on one of their ids reaches :meth:`route`.
        """
        return None

    async def route(self, batch: PendingApprovalBatch, item: PendingApprovalItem, approval_id: str,
                    decision: ApprovalDecision, reason: str | None) -> ApprovalDecisionResult | None:
        """Decide ``approval_id``, one of the ids :meth:`expand` listed for ``item``; None if
        it is not one of them. Called outside the runtime's approval lock, so it may decide
        ``item`` itself through ``scope.controller`` once the source has moved on."""
        return None

    async def route_in_doubt(self, batch: PendingApprovalBatch, item: PendingApprovalItem, item_id: str,
                             resolution: str, text: str | None) -> ApprovalDecisionResult | None:
        """Like :meth:`route`, for an in-doubt call :meth:`expand` listed (``controller.rerun``,
        ``mark_done``, ``mark_failed``; ``resolution`` is ``rerun``, ``done`` or ``failed``)."""
        return None

    def refuse_decision(self, item: PendingApprovalItem) -> ArkError | None:
        """Why ``controller.approve`` / ``deny`` must not decide ``item`` (a kind with its own
        controller methods says so here), or None to accept the decision."""
        return None

    def continues_on_resume(self, item: PendingApprovalItem) -> bool:
        """True if ``item`` waits for no person's decision, only for the run to go on: a
        paused run whose every pending item says so is continued by ``runtime.resume()``,
        which approves them (a sub-agent suspended when its parent's runtime closed, DESIGN
        §14 "Lifecycle"). By default an item waits for a person."""
        return False

    def blocks_input_error(self, batch: PendingApprovalBatch) -> ArkError:
        """The error new input gets while a batch of this kind waits."""
        return ArkError(ErrorLayer.SECURITY, ErrorCode.PENDING_APPROVAL_BLOCKS_INPUT,
                        "tool approvals are pending: approve or deny them (runtime.controller) before "
                        "sending new input")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

