"""The chat transcript as static HTML: the copy in the notebook output and ``to_html()``.

Built from the same entries the live view renders, with the same rules for
untrusted text (``_markdown_html.markdown_html``). It reads well without its
stylesheet too (GitHub drops ``<style>``): who said what is in bold, tool calls are
``<details>`` with their arguments and result, hook decisions and notices in italics.
"""

from __future__ import annotations

import json
from typing import Any

from ._chat_output import output_html
from ._chat_media import static_parts
from ._markdown_html import markdown_html
from ._static_html import esc, static_block
from ._transcript import Transcript

__all__ = ["CHAT_CSS", "chat_html", "clip", "document", "hook_sentence"]

_CLIP = 2000
"""Characters of one text (a message, a tool's arguments or result) in the output's copy."""
_BUDGET = 200_000
"""About the most characters of entries in the output's copy (to_html: no limit)."""

CHAT_CSS = """
.arknb-static-chat { font-family: var(--jp-ui-font-family, system-ui, sans-serif); font-size: 13px;
  line-height: 1.45; color: var(--jp-ui-font-color1, #1f2328); background: var(--jp-layout-color1, #fff);
  border: 1px solid var(--jp-border-color2, #d0d7de); border-radius: 6px; padding: 8px 10px; max-width: 60em; }
.arknb-static-chat .arknb-s-head { color: var(--jp-ui-font-color2, #59636e); font-size: 0.9em; margin-bottom: 6px; }
.arknb-static-chat .arknb-s-entry { margin: 6px 0; }
.arknb-static-chat .arknb-s-who { font-weight: 600; }
.arknb-static-chat .arknb-s-user { background: var(--jp-layout-color2, #f3f4f6); border-radius: 8px; padding: 4px 8px; }
.arknb-static-chat .arknb-s-plain { white-space: pre-wrap; overflow-wrap: anywhere; }
.arknb-static-chat .arknb-s-tool, .arknb-static-chat .arknb-s-approval { border-left: 3px solid #00838f; padding: 2px 8px;
  background: var(--jp-layout-color2, #f6f8fa); border-radius: 4px; }
.arknb-static-chat .arknb-s-tool[data-status="error"], .arknb-static-chat .arknb-s-tool[data-status="denied"] { border-left-color: #c62828; }
.arknb-static-chat .arknb-s-tool[data-status="done"] { border-left-color: #2e7d32; }
.arknb-static-chat .arknb-s-approval { border-left-color: #b26a00; }
.arknb-static-chat .arknb-s-muted, .arknb-static-chat .arknb-s-hook, .arknb-static-chat .arknb-s-notice { color: var(--jp-ui-font-color2, #59636e); }
.arknb-static-chat pre { white-space: pre-wrap; word-break: break-word; background: var(--jp-layout-color2, #f3f4f6);
  padding: 4px 6px; border-radius: 4px; margin: 4px 0; font-size: 0.92em; }
.arknb-static-chat table { border-collapse: collapse; margin: 4px 0; }
.arknb-static-chat td, .arknb-static-chat th { border: 1px solid var(--jp-border-color2, #d0d7de); padding: 2px 6px; }
.arknb-static-chat code { font-family: var(--jp-code-font-family, ui-monospace, monospace); font-size: 0.92em; }
.arknb-static-chat .arknb-s-output th { text-align: left; font-weight: 600; }
.arknb-static-chat .arknb-s-truncated { color: #b26a00; font-size: 0.92em; }
.arknb-static-chat .arknb-img-blocked { font-style: italic; color: var(--jp-ui-font-color2, #59636e); }
@media (prefers-color-scheme: dark) { .arknb-static-chat.arknb-standalone { color: #e6edf3; background: #0d1117;
  border-color: #30363d; } .arknb-static-chat.arknb-standalone pre, .arknb-static-chat.arknb-standalone .arknb-s-user,
  .arknb-static-chat.arknb-standalone .arknb-s-tool, .arknb-static-chat.arknb-standalone .arknb-s-approval { background: #161b22; } }
"""
"""Styles for the static copies (they read fine without: GitHub strips ``<style>``)."""



