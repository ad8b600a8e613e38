"""What the model saw: a request's differences from the raw history (DESIGN §16).

Run after the ``before_model_call`` hooks, on the request about to be sent. The
history is append-only, so its length is the context's version; the request's
system messages in front of it are instructions (the runtime's system prompt, then
extensions' sections), and the rest is matched to the history by identity (a
message the runtime did not build anew is the history's own object): what does not
match was replaced (by a summary or a hook's rewrite), inserted or dropped. The
matching costs one pass when nothing changed, the common case.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Any, Sequence

from ..domain import AgentMessage, ContextChange, Role

__all__ = ["SUMMARY_MARK", "context_of"]

SUMMARY_MARK = "[Summary of the first"
"""How the compressor's summary message begins (arknb/memory/compressor.py)."""
_CLIP = 300
_SHOWN = 4


def _texts(messages: Sequence[AgentMessage]) -> list[dict[str, Any]]:
    shown = [{"role": m.role.value, "text": m.text[:_CLIP] + ("…" if len(m.text) > _CLIP else "")}
             for m in messages[:_SHOWN]]
    if len(messages) > _SHOWN:
        shown.append({"role": "note", "text": f"… and {len(messages) - _SHOWN} more"})
    return shown


def context_of(messages: Sequence[AgentMessage], history: Sequence[AgentMessage], system: Sequence[AgentMessage],
               hook: str | None, sections: Sequence[tuple[str, str]] = ()
               ) -> tuple[int, tuple[ContextChange, ...], list[dict[str, Any]]]:
    """``(context_version, changes, view)``: ``view`` is each change with the history's
    messages it concerns and what the request holds instead (clipped), for the timeline."""
    n_sys = 0
    while n_sys < len(messages) and messages[n_sys].role is Role.SYSTEM:
        n_sys += 1
    changes: list[ContextChange] = []
    view: list[dict[str, Any]] = []

    def add(source: str, kind: str, rng: tuple[int, int], sent: tuple[int, int]) -> None:
        changes.append(ContextChange(source=source, kind=kind, range=rng, sent=sent))
        view.append({"source": source, "kind": kind, "range": list(rng), "sent": list(sent),
                     "before": _texts(history[rng[0]:rng[1]]), "after": _texts(messages[sent[0]:sent[1]])})

    own = 0
    while own < min(len(system), n_sys) and messages[own] == system[own]:
        own += 1
    if own:
        add("system_prompt", "instructions", (0, 0), (0, own))
    elif system and n_sys and messages[0].text.startswith(system[0].text + "\n\n"):
        # the extensions' sections follow the system prompt in one system message
        add("system_prompt", "instructions", (0, 0), (0, 1))
        view[-1]["after"] = _texts(system[:1])
        rest = messages[0].text[len(system[0].text):].strip()
        named = [(name, text) for name, text in sections if text in rest] or [("", rest)]
        for name, text in named:  # one change per extension's section (a skill's instructions, the plan guide)
            source = f"extension:{name}" if name else "extension"
            changes.append(ContextChange(source=source, kind="instructions", range=(0, 0), sent=(0, 1)))
            view.append({"source": source, "kind": "instructions", "range": [0, 0], "sent": [0, 1], "before": [],
                         "after": _texts([AgentMessage.system(text)])})
        own = 1
    if n_sys > own:
        named = [name for name, text in sections if any(text in m.text for m in messages[own:n_sys])]
        source = f"hook:{hook}" if hook is not None and not named else \
            ("extension:" + ",".join(named) if named else "extension")
        add(source, "instructions", (0, 0), (own, n_sys))
    sent = messages[n_sys:]
    if len(sent) == len(history) and all(a is b for a, b in zip(sent, history)):
        return len(history), tuple(changes), view
    matcher = SequenceMatcher(None, [id(m) for m in history], [id(m) for m in sent], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1 and all(history[i] == sent[j1 + i - i1] for i in range(i1, i2)):
            continue  # equal copies (a hook returned what it was given)
        where = (n_sys + j1, n_sys + j2)
        if tag == "delete":
            add(f"hook:{hook}" if hook else "runtime", "drop", (i1, i2), where)
        elif tag == "insert":
            add(f"hook:{hook}" if hook else "runtime", "insert", (i1, i1), where)
        elif j2 - j1 == 1 and sent[j1].role is Role.USER and sent[j1].text.startswith(SUMMARY_MARK):
            add("context_compressor", "summary", (i1, i2), where)
        else:
            add(f"hook:{hook}" if hook else "runtime", "rewrite", (i1, i2), where)
    return len(history), tuple(changes), view
