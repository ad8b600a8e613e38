"""The chat transcript as static HTML: the copy in the notebook output and ``to_html()``.

Built from the same entries the live view renders, with the same rules for
untrusted text (``_static_html.markdown_html``). It reads well without its
stylesheet too (GitHub drops ``<style>``): who said what is in bold, tool calls are
``<details>`` with their arguments and result, hook decisions and notices in italics.
"""

from __future__ import annotations

import json
from typing import Any

from ._static_html import STATIC_CSS, clip, document, esc, markdown_html
from ._transcript import Transcript

__all__ = ["chat_html", "hook_sentence"]

_CLIP = 2000
"""Characters of one text (a message, a tool's arguments or result) in the output's copy."""
_BUDGET = 200_000
"""About the most characters of entries in the output's copy (to_html: no limit)."""

_TOOL_STATUS = {"requested": "requested", "running": "running", "awaiting_approval": "awaiting approval",
                "approved": "approved", "done": "done", "error": "error", "denied": "denied",
                "not_executed": "not executed", "interrupted": "interrupted"}
_HOOK_WHAT = {"before_tool_call": "arguments", "after_tool_call": "result", "on_model_chunk": "streamed text",
              "before_model_call": "model request", "after_model_call": "model response", "before_run": "input",
              "on_turn_completion": "turn", "before_persist_state": "save"}
_HOOK_VERB = {"rewrite": "rewrote", "proceed": "rewrote", "deny": "denied", "defer": "deferred", "abort": "aborted",
              "drop": "dropped", "respond": "answered", "retry": "retried", "stop": "stopped", "skip": "skipped",
              "hold": "held"}


def hook_sentence(entry: dict[str, Any]) -> str:
    """One line for a hook decision, as the live view words it ("guard denied arguments of rm")."""
    what = _HOOK_WHAT.get(entry.get("slot") or "", entry.get("slot") or "")
    verb = _HOOK_VERB.get(entry.get("action") or "", entry.get("action") or "")
    tool = None
    for side in (entry.get("after"), entry.get("before")):
        if isinstance(side, dict) and isinstance(side.get("name"), str):
            tool = side["name"]
            break
    count = int(entry.get("count") or 1)
    return (f"{entry.get('hook') or 'a hook'} {verb} {what}{f' of {tool}' if tool else ''}"
            f"{f' (×{count})' if count > 1 else ''}")


def _pretty(arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
        except ValueError:
            return arguments
    return json.dumps(arguments, indent=2, ensure_ascii=False, default=str)


def _entry(e: dict[str, Any], limit: int) -> str:
    kind = e.get("kind")
    if kind == "user":
        return (f'<div class="arknb-s-entry arknb-s-user"><span class="arknb-s-who">You:</span> '
                f'<div class="arknb-s-plain">{esc(clip(str(e.get("text") or ""), limit))}</div></div>')
    if kind == "assistant":
        if not e.get("text") and not e.get("reasoning"):
            return ""
        reasoning = (f'<details class="arknb-s-muted"><summary>Reasoning</summary>'
                     f'{markdown_html(clip(e["reasoning"], limit))}</details>' if e.get("reasoning") else "")
        return (f'<div class="arknb-s-entry arknb-s-assistant"><span class="arknb-s-who">Agent:</span>'
                f'{reasoning}<div>{markdown_html(clip(e.get("text") or "", limit))}</div></div>')
    if kind == "tool":
        status = str(e.get("status") or "")
        result = e.get("result")
        body = (f'<pre>{esc(clip(_pretty(e.get("arguments")), limit))}</pre>'
                + (f'<div class="arknb-s-muted">reason: {esc(e["reason"])}</div>' if e.get("reason") else "")
                + (f'<div class="arknb-s-result">{markdown_html(clip(str(result), limit))}</div>'
                   if result is not None else ""))
        duration = f" · {round(e['duration_ms'])} ms" if isinstance(e.get("duration_ms"), (int, float)) else ""
        return (f'<details class="arknb-s-entry arknb-s-tool" data-status="{esc(status)}"><summary>'
                f'tool <code>{esc(e.get("name"))}</code> — <b>{esc(_TOOL_STATUS.get(status, status))}</b>'
                f'{esc(duration)}</summary>{body}</details>')
    if kind == "hook":
        reason = f" — {esc(e['reason'])}" if e.get("reason") else ""
        return f'<div class="arknb-s-entry arknb-s-hook"><i>{esc(hook_sentence(e))}{reason}</i></div>'
    return (f'<div class="arknb-s-entry arknb-s-notice" data-level="{esc(e.get("level") or "info")}">'
            f'<i>{esc(e.get("text"))}</i></div>')


def _approvals(t: Transcript) -> str:
    pending = [a for a in t.approvals.values() if a["decision"] == "pending"]
    out = []
    for a in pending:
        reason = f" — {esc(a['reason'])}" if a.get("reason") else ""
        out.append(f'<div class="arknb-s-entry arknb-s-approval">waiting for approval: '
                   f'<code>{esc(a["tool_name"])}</code>{reason}<pre>{esc(_pretty(a["arguments"]))}</pre></div>')
    return "".join(out)


def chat_html(t: Transcript, *, status: str, full_document: bool, limit: int | None = None,
              detached: str = "") -> str:
    """The transcript as HTML.

    Args:
        t: the chat's transcript.
        status: the chat's status (shown in the header).
        full_document: a standalone page (``to_html``) or a fragment (the notebook copy).
        limit: at most this many of the newest entries, long texts clipped; None for all.
        detached: the chat's detached notice, if any.
    """
    if limit is None:
        parts = [_entry(e, 0) for e in t.entries]
    else:
        # The newest entries that fit: at most ``limit`` of them and about _BUDGET characters.
        parts, used = [], 0
        for e in reversed(t.entries[-limit:]):
            part = _entry(e, _CLIP)
            if parts and used + len(part) > _BUDGET:
                break
            parts.append(part)
            used += len(part)
        parts.reverse()
    shown = len(parts)
    left_out = len(t.entries) - shown
    head = (f'<div class="arknb-s-head">arknb chat · {esc(status.replace("_", " "))} · {len(t.entries):,} entries'
            + (f" · showing the newest {shown:,}" if left_out else "")
            + ("" if full_document else " · static copy: run the notebook for the live chat")
            + (f" · {esc(detached)}" if detached else "") + "</div>")
    body = "".join(parts) + _approvals(t)
    classes = "arknb-static arknb-static-chat" + (" arknb-standalone" if full_document else "")
    fragment = f'<div class="{classes}" data-arknb-static="chat">{head}{body}</div>'
    if full_document:
        return document("arknb chat", fragment)
    return f"<style>{STATIC_CSS}</style>{fragment}"
