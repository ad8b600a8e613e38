"""ChatWidget: a chat with a running agent, with inline tool cards and approvals."""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Any, Callable, Iterable

import anywidget
import traitlets

from ..events import EventTypes
from ._base import RuntimeWidget, bundle, check_events, check_runtime, spawn
from ._chat_elicitation import answer_elicitation
from ._chat_approvals import ApprovalCards
from ._chat_html import chat_html
from ._chat_human import GRAPH_ACTIONS, GraphCards
from ._chat_media import DEFAULT_MAX_ATTACHMENT_BYTES, attachment_parts
from ._chat_plan import PlanPanel
from ._coalescer import DEFAULT_INTERVAL, Coalescer
from ._payload import error_text
from ._protocol import Action, Msg
from ._static_html import StaticTwin, new_static_id
from ._transcript import Transcript

__all__ = ["ChatWidget"]

_log = logging.getLogger("arknb.widgets")

_APPROVAL_EVENTS = frozenset({
    EventTypes.APPROVAL_REQUIRED, EventTypes.APPROVAL_DECIDED, EventTypes.APPROVAL_RESOLVED,
    EventTypes.AGENT_STARTED, EventTypes.AGENT_SUCCESS, EventTypes.AGENT_ERROR, EventTypes.AGENT_CANCELLED,
    EventTypes.AGENT_SUSPENDED, EventTypes.AGENT_ABORTED, EventTypes.AGENT_RESUMED})
_SETTLED = frozenset({EventTypes.AGENT_SUCCESS, EventTypes.AGENT_ERROR, EventTypes.AGENT_CANCELLED,
                      EventTypes.AGENT_ABORTED, EventTypes.AGENT_SUSPENDED})
_DETACHED_WHY = {
    "replaced": "A newer chat took over this session: the live one is further down.",
    "closed": "This chat's runtime was closed (runtime.aclose()), so it can no longer act.",
    "lease_lost": "Another process holds this session now, so this chat can no longer act.",
}
# Traits only the kernel writes; the front end acts through messages (see set_state).
_KERNEL_TRAITS = frozenset({"_snapshot", "approvals", "status", "read_only", "error", "detached", "input_block",
                            "suspending", "static_id", "plan", "humans", "max_attachment_bytes", "session_id"})


