"""The IPython extension: ``%load_ext arknb`` gives ``%%chat`` and ``%arknb`` (DESIGN §18).

* ``%%chat [runtime] [--new]`` sends the cell's text to a runtime (a variable name or a
  session id; by default the runtime created last in this kernel) and shows the answer
  streaming into the cell's output: a ChatWidget of this exchange, with approval cards.
  ``--new`` starts a new conversation: a runtime like the named one (model, tools, hooks,
  storage, prompt, config, secrets, and its extensions: plan mode, skills, memory,
  sub-agents, each through ``Extension.for_new_session``) on a fresh session, which later
  ``%%chat`` cells continue; an extension that cannot be carried is named in a refusal.
* ``%arknb`` is a table of the kernel's runtimes: session, store, status, pending items,
  hooks per slot in the order they run, and where their tools come from;
  ``%arknb hooks [runtime]`` and ``%arknb approvals [runtime]`` show one aspect.

The magics only use arknb's public API. A problem (no runtime yet, an unknown name, a
run the runtime refuses) is a ``UsageError`` whose message says what to do and ends with
the error code (``runtime_not_found``, ``invalid_argument``, or the runtime's own).
"""

from __future__ import annotations

import html
import shlex
import uuid
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import display

from .domain import ArkError, ErrorCode
from .hooks import AgentHook, HookSlot
from .runtime import AgentRuntime, live_runtimes

__all__ = ["ArknbMagics", "register"]


def _refused(code: str, message: str) -> UsageError:
    """What a magic raises for a problem the user can fix: IPython shows it as one line,
    without a traceback; the arknb error code is at its end."""
    return UsageError(f"{message} [{code}]")


def register(ipython: Any) -> None:
    """Register the magics on ``ipython`` (what ``%load_ext arknb`` calls)."""
    ipython.register_magics(ArknbMagics)


def _is_child(runtime: AgentRuntime, others: list[AgentRuntime]) -> bool:
    # A sub-agent's session is "{parent_session}.{name}.{n}" (DESIGN §14): not one a person made.
    return any(o is not runtime and runtime.session_id.startswith(o.session_id + ".") for o in others)


@magics_class
class ArknbMagics(Magics):
    """``%%chat`` and ``%arknb``."""

    # -- finding runtimes ------------------------------------------------------------

    def _runtimes(self) -> list[tuple[str, AgentRuntime]]:
        """``(name, runtime)`` of the kernel's own runtimes, oldest first (name: a variable, or the session)."""
        live = [r for r in live_runtimes() if r.detached is None]
        names: dict[int, str] = {}
        for name, value in self.shell.user_ns.items():
            if isinstance(value, AgentRuntime) and not name.startswith("_") and id(value) not in names:
                names[id(value)] = name
        return [(names.get(id(r), r.session_id), r) for r in live if not _is_child(r, live)]

    def _find(self, name: str | None) -> AgentRuntime:
        runtimes = self._runtimes()
        if not runtimes:
            raise _refused(ErrorCode.RUNTIME_NOT_FOUND, "no arknb runtime in this kernel yet: create one first, "
                           "e.g. runtime = ark.AgentRuntime(ark.ScriptedModel([...]))")
        if name is None:
            return runtimes[-1][1]
        value = self.shell.user_ns.get(name)
        if isinstance(value, AgentRuntime):
            if value.detached is not None:
                raise _refused(ErrorCode.RUNTIME_NOT_FOUND, f"runtime {name!r} no longer owns its session "
                               f"({value.detached}); "
                                 "use the runtime that replaced it")
            return value
        for shown, runtime in runtimes:
            if name in (shown, runtime.session_id):
                return runtime
        known = ", ".join(f"{shown} (session {r.session_id!r})" for shown, r in runtimes)
        raise _refused(ErrorCode.RUNTIME_NOT_FOUND, f"no runtime named {name!r} in this kernel; known: {known}")

    # -- %%chat ------------------------------------------------------------------------

    @cell_magic
    def chat(self, line: str, cell: str) -> None:
        """Send the cell to a runtime: ``%%chat [runtime] [--new]``; the answer streams below."""
        words = shlex.split(line)
        new = "--new" in words
        names = [w for w in words if w != "--new"]
        unknown = [w for w in names if w.startswith("-")]
        if unknown or len(names) > 1:
            raise _refused(ErrorCode.INVALID_ARGUMENT, f"usage: %%chat [runtime] [--new] (got {line.strip()!r})")
        runtime = self._find(names[0] if names else None)
        text = cell.strip()
        if not text:
            raise _refused(ErrorCode.INVALID_ARGUMENT, "%%chat needs a message in the cell body, below the %%chat line")
        if new:
            runtime = _new_conversation(runtime)
        since = len(runtime.history) if runtime.loaded else None
        try:
            runtime.start(text)
        except ArkError as exc:
            raise _refused(exc.code, f"{runtime.session_id}: {exc.message}") from None
        from .widgets import ChatWidget

        display(ChatWidget(runtime, since=since))

    # -- %arknb --------------------------------------------------------------------------

    @line_magic
    def arknb(self, line: str) -> None:
        """``%arknb`` (all runtimes), ``%arknb hooks [runtime]``, ``%arknb approvals [runtime]``."""
        words = shlex.split(line)
        if not words:
            runtimes = self._runtimes()
            if not runtimes:
                raise _refused(ErrorCode.RUNTIME_NOT_FOUND,
                               "no arknb runtime in this kernel yet: create one with ark.AgentRuntime(...)")
            rows = [_summary(name, runtime) for name, runtime in runtimes]
            _show(["runtime", "session", "store", "status", "pending", "hooks (run order)", "tools"], rows)
            return
        aspect, rest = words[0], words[1:]
        if aspect not in ("hooks", "approvals") or len(rest) > 1:
            raise _refused(ErrorCode.INVALID_ARGUMENT,
                           "usage: %arknb | %arknb hooks [runtime] | %arknb approvals [runtime]")
        runtime = self._find(rest[0] if rest else None)
        if aspect == "hooks":
            _show(["slot", "hooks in run order"], [[slot, ", ".join(names)] for slot, names in _hooks(runtime)],
                  title=f"hooks of {runtime.session_id}")
            return
        pending = runtime.controller.list_pending_approvals()
        if not pending:
            display({"text/plain": f"{runtime.session_id}: nothing waits for a decision"}, raw=True)
            return
        _show(["id", "kind", "call", "reason"],
              [[i.approval_id, i.kind, f"{i.tool_call.name}({i.tool_call.arguments_json or ''})", i.reason]
               for i in pending],
              title=f"{runtime.session_id}: waiting for a person (decide with runtime.controller, or the chat's cards)")