def document(title: str, body: str) -> str:
    """A standalone HTML page (UTF-8, inline styles, no script) around ``body``."""
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{CHAT_CSS}"
            "@media (prefers-color-scheme: dark) { body { background: #010409; } }</style></head>\n"
            f"<body>{body}</body></html>\n")


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how many were left out."""
    if limit <= 0 or len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({len(text) - limit:,} more characters in the live view and in to_html())"


_TOOL_STATUS = {"requested": "requested", "queued": "waits for your decision", "running": "running", "awaiting_approval": "awaiting approval",
                "approved": "approved", "done": "done", "error": "error", "denied": "denied",
                "not_executed": "not executed", "interrupted": "interrupted", "in_doubt": "in doubt"}
_HOOK_WHAT = {"before_tool_call": "arguments", "after_tool_call": "result", "on_model_chunk": "streamed text",
              "before_model_call": "model request", "after_model_call": "model response", "before_run": "input",
              "on_turn_completion": "turn", "before_persist_state": "save"}
_HOOK_VERB = {"rewrite": "rewrote", "proceed": "rewrote", "deny": "denied", "defer": "deferred", "abort": "aborted",
              "drop": "dropped", "respond": "answered", "retry": "retried", "stop": "stopped", "skip": "skipped",
              "hold": "held"}


_BUILT_IN_HOOKS = frozenset({"approval_policy", "plan_mode", "approval"})
_ORIGIN = {"reused": "reused", "settled": "settled by you"}
_FOLD_CHARS, _FOLD_LINES = 1200, 16  # a longer tool result is folded (the live view's COLLAPSE_*)


def says_reason(entry: dict[str, Any]) -> bool:
    """True when :func:`hook_sentence` already says the decision's reason."""
    return (entry.get("hook") in _BUILT_IN_HOOKS and entry.get("slot") == "before_tool_call"
            and entry.get("action") in ("defer", "deny"))


def hook_sentence(entry: dict[str, Any]) -> str:
    """One line for a hook decision, as the live view words it ("guard denied arguments of rm";
    the runtime's own hooks without their internal names: "needs your approval: rm is dangerous")."""
    tool_name = next((side["name"] for side in (entry.get("after"), entry.get("before"))
                      if isinstance(side, dict) and isinstance(side.get("name"), str)), None)
    if says_reason(entry):
        name, reason, action = tool_name or "the call", entry.get("reason"), entry.get("action")
        if action == "defer" and entry.get("hook") == "approval_policy":
            return f"needs your approval: {name} is dangerous"
        if action == "defer" and name == "write_todos":
            return "the new plan waits for your review"
        if action == "defer":
            return f"needs your approval: {name}{f' ({reason})' if reason else ''}"
        return f"{name} was not run{f': {reason}' if reason else ''}"
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


def _tool_entry(e: dict[str, Any], limit: int) -> str:
    """A tool card: its result and a denial's reason in plain view (a long result folded),
    its arguments one click away."""
    status = str(e.get("status") or "")
    label = _ORIGIN.get(str(e.get("origin") or "")) or _TOOL_STATUS.get(status, status)
    duration = f" · {round(e['duration_ms'])} ms" if isinstance(e.get("duration_ms"), (int, float)) else ""
    reason = (f'<div class="arknb-s-muted">{"denied" if status == "denied" else "reason"}: {esc(e["reason"])}</div>'
              if e.get("reason") else "")
    result = "" if e.get("result") is None else str(e["result"])
    shown = f'<div class="arknb-s-result">{markdown_html(clip(result, limit))}</div>' if result else ""
    if len(result) > _FOLD_CHARS or result.count("\n") >= _FOLD_LINES:
        shown = f'<details><summary>result ({len(result):,} characters)</summary>{shown}</details>'
    return (f'<div class="arknb-s-entry arknb-s-tool" data-status="{esc(status)}"><div>'
            f'tool <code>{esc(e.get("name"))}</code> — <b>{esc(label)}</b>{esc(duration)}</div>'
            f'<details class="arknb-s-muted"><summary>arguments</summary>'
            f'<pre>{esc(clip(_pretty(e.get("arguments")), limit))}</pre></details>{reason}{shown}</div>')


