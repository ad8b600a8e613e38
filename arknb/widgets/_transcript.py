"""Folding agent events into the chat transcript the ChatWidget shows.

The transcript is a list of entries (plain dicts, the same shape the front end
renders), each with a stable ``id`` and a ``kind``:

* ``user``: ``text``, and ``parts`` when it carries images or documents (``_chat_media``)
* ``assistant``: ``text``, ``reasoning``, ``streaming``, ``run_id``; ``output``
  (``{"name", "value"}``, a typed answer) and ``truncated`` when they apply
* ``tool``: ``call_id``, ``name``, ``arguments`` (JSON text), ``status`` (requested,
  running, awaiting_approval, in_doubt, approved, done, error, denied; ``not_executed``
  or ``interrupted`` (it may have run: running or in doubt) when the run ended before
  the call finished), ``result``,
  ``is_error``, ``duration_ms``, ``reason``; and ``subagent`` (``session_id``,
  ``status``, ``entries``) when the call delegated to a sub-agent: the child's own
  transcript, built from its events (those with ``parent_call_id``), nested further
  for a grandchild, sent as a patch of the card once per flush
* ``hook``: ``slot``, ``hook``, ``action``, ``reason``, ``before``, ``after``, ``count``
* ``notice``: ``level`` (info, warn, error), ``text``

Every change goes through the transcript's :class:`~._chat_ops.ChangeLog`, so after
the first snapshot the widget sends only what changed (:meth:`Transcript.take_ops`);
:meth:`Transcript.snapshot` gives a fresh copy of everything for a view that (re)opens.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ._chat_media import user_fields
from ._chat_ops import ChangeLog, Stream
from ._chat_output import OUTPUT_HANDLERS, saved_answer_fields
from ._payload import call_fields, error_text, jsonable, message_fields, result_fields

__all__ = ["Transcript"]

_TERMINAL_STATUS = {
    "agent.success": "completed", "agent.error": "failed", "agent.cancelled": "cancelled",
    "agent.aborted": "aborted",
}


class Transcript:
    """The chat transcript, built from events (and optionally a restored history).

    Example:
        >>> t = Transcript()
        >>> _ = t.apply({"type": "agent.started", "run_id": "r1", "payload": {"input": ["hi"]}})
        >>> _ = t.take_ops()                                  # the user entry
        >>> _ = t.apply({"type": "llm.before", "run_id": "r1", "payload": {"turn": 1}})
        >>> t.chunk("text", "Hel"); t.chunk("text", "lo")
        >>> t.take_ops()[-1]
        ['text', 'e2', 0, 5, 'Hello']
    """

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self._by_id: dict[str, dict[str, Any]] = {}
        self._streams: dict[str, Stream] = {}
        self._current: dict[str, Any] | None = None
        self._counter = 0
        self._open_tools: dict[str, dict[str, Any]] = {}  # cards whose call has not finished
        self.log = ChangeLog()
        """What changed since the last :meth:`take_ops` or :meth:`snapshot`."""
        self.status = "idle"
        self.run_id = ""
        self.approvals: dict[str, dict[str, Any]] = {}
        """Approval items seen in events, by approval id (``decision`` updated as decided)."""
        self.session_id = ""
        self._children: dict[str, Transcript] = {}
        """Sub-agents' transcripts, by the call id of the ``delegate_task`` card they belong to."""
        self._stale_children: set[str] = set()  # children changed since their card was patched
        self._at: float | None = None  # the time of the event being applied (messages show it)

    # -- building -----------------------------------------------------------------

    @classmethod
    def from_history(cls, history: Iterable[Any], pending_batch: Any = None) -> Transcript:
        """A transcript of a saved history (system messages skipped), plus the pending
        approval batch's deferred calls marked as awaiting approval.

        The batch's model message is already the last message of the history (the
        runtime appends it before it freezes the batch); it is added only when missing.
        """
        t = cls()
        for message in history:
            t._add_message(message_fields(message), run_id="", raw=message)
        if pending_batch is not None:
            batch = pending_batch if isinstance(pending_batch, Mapping) else _dump(pending_batch)
            if batch.get("model_message") is not None:
                m = message_fields(batch["model_message"])
                if not t._holds(m):
                    t._add_message(m, run_id=str(batch.get("run_id") or ""))
            reused: set[str] = set()
            for item in batch.get("items") or ():
                approval = t._note_approval(item)
                reused.update(str(i) for i in approval["detail"].get("reused_calls") or ())
            for call in batch.get("allowed_calls") or ():
                # Let through, but answered only once every item is decided: not merely
                # "requested". One that finished before a crash is reused from its record
                # (the in-doubt items' detail names it), not waiting for the decision.
                card = t._by_id.get(f"tool:{call_fields(call)['id']}")
                if card is not None and card["status"] == "requested":
                    origin = {"origin": "reused"} if card["call_id"] in reused else {}
                    t._card(card, status="queued", **origin)
            t.status = "awaiting_approval" if any(
                a["decision"] == "pending" for a in t.approvals.values()) else t.status
        t.log.clear([])
        return t

    def _holds(self, m: dict[str, Any]) -> bool:
        """True when assistant message ``m`` is already in the transcript."""
        if m["tool_calls"]:
            return all(f"tool:{c['id']}" in self._by_id for c in m["tool_calls"])
        last = next((e for e in reversed(self.entries) if e["kind"] == "assistant"), None)
        return last is not None and last["text"] == m["text"]

    def _add_message(self, m: dict[str, Any], run_id: str, raw: Any = None) -> None:
        role = m["role"]
        if role == "user":
            self._add("user", **user_fields(raw if raw is not None else m["text"]))
        elif role == "assistant":
            self._add("assistant", text=m["text"], reasoning=m["reasoning"], streaming=False, run_id=run_id,
                      **saved_answer_fields(raw))
            for call in m["tool_calls"]:
                self._tool(call, status="requested")
        elif role == "tool":
            card = self._by_id.get(f"tool:{m['tool_call_id']}")
            if card is not None and m["is_error"] and m["text"].startswith(_DENIED_PREFIX):
                self._card(card, result=None, is_error=True, status="denied", reason=m["text"][len(_DENIED_PREFIX):])
            elif card is not None:
                self._card(card, result=m["text"], is_error=m["is_error"], status="error" if m["is_error"] else "done")

    def _add(self, kind: str, entry_id: str | None = None, **fields: Any) -> dict[str, Any]:
        if entry_id is None:
            self._counter += 1
            entry_id = f"e{self._counter}"
        if self._at is not None and kind in ("user", "assistant"):
            fields.setdefault("at", self._at)
        entry = {"id": entry_id, "kind": kind, **fields}
        self.entries.append(entry)
        self._by_id[entry_id] = entry
        self.log.added(entry)
        return entry

    def _set(self, entry: dict[str, Any], **fields: Any) -> None:
        """Change fields of an entry (only those that really change are sent)."""
        changed = [name for name, value in fields.items() if name not in entry or entry[name] != value]
        if changed:
            for name in changed:
                entry[name] = fields[name]
            self.log.touched(entry, changed)

    def _tool(self, call: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
        call = call if "arguments" in call else call_fields(call)
        entry_id = f"tool:{call['id']}"
        card = self._by_id.get(entry_id)
        if card is None:
            card = self._add("tool", entry_id, call_id=call["id"], name=call["name"], arguments=call["arguments"],
                             status="requested", result=None, is_error=False, duration_ms=None, reason=None)
        self._card(card, name=call["name"], arguments=call["arguments"], **fields)
        return card

    def _card(self, card: dict[str, Any], **fields: Any) -> None:
        """Change a tool card, keeping the set of cards whose call is still open."""
        self._set(card, **fields)
        if card["status"] in _OPEN_TOOL_STATUS:
            self._open_tools[card["id"]] = card
        else:
            self._open_tools.pop(card["id"], None)

    def _notice(self, level: str, text: str) -> None:
        self._add("notice", level=level, text=text)

    def note(self, level: str, text: str) -> None:
        """Add a notice of the widget's own (``info``, ``warn`` or ``error``)."""
        self._close_streams()
        self._notice(level, text)

    # -- the stream fast path ---------------------------------------------------------

    def chunk(self, kind: str, text: str) -> None:
        """Append one streamed piece (``kind`` is ``"text"`` or ``"reasoning"``; a tool call's
        arguments, kind ``"tool_call"``, are not shown as they stream: its card comes with the
        complete message)."""
        stream = self._streams.get(kind)
        if stream is None:
            if kind == "tool_call":
                return
            stream = self._open_stream(kind)
        self.log.chunk(stream, text)

    def _open_stream(self, kind: str) -> Stream:
        if self._current is None:
            self._current = self._add("assistant", text="", reasoning="", streaming=True, run_id=self.run_id)
        field = "reasoning" if kind == "reasoning" else "text"
        stream = Stream(self._current, field)
        self._streams[kind] = stream
        return stream

    def take_ops(self) -> list[list[Any]]:
        """The operations for everything that changed since the last call (or snapshot)."""
        self._refresh_children()
        return self.log.take()

    def snapshot(self) -> dict[str, Any]:
        """A fresh JSON-ready copy of the whole transcript (pending stream text included);
        what was queued for sending is dropped, the snapshot carries it."""
        self._refresh_children()
        self.log.clear(list(self._streams.values()))
        return {"status": self.status, "entries": [dict(e) for e in self.entries]}

    # -- sub-agents -------------------------------------------------------------------

    def _owner_of(self, call_id: str) -> Transcript | None:
        """The transcript (this one or a sub-agent's, at any depth) holding the card of ``call_id``."""
        if f"tool:{call_id}" in self._by_id:
            return self
        for child in self._children.values():
            owner = child._owner_of(call_id)
            if owner is not None:
                return owner
        return None

    def _apply_nested(self, call_id: str, session_id: str, event: Any) -> bool:
        owner = self._owner_of(call_id)
        if owner is None:
            return False  # a call this transcript never saw (e.g. a view opened mid-run)
        child = owner._children.get(call_id)
        if child is None:
            child = owner._children[call_id] = Transcript()
        child.session_id = session_id
        structural = child.apply(_without_parent(event))
        # The card is patched once per flush (a child's stream does not cost a copy per chunk).
        self._mark_stale(owner, call_id)
        return structural

    def _mark_stale(self, owner: Transcript, call_id: str) -> None:
        owner._stale_children.add(call_id)
        if owner is self:
            return
        for cid, child in self._children.items():  # mark the path from here down to the owner
            if child is owner or child._owner_of(call_id) is not None:
                self._stale_children.add(cid)
                child._mark_stale(owner, call_id)
                return

    def _refresh_children(self) -> None:
        """Patch each card whose sub-agent changed with the child's entries (deepest first)."""
        if not self._stale_children:
            return
        for call_id in sorted(self._stale_children):
            child = self._children[call_id]
            child._refresh_children()
            child.log.clear(list(child._streams.values()))  # its own changes travel in this card
            card = self._by_id[f"tool:{call_id}"]
            self._set(card, subagent={"session_id": child.session_id, "status": child.status,
                                      "entries": child.current_entries()})
        self._stale_children.clear()

    def current_entries(self) -> list[dict[str, Any]]:
        """Copies of the entries as they stand now, text still streaming included."""
        out = [dict(e) for e in self.entries]
        for stream in self._streams.values():
            # The streaming entry is at (or very near) the end.
            i = next(i for i in range(len(self.entries) - 1, -1, -1) if self.entries[i] is stream.entry)
            out[i][stream.field] = stream.text + "".join(stream.parts)
        return out

    def _close_streams(self) -> None:
        for stream in self._streams.values():
            self.log.settle(stream)
        self._streams.clear()
        if self._current is not None:
            self._set(self._current, streaming=False)
        self._current = None

    # -- events ---------------------------------------------------------------------

    def apply(self, event: Any) -> bool:
        """Fold one event (``AgentEvent`` or its dict).

        Returns True when the change is structural (the widget flushes at once), False
        for stream-like changes that can wait for the next timed flush.
        """
        if isinstance(event, Mapping):
            etype, run_id, payload = event.get("type"), event.get("run_id"), event.get("payload") or {}
            parent_call, at = event.get("parent_call_id"), event.get("timestamp")
        else:
            etype, run_id, payload = event.type, event.run_id, event.payload
            parent_call, at = getattr(event, "parent_call_id", None), getattr(event, "timestamp", None)
        self._at = at if isinstance(at, (int, float)) else None
        if parent_call is not None:
            # A sub-agent's event: it goes into the card of the call that delegated to it.
            session = event.get("session_id") if isinstance(event, Mapping) else event.session_id
            return self._apply_nested(str(parent_call), str(session or ""), event)
        if etype == "llm.chunk":
            self.chunk(str(payload.get("kind") or "text"), str(payload.get("text") or ""))
            return False
        handler = _HANDLERS.get(etype)
        if handler is None:
            return False
        if run_id:
            self.run_id = str(run_id)
        return handler(self, payload) is not False

    def _on_started(self, p: Mapping[str, Any]) -> None:
        self.status = "running"
        for message in p.get("input") or ():
            m = message_fields(message)
            if m["role"] == "user":
                fields = user_fields(message)
                if fields["text"] or fields.get("parts"):
                    self._add("user", **fields)

    def _on_resumed(self, p: Mapping[str, Any]) -> None:
        self.status = "running"
        reason = str(p.get("reason") or "")
        self._notice("info", _RESUMED.get(reason, f"resumed ({reason})" if reason else "resumed"))

    def _on_llm_before(self, p: Mapping[str, Any]) -> None:
        if p.get("purpose"):
            return  # an extension's own call (a context summary): not a message of the conversation
        self._close_streams()
        self._current = self._add("assistant", text="", reasoning="", streaming=True, run_id=self.run_id)

    def _on_llm_after(self, p: Mapping[str, Any]) -> None:
        if p.get("purpose"):
            return  # an extension's own call: its text is not the assistant's answer
        current = self._current
        self._close_streams()
        message = p.get("message")
        if message is None:
            return
        m = message_fields(message)
        if current is None:
            current = self._add("assistant", text="", reasoning="", streaming=False, run_id=self.run_id)
        # The post-hook message is the truth (DESIGN §5); it replaces what streamed.
        self._set(current, text=m["text"])
        if m["reasoning"] or not current.get("reasoning"):
            self._set(current, reasoning=m["reasoning"])
        for call in m["tool_calls"]:
            self._tool(call, status="requested")

    def _on_tool_before(self, p: Mapping[str, Any]) -> None:
        self._close_streams()
        self._tool(call_fields(p.get("call")), status="running")

    def _on_tool_after(self, p: Mapping[str, Any]) -> None:
        deferred = p.get("deferred")
        if isinstance(deferred, Mapping):
            # The call handed itself to a person (ToolContext.defer): it waits, it did not fail.
            self._tool(call_fields(p.get("call")), status="awaiting_approval", reason=deferred.get("reason"),
                       duration_ms=p.get("duration_ms"))
            return
        r = result_fields(p.get("result"))
        # Reused from the record of an earlier process, or settled by a person: it did not run now.
        origin = "reused" if p.get("reused") else "settled" if p.get("settled_by") else None
        self._tool(call_fields(p.get("call")), status="error" if r["is_error"] else "done", result=r["text"],
                   is_error=r["is_error"], duration_ms=None if origin else p.get("duration_ms"),
                   **({"origin": origin} if origin else {}))

    def _on_tool_denied(self, p: Mapping[str, Any]) -> None:
        r = result_fields(p.get("result"))
        reason = p.get("reason")
        text = r["text"][len(_DENIED_PREFIX):] if r["text"].startswith(_DENIED_PREFIX) else r["text"]
        # The reason is said once: by the result when it says it (and more), else by the reason line.
        said = bool(reason) and text != reason and str(reason) in text
        self._tool(call_fields(p.get("call")), status="denied", result=None if text == reason else text,
                   is_error=True, reason=None if said else reason)

    def _note_approval(self, item: Any) -> dict[str, Any]:
        data = _dump(item)
        call = call_fields(data.get("tool_call"))
        aid = str(data.get("approval_id") or call["id"])
        approval = {"approval_id": aid, "call_id": call["id"], "tool_name": call["name"],
                    "arguments": call["arguments"], "risk_level": str(data.get("risk_level") or ""),
                    "reason": str(data.get("reason") or ""), "decision": str(data.get("decision") or "pending"),
                    "deny_reason": data.get("deny_reason"), "kind": str(data.get("kind") or "tool"),
                    "detail": dict(data.get("detail") or {})}
        self.approvals[aid] = approval
        if call["id"]:
            waiting = "in_doubt" if approval["kind"] == "in_doubt" else "awaiting_approval"
            self._tool(call, status=waiting if approval["decision"] == "pending"
                       else _DECIDED_STATUS.get(approval["decision"], "requested"))
        return approval

    def _on_approval_required(self, p: Mapping[str, Any]) -> None:
        self._close_streams()
        for item in p.get("items") or ():
            for call_id in self._note_approval(item)["detail"].get("reused_calls") or ():
                card = self._by_id.get(f"tool:{call_id}")  # finished before a crash: reused, not run again
                if card is not None and card["status"] == "requested":
                    self._card(card, status="queued", origin="reused")

    def _on_approval_decided(self, p: Mapping[str, Any]) -> None:
        # An in-doubt call's decision is its resolution (rerun / done / failed, DESIGN §13).
        decision = str(p.get("resolution") or p.get("decision") or "")
        self.decided(str(p.get("approval_id") or ""), decision, p.get("deny_reason"))

    def decided(self, approval_id: str, decision: str, deny_reason: Any = None) -> None:
        """Record a decision (from an event, or one the runtime reported as already made)."""
        approval = self.approvals.get(approval_id)
        if approval is None or decision not in _DECIDED_STATUS:
            return
        approval["decision"], approval["deny_reason"] = decision, deny_reason
        card = self._by_id.get(f"tool:{approval['call_id']}")
        if card is not None and card["status"] in ("awaiting_approval", "in_doubt"):
            self._card(card, status=_DECIDED_STATUS[decision])
            if decision == "denied":
                self._set(card, reason=deny_reason)

    def _on_hook_decision(self, p: Mapping[str, Any]) -> bool:
        slot, hook, action = str(p.get("slot") or ""), str(p.get("hook") or ""), str(p.get("action") or "")
        last = self.entries[-1] if self.entries else None
        # A chunk hook decides once per chunk: one line with a count, not hundreds.
        if (last is not None and last["kind"] == "hook" and last["slot"] == slot == "on_model_chunk"
                and last["hook"] == hook and last["action"] == action):
            self._set(last, count=last["count"] + 1, after=_joined(last["after"], jsonable(p.get("after"))),
                      before=_joined(last["before"], jsonable(p.get("before"))))
            return False
        if self._current is not None and slot != "on_model_chunk":
            self._close_streams()
        self._add("hook", slot=slot, hook=hook, action=action, reason=p.get("reason"),
                  before=jsonable(p.get("before")), after=jsonable(p.get("after")), count=1)
        return slot != "on_model_chunk"

    def _on_diagnostic(self, p: Mapping[str, Any]) -> None:
        self._notice("warn", f"hook {p.get('hook') or '?'} ({p.get('slot') or '?'}) "
                             f"{p.get('kind') or 'failed'}: {p.get('message') or ''}".strip())

    def _on_loop(self, p: Mapping[str, Any]) -> None:
        self._notice("warn", str(p.get("message") or f"loop detected on {p.get('tool') or 'a tool'}"))

    def _on_persisted(self, p: Mapping[str, Any]) -> None:
        if p.get("ok") is False:
            self._notice("error", f"state not saved: {error_text(p.get('error'))}")

    def _on_suspended(self, p: Mapping[str, Any]) -> None:
        self._close_streams()
        reason = str(p.get("reason") or "suspend")
        self.status = "awaiting_approval" if reason == "awaiting_approval" else "suspended"
        self._notice("info", "waiting for you" if reason in ("awaiting_approval", "in_doubt") else
                     "suspended: Resume goes on from here" if reason == "suspend" else f"suspended ({reason})")

    def _on_terminal(self, etype: str, p: Mapping[str, Any]) -> None:
        self._close_streams()
        self.status = str(p.get("stop_reason") or _TERMINAL_STATUS[etype])
        self._end_open_calls()
        if etype == "agent.error":
            self._notice("error", f"run failed: {error_text(p.get('error'))}")
        elif etype == "agent.cancelled":
            why = str(p.get("reason") or "")
            self._notice("warn", "stopped" if why.startswith("cancelled by user") or not why else f"stopped: {why}")
        elif etype == "agent.aborted":
            self._notice("error", f"aborted by hook {p.get('hook') or '?'}: {error_text(p.get('error'))}")
        elif self.status != "completed":
            self._notice("info", f"run ended: {self.status}")

    def _end_open_calls(self) -> None:
        """A run that ended (e.g. cancelled while awaiting approval) leaves no call
        pending: the runtime answered them in history without a tool event, so close
        their cards and drop their approvals here (a replay must not offer them)."""
        # A call a crash left in doubt, undecided or with a rerun chosen that never began.
        doubtful = {approval["call_id"] for approval in self.approvals.values()
                    if approval["kind"] == "in_doubt" and approval["decision"] in ("pending", "rerun")}
        for approval in self.approvals.values():
            if approval["decision"] == "pending":
                approval["decision"] = "cancelled"
        for entry in list(self._open_tools.values()):
            status = entry["status"]
            if status in _OPEN_TOOL_STATUS:
                # A running call, or one a crash left in doubt, may have taken effect: the
                # model is told so, and a card saying "not executed" would invite a rerun.
                if status != "running" and entry["call_id"] in doubtful:
                    status = "in_doubt"
                interrupted = status in ("running", "in_doubt")
                self._card(entry, status="interrupted" if interrupted else "not_executed")
                if entry["result"] is None:
                    if status == "running":
                        text = f"interrupted: the run ended {self.status}"
                    elif status == "in_doubt":
                        text = f"may or may not have run: the run ended {self.status} before anyone said"
                    else:
                        text = f"not executed: the run ended {self.status}"
                    self._set(entry, is_error=True, result=text)


# A person's decision as the tool card shows it; an in-doubt call's resolutions too:
# "rerun" runs it again, "done"/"failed" answer it with the text the person gave.
_DECIDED_STATUS = {"approved": "approved", "denied": "denied", "rerun": "approved", "done": "done",
                   "failed": "error"}
_RESUMED = {"approval": "continued after your decision", "in_doubt_resolved": "continued after your decision",
            "suspend": "resumed", "interrupted": "resumed where the interrupted run stopped"}
_DENIED_PREFIX = "tool_denied: "  # how a denial reads to the model; the card says "denied" instead
_OPEN_TOOL_STATUS = frozenset({"requested", "queued", "running", "awaiting_approval", "in_doubt", "approved"})


def _without_parent(event: Any) -> Any:
    """The event as its own runtime published it (its nesting is consumed by the parent)."""
    if isinstance(event, Mapping):
        return {k: v for k, v in event.items() if k not in ("parent_run_id", "parent_call_id")}
    return {"type": event.type, "run_id": event.run_id, "session_id": event.session_id,
            "payload": event.payload}


def _dump(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else {}


def _joined(a: Any, b: Any) -> Any:
    if isinstance(a, str) and isinstance(b, str):
        return a + b
    return b


def _terminal(etype: str):
    return lambda self, p: self._on_terminal(etype, p)


_HANDLERS = {
    "agent.started": Transcript._on_started,
    "agent.resumed": Transcript._on_resumed,
    "agent.suspended": Transcript._on_suspended,
    "llm.before": Transcript._on_llm_before,
    "llm.after": Transcript._on_llm_after,
    "tool.before": Transcript._on_tool_before,
    "tool.after": Transcript._on_tool_after,
    "tool.denied": Transcript._on_tool_denied,
    "approval.required": Transcript._on_approval_required,
    "approval.decided": Transcript._on_approval_decided,
    "hook.decision": Transcript._on_hook_decision,
    "hook.diagnostic": Transcript._on_diagnostic,
    "loop.detected": Transcript._on_loop,
    "state.persisted": Transcript._on_persisted,
    **{etype: _terminal(etype) for etype in _TERMINAL_STATUS},
    **OUTPUT_HANDLERS,  # typed answers and cut answers (_chat_output.py)
}
