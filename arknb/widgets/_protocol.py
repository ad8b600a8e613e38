"""The message protocol between the widgets' Python side and their front end.

Durable state travels in synced traits; only batched deltas and one-off answers
travel as custom messages. Every message is a dict with a ``type`` key; these are
the names both sides use (``js/src/lib/protocol.js`` holds the same strings).

Kernel -> browser (custom messages):

* ``delta``: ``{"type": "delta", "ops": [[field, entry_id, start, end, text], ...]}``
  appends ``text`` to ``entry[field]`` (``field`` is ``"text"`` or ``"reasoning"``).
  ``start``/``end`` count code points since the entry began, so a view that missed a
  delta sees a gap (``start`` past its own length) and asks for a ``hello`` resync,
  and a repeated delta (``end`` not past its length) is skipped.
* ``events``: ``{"type": "events", "start": n, "first": f, "events": [...]}`` plus
  binary buffers (timeline): the events at positions ``n, n+1, ...`` of the widget's
  log, event dicts or packs of chunks (``_timeline_wire``); ``f`` is the oldest
  position the kernel still keeps. Flags: ``reset`` (replace the view's events),
  ``older`` (an answer to ``older``: prepend), ``exhausted`` (nothing older exists),
  ``error``; ``to`` names the one view (its ``token``) an answer is for.
* ``action_result``: ``{"type": "action_result", "action", "request_id", "ok",
  "error", "approval_id"?}`` answers one browser action.

Browser -> kernel (typed actions):

* ``{"type": "send", "text", "attachments"?}`` (attachments: ``[{"name", "mime_type",
  "data"}]``, base64, each within the chat's ``max_attachment_bytes``), ``{"type": "approve", "approval_id"}``,
  ``{"type": "deny", "approval_id", "reason"}``, ``{"type": "stop"}``,
  ``{"type": "suspend"}``, ``{"type": "resume"}``: user actions (each may carry a
  ``request_id`` that the ``action_result`` echoes).
* ``{"type": "rerun", "approval_id"}``, ``{"type": "mark_done", "approval_id", "text"}``,
  ``{"type": "mark_failed", "approval_id", "text"}``: a person's decision on an in-doubt
  call (an approval card of kind ``in_doubt``, DESIGN §13).
* ``{"type": "hello", "have": n}``: a view came up (or found a gap); the kernel
  answers with a fresh snapshot trait (chat) or the events from ``have`` on (timeline;
  ``have`` null or out of reach: the newest page, with ``reset``).
* ``{"type": "older", "before": n, "before_sequence": s, "limit": k, "token"}``
  (timeline): up to ``k`` events before position ``n`` (from the kernel, else from
  its page source, older than sequence ``s``).
"""

from __future__ import annotations

__all__ = ["Action", "Msg"]


class Msg:
    """Kernel -> browser custom message types."""

    DELTA = "delta"
    EVENTS = "events"
    ACTION_RESULT = "action_result"


class Action:
    """Browser -> kernel message types."""

    SEND = "send"
    APPROVE = "approve"
    DENY = "deny"
    STOP = "stop"
    SUSPEND = "suspend"
    RESUME = "resume"
    RERUN = "rerun"
    MARK_DONE = "mark_done"
    MARK_FAILED = "mark_failed"
    ELICIT = "elicit"  # answer a server's question (DESIGN §15): action accept|decline|cancel, content
    HELLO = "hello"
    OLDER = "older"

    IN_DOUBT_ACTIONS: frozenset[str] = frozenset({RERUN, MARK_DONE, MARK_FAILED})
    USER_ACTIONS: frozenset[str] = frozenset({SEND, APPROVE, DENY, STOP, SUSPEND, RESUME, ELICIT, *IN_DOUBT_ACTIONS})
