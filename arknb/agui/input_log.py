"""The ids of the user messages a thread ran, kept in its saved state (DESIGN §18).

A client that lost its connection sends the same input again; the server must not run it
twice, also after a restart between the two. The ids live in the session's state, in the
slice of the :class:`InputLog` extension the server adds to every runtime its factory
builds (``AgentRuntime.add_extension``): they are written before the run starts, so the
run's first save (``after_user_input``, the one that records the message) records them
too. A thread remembers its last :data:`KEEP` ids.
"""

from __future__ import annotations

from typing import Any, Iterable

from arknb.runtime import AgentRuntime
from arknb.runtime.extensions import Extension, ExtensionScope

__all__ = ["KEEP", "InputLog", "input_log"]

KEEP = 256
NAME = "agui.inputs"


class InputLog(Extension):
    """The extension whose state slice is ``{"user_ids": [...]}`` (oldest first)."""

    name = NAME

    def __init__(self) -> None:
        self._scope: ExtensionScope | None = None

    def setup(self, scope: ExtensionScope) -> None:
        self._scope = scope

    def for_new_session(self) -> InputLog:
        return InputLog()

    def ids(self) -> frozenset[str]:
        """The ids of the user messages this thread ran (as saved, or about to be)."""
        return frozenset(self._list())

    def remember(self, ids: Iterable[str]) -> list[str]:
        """Add ``ids`` (saved with the next save); returns the list before, for :meth:`restore`."""
        before = self._list()
        self._scope.set_slice({"user_ids": [*before, *ids][-KEEP:]})
        return before

    def restore(self, before: list[str]) -> None:
        """Put back what :meth:`remember` returned (the input did not run after all)."""
        self._scope.set_slice({"user_ids": before} if before else None)

    def _list(self) -> list[str]:
        piece: Any = self._scope.slice if self._scope is not None else None
        ids = piece.get("user_ids") if isinstance(piece, dict) or hasattr(piece, "get") else None
        return [str(i) for i in ids] if ids else []


def input_log(runtime: AgentRuntime) -> InputLog:
    """``runtime``'s :class:`InputLog`, added if the runtime has none yet."""
    for ext in runtime.extensions:
        if isinstance(ext, InputLog):
            return ext
    log = InputLog()
    runtime.add_extension(log)
    return log