class ChatWidget(RuntimeWidget, anywidget.AnyWidget):
    """A chat view of an :class:`~arknb.AgentRuntime`: send box, streamed answers,
    tool-call cards, hook decisions, approval cards, Stop / Suspend / Resume.

    Every button only schedules work on the kernel's running loop
    (``runtime.start``, ``controller.approve``, ...), so the widget works while the
    cell that made it has returned and a run is in flight. A view gets the whole
    transcript once; after that only what changed is sent (new entries, changed
    cards, streamed text batched about every 33 ms), so a run costs the same bytes
    at the thousandth run of a session as at the tenth.

    The chat never acts on stale state: before a decision it re-reads the
    controller; a card decided elsewhere shows that decision; a chat whose runtime
    was replaced or closed (``runtime.detached``) says so and disables its buttons.
    Displayed, it is followed by a static HTML copy of the conversation (a companion
    output the live view hides, kept current), so a saved notebook reads well on
    GitHub, in nbviewer or reopened without its kernel; :meth:`to_html` gives the whole
    conversation as a page to share.

    Args:
        runtime: the runtime to drive; ``None`` together with ``events`` replays a
            recorded run read-only.
        events: recorded events (``AgentEvent`` or their dicts) to replay.
        interval: seconds between batched flushes.
        since: show the conversation from this history index on (a slice: what
            ``%%chat`` shows for its exchange); None shows it all.
        clock, call_later: injectable time source and timer (tests).

    Example:
        >>> chat = ChatWidget(runtime)            # doctest: +SKIP
        >>> chat                                   # doctest: +SKIP
        >>> ChatWidget.from_events(recorded)       # read-only replay  # doctest: +SKIP
        >>> Path("chat.html").write_text(chat.to_html())  # doctest: +SKIP
    """

    _esm = bundle("chat.js")
    _css = bundle("chat.css")

    _snapshot = traitlets.Dict().tag(sync=True)
    """The whole transcript ``{"seq", "n", "status", "entries"}`` as of the last resync (a view
    saying ``hello``; ``n`` counts them); ``delta`` messages numbered past ``seq`` carry what
    changed since."""
    approvals = traitlets.List().tag(sync=True)
    """The pending batch's items: ``decision``, plus ``deciding``/``error``/``note`` for the card."""
    status = traitlets.Unicode("idle").tag(sync=True)
    """idle, running, awaiting_approval, suspended, or the last run's stop reason."""
    read_only = traitlets.Bool(False).tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    """The last failed action's message ('' after a successful one)."""
    detached = traitlets.Unicode("").tag(sync=True)
    """Why this chat can no longer act ('' while its runtime owns the session)."""
    input_block = traitlets.Unicode("").tag(sync=True)
    """Why the send box is disabled now ('' when a message can be sent)."""
    suspending = traitlets.Bool(False).tag(sync=True)
    """True from a Suspend click until the run reaches its checkpoint."""
    static_id = traitlets.Unicode("").tag(sync=True)
    """Ties the views to the static companion output (and keys the transcript they share)."""
    humans = traitlets.List().tag(sync=True)
    """What a followed graph run waits for (:meth:`follow_graph`; ``js/src/chat_human.js``)."""
    max_attachment_bytes = traitlets.Int(DEFAULT_MAX_ATTACHMENT_BYTES).tag(sync=True)
    """The send box's size cap per pasted or dropped file (bytes); a bigger one is refused
    with its size and the cap, in the browser and again here."""
    session_id = traitlets.Unicode("").tag(sync=True)
    """The runtime's session: a chat a newer one replaced links to the live chat of the same
    session on the page (``js/src/lib/live_chat_link.js``)."""
    plan = traitlets.Dict().tag(sync=True)
    """The planner's todo list (``{}`` before any plan): ``version``, ``items`` (``content``,
    ``status``), ``approved``, ``mode``; replaced each time ``write_todos`` changes it."""

    def __init__(self, runtime: Any = None, *, events: Iterable[Any] | None = None,
                 interval: float = DEFAULT_INTERVAL, clock: Callable[[], float] | None = None,
                 call_later: Callable[..., Any] | None = None, since: int | None = None, **kwargs: Any) -> None:
        # In the constructor, so the front end's initialize already sees it.
        super().__init__(static_id=new_static_id(), **kwargs)
        self._runtime = runtime
        self._since = since
        self._tasks: set[asyncio.Future] = set()
        self._seq = 0
        self._snapshots = 0
        self._twin_pending = False
        self._want_snapshot = True
        self._controls_dirty = True
        self._coalescer = Coalescer(self._flush, interval=interval, clock=clock, call_later=call_later)
        self._twin = StaticTwin(self, self._static_html, clock=clock, call_later=call_later)
        self._plan_dirty = True
        self._graph_cards: GraphCards | None = None
        if runtime is None:
            self._transcript = Transcript()
            self._plan = PlanPanel()
            for event in check_events(events or (), "ChatWidget"):
                self._transcript.apply(event)
                self._plan.apply(event)
            self.read_only = True
        else:
            check_runtime(runtime, "ChatWidget")
            self.session_id = str(getattr(runtime, "session_id", "") or "")
            self._transcript = self._from_state()
            self._plan = PlanPanel.from_state(runtime.state)
            for event in events or ():
                self._transcript.apply(event)
                self._plan.apply(event)
            why = getattr(runtime, "detached", None)  # AgentRuntime: the reason, or None
            if isinstance(why, str) and why:
                self.detached = _detached_text(why)
            self._listen(runtime.bus)
            if getattr(runtime, "loaded", True) is False and callable(getattr(runtime, "load", None)):
                # A runtime for a saved session reads it before acting; read it now so the
                # chat shows the saved transcript and pending approvals (state.loaded).
                self._transcript.status = "loading"
                self._load()
        self._cards = ApprovalCards(runtime, self._transcript)
        self.on_msg(self._on_msg)
        self._flush()

    def _load(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop (a script building widgets): the runtime loads on first use
            return
        spawn(self._runtime.load(), self._tasks, self._load_failed)

    def _load_failed(self, exc: BaseException) -> None:
        self._transcript.status = "idle"
        self.error = f"could not load the saved session: {error_text(exc)}"
        self._controls_dirty = True
        self._coalescer.structural()

    @classmethod
    def from_events(cls, events: Iterable[Any], **kwargs: Any) -> ChatWidget:
        """A read-only chat replaying recorded events (no runtime, no buttons)."""
        return cls(None, events=check_events(events, "ChatWidget.from_events"), **kwargs)

    @property
    def transcript(self) -> dict[str, Any]:
        """The transcript now: ``{"status", "entries"}`` (copies; changing them changes nothing)."""
        t = self._transcript
        return {"status": t.status, "entries": t.current_entries()}

    def to_html(self, *, full_document: bool = True) -> str:
        """The conversation as self-contained, sanitised HTML (every entry; no script).

        Model and tool text is rendered as Markdown with raw HTML shown as text,
        links limited to http(s)/mailto and images to inline data, as in the live view.
        """
        return chat_html(self._transcript, status=self._transcript.status, full_document=full_document,
                         plan=self._plan.value)

    def _static_html(self) -> str:
        # The companion output: the newest entries only, so refreshing it costs the same
        # in a long session as in a short one.
        return chat_html(self._transcript, status=self._transcript.status, full_document=False, limit=STATIC_LIMIT,
                         detached=self.detached, static_id=self.static_id, plan=self._plan.value)

    def _ipython_display_(self) -> None:
        if self.comm is None:  # closed: only the static copy is left to show
            from IPython.display import display

            display(self._twin.bundle(), raw=True)
            return
        # The view, then a static companion output that the live view hides; it is what
        # GitHub, nbviewer and a reopened notebook without its kernel show.
        self._twin.display()
        _refresh_at_cell_end(self)

    def _settled(self) -> None:
        """The chat settled (a run ended or waits): refresh the static companion soon."""
        self._twin.changed()
        self._twin_pending = True

    def _from_state(self) -> Transcript:
        state = self._runtime.state
        history = getattr(state, "history", ())
        t = Transcript.from_history(history[self._since:] if self._since else history,
                                    getattr(state, "pending_approval", None))
        if getattr(self._runtime, "is_running", False):
            t.status = "running"
        return t

    # -- kernel -> browser ------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        # Listener on the bus: observes only, never raises into the runtime.
        etype = event.type
        if etype == EventTypes.LLM_CHUNK and event.parent_call_id is None:  # the hot path: one list append per chunk
            payload = event.payload
            self._transcript.chunk(payload.get("kind") or "text", payload.get("text") or "")
            self._coalescer.delta()
            return
        if etype == EventTypes.STATE_LOADED:
            # The runtime read its saved session after this chat was built: show it.
            self._transcript = self._from_state()
            self._cards.transcript = self._transcript
            self._plan = PlanPanel.from_state(self._runtime.state)
            self._plan_dirty = True
            self._seq += 1  # a new transcript: every view takes the snapshot, none keeps its own
            self._want_snapshot = self._controls_dirty = True
            self._cards.dirty = True
            self._coalescer.structural()
            return
        if etype == EventTypes.RUNTIME_DETACHED:
            payload = event.payload
            self.detached = _detached_text(str(payload.get("reason") or "closed"), str(payload.get("message") or ""))
            self._controls_dirty = self._cards.dirty = True
            self._coalescer.structural()
            self._settled()
            return
        if etype == EventTypes.PLAN_UPDATED:
            # The todo list is durable: a trait, replaced in place as write_todos changes it.
            if self._plan.apply(event):
                self._plan_dirty = True
                self._coalescer.structural()
            return
        before = self._transcript.status
        structural = self._transcript.apply(event)
        if etype in _APPROVAL_EVENTS or self._transcript.status != before:
            self._cards.dirty = True
            self._controls_dirty = True
        if etype in _SETTLED:
            if self.suspending and etype != EventTypes.AGENT_SUSPENDED:
                # Suspend waits for a checkpoint (between model calls and tool batches): say
                # when the run ended without reaching one, rather than dropping the request.
                self._transcript.note("info", "Suspend gave up: the run ended before it reached a checkpoint "
                                              "where it could pause.")
            self.suspending = False
            self._settled()
        if structural:
            self._coalescer.structural()
        else:
            self._coalescer.delta()

    def _flush(self) -> None:
        t = self._transcript
        ops = t.take_ops()
        if ops:
            self._seq += 1
            self.send({"type": Msg.DELTA, "seq": self._seq, "ops": ops})
        with self.hold_sync():
            if self._want_snapshot:
                # Views in other tabs are current through the delta above; the one that
                # said hello (or a fresh page) takes this snapshot.
                self._want_snapshot = False
                self._snapshots += 1  # always a change, so the trait goes out even if nothing moved
                self._snapshot = {"seq": self._seq, "n": self._snapshots, **t.snapshot()}
            if self._controls_dirty:
                self._controls_dirty = False
                self.status = t.status
                self.input_block = self._input_block()
            if self._cards.dirty:
                self.approvals = self._cards.items(detached=bool(self.detached))
            if self._plan_dirty:
                self._plan_dirty = False
                self.plan = dict(self._plan.value)

    def _input_block(self) -> str:
        runtime = self._runtime
        if runtime is None:
            return "this chat is a read-only replay"
        if self.detached:
            return self.detached
        if self._transcript.status == "loading":
            return "loading the saved session…"
        if self._transcript.status == "running":
            # The event stream, not runtime.is_running: a run's last event is published a
            # moment before the runtime lets it go, and nothing is published after that.
            return "a run is in progress: wait for it to finish, or press Stop"
        if self._cards.pending():
            # By the cards' kinds: a sub-agent's in-doubt call waits in a parent batch of another kind.
            if self._cards.pending_kind("in_doubt"):
                return "a call may or may not have run: rerun it, or mark it done or failed first"
            if self._cards.pending_kind("plan"):
                return "a plan waits for your review: approve or reject it first"
            return "a tool call waits for your approval: approve or deny it first"
        return ""

    def follow_graph(self, run: Any) -> None:
        """Show what graph run ``run`` waits for as cards in this chat (a human node's
        question with its form, an in-doubt step's choices) and answer them from here."""
        if self._graph_cards is not None:
            self._graph_cards.close()
        self._graph_cards = GraphCards(self, run)

    # -- browser -> kernel ------------------------------------------------------------

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any = None) -> None:
        if not isinstance(content, dict):
            return
        kind, request_id = content.get("type"), content.get("request_id")
        if kind in GRAPH_ACTIONS and self._graph_cards is not None:
            self._graph_cards.handle(content)
            return
        if kind == Action.HELLO:
            self._want_snapshot = self._controls_dirty = self._cards.dirty = True
            self._coalescer.structural()
            return
        if kind not in Action.USER_ACTIONS:
            self._answer(str(kind), request_id, False, f"unknown action {kind!r}")
            return
        if self._runtime is None or self.read_only:
            self._answer(kind, request_id, False, "this chat is a read-only replay")
            return
        if self.detached:
            self._answer(kind, request_id, False, self.detached, **_approval_id(content))
            return
        try:
            getattr(self, f"_do_{kind}")(content, request_id)
        except Exception as exc:  # a refusal such as run_already_active
            self._answer(kind, request_id, False, error_text(exc))
        self._controls_dirty = True
        self._coalescer.structural()

    def _answer(self, action: str, request_id: Any, ok: bool, error: str | None = None, **extra: Any) -> None:
        self.error = "" if ok else (error or "failed")
        self.send({"type": Msg.ACTION_RESULT, "action": action, "request_id": request_id, "ok": ok,
                   "error": None if ok else self.error, **extra})

    def _do_send(self, content: dict[str, Any], request_id: Any) -> None:
        text = str(content.get("text") or "").strip()
        parts = attachment_parts(content.get("attachments"), cap=self.max_attachment_bytes)
        if not text and not parts:
            self._answer(Action.SEND, request_id, False, "nothing to send")
            return
        self._runtime.start([text, *parts] if parts and text else parts or text)
        self._answer(Action.SEND, request_id, True)

    def _do_stop(self, content: dict[str, Any], request_id: Any) -> None:
        self._runtime.cancel()
        self.suspending = False
        self._answer(Action.STOP, request_id, True)

    def _do_suspend(self, content: dict[str, Any], request_id: Any) -> None:
        if self._runtime.request_suspend() is False:
            self._answer(Action.SUSPEND, request_id, False, "nothing is running, so there is nothing to suspend")
            return
        self.suspending = True
        self._answer(Action.SUSPEND, request_id, True)

    def _do_resume(self, content: dict[str, Any], request_id: Any) -> None:
        self._runtime.start_resume()  # a refusal (e.g. nothing_to_resume) is answered by _on_msg
        self._answer(Action.RESUME, request_id, True)

    def _do_approve(self, content: dict[str, Any], request_id: Any) -> None:
        self._decide(Action.APPROVE, str(content.get("approval_id") or ""), None, request_id)

    def _do_deny(self, content: dict[str, Any], request_id: Any) -> None:
        reason = content.get("reason")
        self._decide(Action.DENY, str(content.get("approval_id") or ""), str(reason) if reason else None, request_id)

    def _do_rerun(self, content: dict[str, Any], request_id: Any) -> None:
        self._decide(Action.RERUN, str(content.get("approval_id") or ""), None, request_id)

    def _do_mark_done(self, content: dict[str, Any], request_id: Any) -> None:
        self._decide(Action.MARK_DONE, str(content.get("approval_id") or ""), str(content.get("text") or ""),
                     request_id)

    def _do_mark_failed(self, content: dict[str, Any], request_id: Any) -> None:
        self._decide(Action.MARK_FAILED, str(content.get("approval_id") or ""), str(content.get("text") or ""),
                     request_id)

    def _do_elicit(self, content: dict[str, Any], request_id: Any) -> None:
        approval_id, action = str(content.get("approval_id") or ""), str(content.get("action") or "")
        cards = self._cards
        cards.deciding(approval_id)
        self.approvals = cards.items(detached=False)

        async def answer() -> None:
            ok, error = await answer_elicitation(self._runtime, approval_id, action, content.get("content"))
            if ok:
                cards._record(approval_id, "approved" if action == "accept" else "denied", action)
            else:
                cards.failed(approval_id, RuntimeError(error or "refused"))
            self._decided(Action.ELICIT, approval_id, request_id, (ok, error))

        spawn(answer(), self._tasks,
              lambda exc: self._decided(Action.ELICIT, approval_id, request_id, cards.failed(approval_id, exc)))

    def _decide(self, action: str, approval_id: str, reason: str | None, request_id: Any) -> None:
        cards = self._cards
        refusal = cards.check(approval_id)  # re-read the controller before acting
        if refusal is not None:
            self._answer(action, request_id, False, refusal, approval_id=approval_id,
                         decision=cards.recorded(approval_id))
            return
        cards.deciding(approval_id)
        self.approvals = cards.items(detached=False)

        async def decide() -> None:
            if action in Action.IN_DOUBT_ACTIONS:  # an in-doubt card (DESIGN §13)
                result = await cards.resolve(action, approval_id, reason)
            else:
                result = await cards.decide(action == Action.APPROVE, approval_id, reason)
            self._decided(action, approval_id, request_id, result)

        spawn(decide(), self._tasks,
              lambda exc: self._decided(action, approval_id, request_id, cards.failed(approval_id, exc)))

    def _decided(self, action: str, approval_id: str, request_id: Any, outcome: tuple[bool, str | None]) -> None:
        ok, error = outcome
        decision = self._cards.recorded(approval_id)  # before a resolved batch's cards are forgotten
        self.approvals = self._cards.items(detached=bool(self.detached))
        self._controls_dirty = True
        self._coalescer.structural()
        self._answer(action, request_id, ok, error, approval_id=approval_id, decision=decision)

    # -- lifetime -----------------------------------------------------------------------

    def set_state(self, sync_data: dict[str, Any]) -> None:
        """Apply front-end trait updates, except to the traits only the kernel writes
        (the front end keeps its copy of the snapshot current for saved widget state)."""
        super().set_state({k: v for k, v in sync_data.items() if k not in _KERNEL_TRAITS})

    def close(self) -> None:
        """Stop listening to the runtime and close the widget (its views go too); the
        outputs that showed it keep the static copy of the conversation."""
        twin = getattr(self, "_twin", None)  # ipywidgets also calls close() from __del__, maybe mid-__init__
        if twin is not None:
            try:
                twin.close()
            except Exception:  # e.g. at interpreter exit, with no kernel left to publish to
                _log.debug("the chat's static copy could not be republished on close", exc_info=True)
        super().close()


