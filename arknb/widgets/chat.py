"""ChatWidget: a chat with a running agent, with inline tool cards and approvals."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Iterable

import anywidget
import traitlets

from ._base import STATIC, check_events, check_runtime, detach, spawn
from ._coalescer import DEFAULT_INTERVAL, Coalescer
from ._payload import call_fields, error_text
from ._protocol import Action, Msg
from ._transcript import Transcript

__all__ = ["ChatWidget"]

_APPROVAL_EVENTS = frozenset({"approval.required", "approval.decided", "approval.resolved", "agent.started",
                              "agent.success", "agent.error", "agent.cancelled", "agent.suspended",
                              "agent.aborted", "agent.resumed"})


class ChatWidget(anywidget.AnyWidget):
    """A chat view of an :class:`~arknb.AgentRuntime`: send box, streamed answers,
    tool-call cards, hook decisions, approval cards, Stop / Suspend / Resume.

    Every button only schedules work on the kernel's running loop
    (``runtime.start``, ``controller.approve``, ...), so the widget works while the
    cell that made it has returned and a run is in flight. Streamed text is batched
    (about one message per 33 ms) and structure (tool calls, approvals, the end of a
    run) is sent at once, so a 10,000 chunks/s model never floods the browser.

    Args:
        runtime: the runtime to drive; ``None`` together with ``events`` replays a
            recorded run read-only.
        events: recorded events (``AgentEvent`` or their dicts) to replay.
        interval: seconds between batched flushes.
        clock, call_later: injectable time source and timer (tests).

    Example:
        >>> chat = ChatWidget(runtime)            # doctest: +SKIP
        >>> chat                                   # doctest: +SKIP
        >>> ChatWidget.from_events(recorded)       # read-only replay  # doctest: +SKIP
    """

    _esm = STATIC / "chat.js"
    _css = STATIC / "chat.css"

    transcript = traitlets.Dict().tag(sync=True)
    """Snapshot ``{"rev", "status", "entries": [...]}`` (see ``_transcript``)."""
    approvals = traitlets.List().tag(sync=True)
    """Pending approval items, each with ``deciding`` and ``error`` for its buttons."""
    status = traitlets.Unicode("idle").tag(sync=True)
    """idle, running, awaiting_approval, suspended, or the last run's stop reason."""
    read_only = traitlets.Bool(False).tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    """The last failed action's message ('' after a successful one)."""

    def __init__(self, runtime: Any = None, *, events: Iterable[Any] | None = None,
                 interval: float = DEFAULT_INTERVAL, clock: Callable[[], float] | None = None,
                 call_later: Callable[..., Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._runtime = runtime
        self._tasks: set[asyncio.Future] = set()
        self._ui: dict[str, dict[str, Any]] = {}
        self._want_snapshot = False
        self._approvals_dirty = False
        self._unsubscribe: Callable[[], None] | None = None
        self._coalescer = Coalescer(self._flush, interval=interval, clock=clock, call_later=call_later)
        if runtime is None:
            self._transcript = Transcript()
            for event in check_events(events or (), "ChatWidget"):
                self._transcript.apply(event)
            self.read_only = True
        else:
            check_runtime(runtime, "ChatWidget")
            state = runtime.state
            self._transcript = Transcript.from_history(getattr(state, "history", ()),
                                                       getattr(state, "pending_approval", None))
            if getattr(runtime, "is_running", False):
                self._transcript.status = "running"
            for event in events or ():
                self._transcript.apply(event)
            self._unsubscribe = runtime.bus.subscribe("*", self._on_event)
        self.on_msg(self._on_msg)
        self._approvals_dirty = True
        self._flush()

    @classmethod
    def from_events(cls, events: Iterable[Any], **kwargs: Any) -> ChatWidget:
        """A read-only chat replaying recorded events (no runtime, no buttons)."""
        return cls(None, events=check_events(events, "ChatWidget.from_events"), **kwargs)

    # -- kernel -> browser ------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        # Listener on the bus: observes only, never raises into the runtime.
        if event.type == "llm.chunk":  # the hot path: one list append per chunk
            payload = event.payload
            self._transcript.chunk(payload.get("kind") or "text", payload.get("text") or "")
            self._coalescer.delta()
            return
        structural = self._transcript.apply(event)
        if event.type in _APPROVAL_EVENTS:
            self._approvals_dirty = True
        if structural:
            self._coalescer.structural()
        else:
            self._coalescer.delta()

    def _flush(self) -> None:
        t = self._transcript
        if t.needs_snapshot or self._want_snapshot:
            self._want_snapshot = False
            with self.hold_sync():
                self.transcript = t.snapshot()
                self.status = t.status
                if self._approvals_dirty:
                    self._refresh_approvals()
        else:
            ops = t.take_ops()
            if ops:
                self.send({"type": Msg.DELTA, "ops": ops})
            if self._approvals_dirty:
                self._refresh_approvals()

    def _refresh_approvals(self) -> None:
        self._approvals_dirty = False
        if self._runtime is not None:
            controller = self._runtime.controller
            items = controller.list_pending_approvals()
            whole = getattr(controller, "pending_batch", None)  # the batch's kind: approvals or in-doubt calls
            batch = whole() if items and callable(whole) else None
            kind = str(getattr(batch, "kind", "tool"))
            pending = [{**a, "kind": kind} for a in map(_approval_dict, items) if a["decision"] == "pending"]
        else:
            pending = [dict(a) for a in self._transcript.approvals.values() if a["decision"] == "pending"]
        self._publish_approvals(pending)

    def _publish_approvals(self, pending: list[dict[str, Any]] | None = None) -> None:
        if pending is None:
            pending = [{k: v for k, v in a.items() if k not in ("deciding", "error")} for a in self.approvals]
        live = {a["approval_id"] for a in pending}
        self._ui = {k: v for k, v in self._ui.items() if k in live}
        self.approvals = [{**a, "deciding": bool(self._ui.get(a["approval_id"], {}).get("deciding")),
                           "error": self._ui.get(a["approval_id"], {}).get("error")} for a in pending]

    # -- browser -> kernel ------------------------------------------------------------

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any = None) -> None:
        if not isinstance(content, dict):
            return
        kind, request_id = content.get("type"), content.get("request_id")
        if kind == Action.HELLO:
            self._want_snapshot = True
            self._approvals_dirty = True
            self._coalescer.structural()
            return
        if kind not in Action.USER_ACTIONS:
            self._answer(str(kind), request_id, False, f"unknown action {kind!r}")
            return
        if self._runtime is None or self.read_only:
            self._answer(kind, request_id, False, "this chat is a read-only replay")
            return
        try:
            getattr(self, f"_do_{kind}")(content, request_id)
        except Exception as exc:  # a refusal such as run_already_active
            self._answer(kind, request_id, False, error_text(exc))

    def _answer(self, action: str, request_id: Any, ok: bool, error: str | None = None, **extra: Any) -> None:
        self.error = "" if ok else (error or "failed")
        self.send({"type": Msg.ACTION_RESULT, "action": action, "request_id": request_id, "ok": ok,
                   "error": None if ok else self.error, **extra})

    def _do_send(self, content: dict[str, Any], request_id: Any) -> None:
        text = str(content.get("text") or "").strip()
        if not text:
            self._answer(Action.SEND, request_id, False, "nothing to send")
            return
        self._runtime.start(text)
        self._answer(Action.SEND, request_id, True)

    def _do_stop(self, content: dict[str, Any], request_id: Any) -> None:
        self._runtime.cancel()
        self._answer(Action.STOP, request_id, True)

    def _do_suspend(self, content: dict[str, Any], request_id: Any) -> None:
        self._runtime.request_suspend()
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
        self._decide(Action.MARK_FAILED, str(content.get("approval_id") or ""),
                     str(content.get("text") or "") or "marked failed in the chat", request_id)

    def _decide(self, action: str, approval_id: str, reason: str | None, request_id: Any) -> None:
        self._ui[approval_id] = {"deciding": True, "error": None}
        self._publish_approvals()
        controller = self._runtime.controller

        async def decide() -> None:
            if action == Action.APPROVE:
                result = await controller.approve(approval_id)
            elif action == Action.DENY:
                result = await controller.deny(approval_id, reason)
            elif action == Action.RERUN:  # an in-doubt card (DESIGN §13)
                result = await controller.rerun(approval_id)
            elif action == Action.MARK_DONE:
                result = await controller.mark_done(approval_id, reason or "")
            else:
                result = await controller.mark_failed(approval_id, reason or "marked failed")
            ok = bool(getattr(result, "ok", True))
            self._decided(action, approval_id, request_id, ok, None if ok else error_text(result.error))

        spawn(decide(), self._tasks,
              lambda exc: self._decided(action, approval_id, request_id, False, error_text(exc)))

    def _decided(self, action: str, approval_id: str, request_id: Any, ok: bool, error: str | None) -> None:
        self._ui[approval_id] = {"deciding": False, "error": None if ok else error}
        self._refresh_approvals()
        self._answer(action, request_id, ok, error, approval_id=approval_id)

    # -- lifetime -----------------------------------------------------------------------

    def close(self) -> None:
        """Stop listening to the runtime and close the widget."""
        detach(self)
        super().close()


def _approval_dict(item: Any) -> dict[str, Any]:
    data = item if isinstance(item, dict) else item.model_dump(mode="json")
    call = call_fields(data.get("tool_call"))
    return {"approval_id": str(data.get("approval_id")), "call_id": call["id"], "tool_name": call["name"],
            "arguments": call["arguments"], "risk_level": str(data.get("risk_level") or ""),
            "reason": str(data.get("reason") or ""), "decision": str(data.get("decision") or "pending"),
            "deny_reason": data.get("deny_reason")}
