"""The chat's typed answers and cut answers (DESIGN §17).

Transcript side: ``output.validated`` puts the typed answer on the assistant entry it
answers (``output``: ``{"name", "value"}``) and, when it came as a ``final_result`` call,
closes that call's card; ``output.retry`` says why an answer was refused; ``llm.truncated``
marks the assistant entry ``truncated``. Static side: :func:`output_html` renders the
answer as a small field table (the live view's ``js/src/chat_output.js`` does the same),
every value escaped.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Mapping

from ._static_html import esc

if TYPE_CHECKING:
    from ._transcript import Transcript

__all__ = ["OUTPUT_HANDLERS", "output_html", "saved_answer_fields"]

_FINAL_RESULT = "final_result"
_MAX_ROWS = 50


def _last(t: Transcript, kind: str, name: str | None = None) -> dict[str, Any] | None:
    for entry in reversed(t.entries):
        if entry["kind"] == kind and (name is None or entry.get("name") == name):
            return entry
    return None


def _json(value: Any) -> Any:
    thaw = getattr(value, "thaw", None)
    return thaw() if callable(thaw) else value


def _on_validated(t: Transcript, p: Mapping[str, Any]) -> None:
    answer = _last(t, "assistant")
    if answer is not None:
        t._set(answer, output={"name": str(p.get("name") or ""), "value": _json(p.get("output"))})
    if p.get("mode") == "tool":
        card = _last(t, "tool", _FINAL_RESULT)
        if card is not None:
            t._card(card, status="done", result="Final answer accepted.", is_error=False)


def _on_retry(t: Transcript, p: Mapping[str, Any]) -> None:
    errors = str(p.get("errors") or "")
    if p.get("mode") == "tool":
        card = _last(t, "tool", _FINAL_RESULT)
        if card is not None and card["status"] == "requested":
            t._card(card, status="error", result=errors, is_error=True)
    then = "asked the model again" if p.get("retrying") else "no tries left"
    t._notice("warn", f"the answer is not a valid {p.get('name') or 'output'} ({errors}); {then}")


def _on_truncated(t: Transcript, p: Mapping[str, Any]) -> None:
    answer = _last(t, "assistant")
    if answer is not None:
        t._set(answer, truncated=True)


def saved_answer_fields(message: Any) -> dict[str, Any]:
    """The ``output`` and ``truncated`` fields of a restored assistant entry, from the notes
    the runtime saved on its message (``AgentMessage.output`` / ``.truncated``)."""
    fields: dict[str, Any] = {}
    output = getattr(message, "output", None)
    if output is not None:
        try:
            fields["output"] = {"name": str(output.name), "value": output.value()}
        except ValueError:  # (written by the runtime as JSON: only a hand-edited state gets here)
            pass
    if getattr(message, "truncated", False):
        fields["truncated"] = True
    return fields


OUTPUT_HANDLERS = {
    "output.validated": _on_validated,
    "output.retry": _on_retry,
    "llm.truncated": _on_truncated,
}
"""Event type → transcript handler, merged into the transcript's handlers."""


def _cell(value: Any) -> str:
    if isinstance(value, str):
        return esc(value)
    return f"<code>{esc(json.dumps(value, ensure_ascii=False, default=str))}</code>"


def _rows(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [(str(k), v) for k, v in value.items()]
    if isinstance(value, list):
        return [(str(i), v) for i, v in enumerate(value)]
    return [("value", value)]


def output_html(entry: Mapping[str, Any]) -> str:
    """The typed answer and the truncated mark of an assistant entry ('' if neither)."""
    parts = []
    output = entry.get("output")
    if isinstance(output, Mapping):
        rows = _rows(output.get("value"))
        body = "".join(f"<tr><th scope=\"row\">{esc(k)}</th><td>{_cell(v)}</td></tr>" for k, v in rows[:_MAX_ROWS])
        more = (f'<div class="arknb-s-muted">… {len(rows) - _MAX_ROWS:,} more</div>'
                if len(rows) > _MAX_ROWS else "")
        parts.append(f'<div class="arknb-s-output"><span class="arknb-s-muted">typed answer · '
                     f'<code>{esc(output.get("name"))}</code></span><table>{body}</table>{more}</div>')
    if entry.get("truncated"):
        parts.append('<div class="arknb-s-truncated"><b>cut short:</b> the answer reached max_tokens '
                     '(finish reason <code>length</code>)</div>')
    return "".join(parts)