STATIC_LIMIT = 200
"""Most entries in the static companion (``to_html()`` has them all)."""

_DISPLAYED: "weakref.WeakSet[ChatWidget]" = weakref.WeakSet()
_HOOKED = False


def _refresh_at_cell_end(chat: ChatWidget) -> None:
    """Refresh a displayed chat's companion at the end of each notebook cell if it settled
    meanwhile, so an executed notebook (nbclient, nbconvert) keeps the final conversation
    rather than the one from a second before the last cell ended."""
    global _HOOKED
    _DISPLAYED.add(chat)
    if _HOOKED:
        return
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return
    shell = get_ipython()
    if shell is None:
        return

    def flush(*_args: Any) -> None:
        for widget in list(_DISPLAYED):
            if getattr(widget, "_twin_pending", False):
                widget._twin_pending = False
                widget._twin.refresh()

    shell.events.register("post_run_cell", flush)
    _HOOKED = True


def _detached_text(reason: str, message: str = "") -> str:
    """One short sentence for people (the runtime's own message, for developers, is in
    ``runtime.detached`` and the ``runtime.detached`` event)."""
    known = _DETACHED_WHY.get(reason)
    if known is not None:
        return known
    return f"This chat can no longer act ({reason}); use a chat on the current runtime."


def _approval_id(content: dict[str, Any]) -> dict[str, Any]:
    aid = content.get("approval_id")
    return {"approval_id": str(aid)} if aid is not None else {}