def _entry(e: dict[str, Any], limit: int) -> str:
    kind = e.get("kind")
    if kind == "user":
        return (f'<div class="arknb-s-entry arknb-s-user"><span class="arknb-s-who">You:</span> '
                f'<div class="arknb-s-plain">{esc(clip(str(e.get("text") or ""), limit))}</div>'
                f'{static_parts(e, companion=limit > 0)}</div>')
    if kind == "assistant":
        if not e.get("text") and not e.get("reasoning") and not e.get("output"):
            return ""
        reasoning = (f'<details class="arknb-s-muted"><summary>Reasoning</summary>'
                     f'{markdown_html(clip(e["reasoning"], limit))}</details>' if e.get("reasoning") else "")
        text = markdown_html(clip(e.get("text") or "", limit))
        if e.get("output") and e.get("text"):  # the raw JSON of a typed answer: kept, folded
            text = f'<details class="arknb-s-muted"><summary>raw answer</summary>{text}</details>'
        return (f'<div class="arknb-s-entry arknb-s-assistant"><span class="arknb-s-who">Agent:</span>'
                f'{reasoning}{output_html(e)}<div>{text}</div></div>')
    if kind == "tool":
        return _tool_entry(e, limit)
    if kind == "hook":
        reason = f" — {esc(e['reason'])}" if e.get("reason") and not says_reason(e) else ""
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


_TODO_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}


def _plan(plan: dict[str, Any] | None) -> str:
    """The todo list (plan mode) as a checklist after the transcript."""
    items = (plan or {}).get("items") or []
    if not items:
        return ""
    rows = "".join(f'<li data-status="{esc(i.get("status"))}"><code>{esc(_TODO_MARK.get(i.get("status"), "[ ]"))}</code> '
                   f'{esc(i.get("content"))}</li>' for i in items)
    approved = " · approved" if plan.get("approved") else ""
    return (f'<div class="arknb-s-entry arknb-s-plan"><span class="arknb-s-who">Plan</span> '
            f'<span class="arknb-s-muted">version {esc(plan.get("version"))}{approved}</span>'
            f'<ul style="list-style: none; padding-left: 0.5em; margin: 2px 0">{rows}</ul></div>')


def chat_html(t: Transcript, *, status: str, full_document: bool, limit: int | None = None,
              detached: str = "", static_id: str = "", plan: dict[str, Any] | None = None) -> str:
    """The transcript as HTML.

    Args:
        t: the chat's transcript.
        status: the chat's status (shown in the header).
        full_document: a standalone page (``to_html``), else a fragment: the companion
            block of the notebook output when ``static_id`` is given (``static_block``).
        limit: at most this many of the newest entries, long texts clipped; None for all.
        detached: the chat's detached notice, if any.
        plan: the chat's todo list (its ``plan`` trait), shown after the transcript.
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
            + (" · static copy: run the notebook for the live chat" if static_id else "")
            + (f" · {esc(detached)}" if detached else "") + "</div>")
    body = "".join(parts) + _plan(plan) + _approvals(t)
    if full_document:
        return document("arknb chat", f'<div class="arknb-static arknb-static-chat arknb-standalone">{head}{body}</div>')
    fragment = f'<div class="arknb-static-chat">{head}{body}</div>'
    if static_id:  # the companion output: hidden while a live view of this chat shows
        return static_block(static_id, fragment, css=CHAT_CSS)
    return f"<style>{CHAT_CSS}</style>{fragment}"