def _new_conversation(runtime: AgentRuntime) -> AgentRuntime:
    """A runtime like ``runtime`` (its model, tools, hooks, storage, prompt, settings, secrets
    and extensions: plan mode, skills, memory, sub-agents...) on a new session; refused,
    naming them, if an extension cannot be carried (``Extension.for_new_session``)."""
    copies, stuck = [], []
    for extension in runtime.extensions:
        copy = extension.for_new_session()
        if copy is None:
            stuck.append(extension.name)
        else:
            copies.append(copy)
    if stuck:
        raise _refused(ErrorCode.INVALID_ARGUMENT, f"%%chat --new cannot carry the extension(s) "
                       f"{', '.join(map(repr, stuck))} of {runtime.session_id} into a new conversation (they "
                       "implement no Extension.for_new_session()); build the new runtime yourself with "
                       "ark.AgentRuntime(..., extensions=[...]), or chat without --new")
    return AgentRuntime(runtime.model, tools=runtime.tools, hooks=runtime.hooks, storage=runtime.storage,
                        system_prompt=runtime.system_prompt, config=runtime.config, max_turns=runtime.max_turns,
                        require_approval=runtime.require_approval, secrets=runtime.secret_lint.known_values,
                        extensions=copies, session_id=f"{runtime.session_id}-{uuid.uuid4().hex[:6]}")


def _status(runtime: AgentRuntime) -> str:
    if runtime.is_running:
        return "running"
    state = runtime.state
    if state.pending_approval is not None:
        return "awaiting_approval"
    if not runtime.loaded:
        return "not loaded"
    return state.last_stop_reason or "idle"


def _implements(hook: AgentHook, slot: HookSlot) -> bool:
    return getattr(type(hook), slot.value, None) is not getattr(AgentHook, slot.value)


def _hooks(runtime: AgentRuntime) -> list[tuple[str, list[str]]]:
    """Per slot, the hooks in the order they run: the user's, then the extensions', then the
    built-in approval policy."""
    out = []
    for slot in HookSlot:
        names = [entry.name for entry in runtime.hooks.for_slot(slot)]
        for extension in runtime.extensions:
            names += [f"{extension.name}:{getattr(h, 'name', None) or type(h).__name__}"
                      for h in extension.hooks() if _implements(h, slot)]
        if slot is HookSlot.BEFORE_TOOL_CALL and runtime.require_approval:
            names.append("approval_policy (built-in)")
        out.append((slot.value, names))
    return out


def _tool_sources(runtime: AgentRuntime) -> list[str]:
    sources: dict[str, list[str]] = {}
    for tool in runtime.tools:
        source = getattr(tool, "source", None)
        if not isinstance(source, str):
            kind = type(tool).__name__
            source = {"Tool": "python", "ClientTool": "AG-UI client"}.get(kind, kind)
        sources.setdefault(source, []).append(tool.name)
    for extension in runtime.extensions:
        names = [t.name for t in extension.tools(runtime.state)]
        if names:
            sources.setdefault(f"extension {extension.name}", []).extend(names)
    return [f"{source}: {', '.join(names)}" for source, names in sources.items()]


def _summary(name: str, runtime: AgentRuntime) -> list[str]:
    pending = runtime.controller.list_pending_approvals()
    kinds: dict[str, int] = {}
    for item in pending:
        kinds[item.kind] = kinds.get(item.kind, 0) + 1
    hooks = [f"{slot}: {' → '.join(names)}" for slot, names in _hooks(runtime) if names]
    store = type(runtime.storage).__name__
    return [name, runtime.session_id, store, _status(runtime),
            ", ".join(f"{n} {k}" for k, n in kinds.items()) or "none", "\n".join(hooks) or "none",
            "\n".join(_tool_sources(runtime)) or "none"]


def _show(header: list[str], rows: list[list[str]], title: str | None = None) -> None:
    """A table as HTML (escaped) with a plain-text twin."""
    cell = "<td style='text-align:left;white-space:pre-wrap;vertical-align:top'>{}</td>"
    cells = "".join("<tr>" + "".join(cell.format(html.escape(str(c))) for c in row) + "</tr>" for row in rows)
    head = "".join(f"<th style='text-align:left'>{html.escape(h)}</th>" for h in header)
    caption = f"<caption style='text-align:left'>{html.escape(title)}</caption>" if title else ""
    page = f"<table class='arknb-magic'>{caption}<thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>"
    text = "\n".join(([title] if title else []) + [" | ".join(header)] +
                     [" | ".join(str(c).replace("\n", "; ") for c in row) for row in rows])
    display({"text/html": page, "text/plain": text}, raw=True)
