"""The storage protocol for agent state, and the in-memory backend.

Backends are small and injected (STYLE §6): the runtime only knows
:class:`StateStorage`. :class:`MemoryStateStorage` keeps JSON text, not objects, so a
save/load round-trip is as real as on disk. The file backend lives in
:mod:`arknb.state.file_storage`.
"""

from __future__ import annotations

import re
from typing import Protocol, runtime_checkable

from arknb.domain import invalid_argument

from .agent_state import AgentState

__all__ = ["MemoryStateStorage", "StateStorage", "validate_session_id"]

_SESSION_ID = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


def validate_session_id(session_id: object) -> str:
    """Return ``session_id`` if a backend may use it, else raise.

    A session id becomes a file name, so it is 1-128 characters of letters, digits,
    ``_``, ``.`` and ``-``, does not start with ``.`` (no hidden or temporary names)
    and contains no ``..``.

    Raises:
        ArkError: ``invalid_argument`` (config) naming the refused id.
    """
    if not isinstance(session_id, str):
        raise invalid_argument(f"session id must be a str, got {type(session_id).__name__}")
    if (_SESSION_ID.fullmatch(session_id) is None or session_id.startswith(".")
            or ".." in session_id):
        raise invalid_argument(
            f"invalid session id {session_id!r}: use 1-128 letters, digits, '_', '.' or '-', "
            "not starting with '.' and without '..'")
    return session_id


@runtime_checkable
class StateStorage(Protocol):
    """Where sessions are saved. Every method is async.

    ``load`` returns None for an unknown session and raises ``ArkError`` with
    ``state_corrupt`` or ``state_version_unsupported`` rather than return a state it
    could only partly read. ``mark_not_resumable`` must work even when the saved state
    cannot be read, because it is the fallback after a failed terminal save (seed 000 §9.3).
    """

    async def load(self, session_id: str) -> AgentState | None:
        """The saved state of ``session_id``, or None if there is none."""
        ...

    async def save(self, state: AgentState) -> None:
        """Save ``state`` under ``state.session_id``, replacing what was there."""
        ...

    async def mark_not_resumable(self, session_id: str) -> None:
        """Record that ``session_id`` must not be resumed."""
        ...

    async def delete(self, session_id: str) -> None:
        """Forget ``session_id`` (no error if it is unknown)."""
        ...

    async def list_sessions(self) -> list[str]:
        """The saved session ids, sorted."""
        ...


class MemoryStateStorage:
    """Keeps sessions in memory: for tests, tutorials and throwaway runs (the default).

    ``AgentState`` is immutable, so a save keeps the value itself (O(1), no matter how
    long the history); ``load`` hands out a deep copy, so nothing a caller does to a
    loaded object (e.g. its ``metadata`` dict) can leak into what is stored.

    Example:
        >>> storage = MemoryStateStorage()
        >>> await storage.save(AgentState(session_id="demo"))    # doctest: +SKIP
        >>> await storage.list_sessions()                         # doctest: +SKIP
        ['demo']
    """

    def __init__(self) -> None:
        self._states: dict[str, AgentState] = {}
        self._not_resumable: set[str] = set()

    async def load(self, session_id: str) -> AgentState | None:
        """See :meth:`StateStorage.load`. A session that was only marked not resumable
        comes back as an empty state with ``not_resumable=True``."""
        validate_session_id(session_id)
        state = self._states.get(session_id)
        marked = session_id in self._not_resumable
        if state is None:
            return AgentState(session_id=session_id, not_resumable=True) if marked else None
        state = state.model_copy(deep=True)
        return state.model_copy(update={"not_resumable": True}) if marked else state

    async def save(self, state: AgentState) -> None:
        """See :meth:`StateStorage.save`. A successful save clears a not-resumable
        marker: the saved state itself now says whether it is resumable."""
        if not isinstance(state, AgentState):
            raise invalid_argument(f"save expects an AgentState, got {type(state).__name__}")
        session_id = validate_session_id(state.session_id)
        # A saved state's dicts are copied once, so later in-place edits by the caller cannot leak in.
        self._states[session_id] = state.model_copy(update={"metadata": dict(state.metadata)})
        self._not_resumable.discard(session_id)

    async def mark_not_resumable(self, session_id: str) -> None:
        """See :meth:`StateStorage.mark_not_resumable`."""
        validate_session_id(session_id)
        state = self._states.get(session_id)
        if state is None:
            self._not_resumable.add(session_id)
            return
        self._states[session_id] = state.model_copy(update={"not_resumable": True})

    async def delete(self, session_id: str) -> None:
        """See :meth:`StateStorage.delete`."""
        validate_session_id(session_id)
        self._states.pop(session_id, None)
        self._not_resumable.discard(session_id)

    async def list_sessions(self) -> list[str]:
        """See :meth:`StateStorage.list_sessions`."""
        return sorted(self._states.keys() | self._not_resumable)

    def __repr__(self) -> str:
        return f"MemoryStateStorage(sessions={len(self._states)})"
