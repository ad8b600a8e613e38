"""The storage protocol for agent state, and the in-memory backend.

Backends are small and injected (STYLE §6): the runtime only knows
:class:`StateStorage`, whose docstring is the contract a store keeps (revisions and
compare-and-swap saves). :class:`MemoryStateStorage` keeps JSON text, not objects, so a
save/load round-trip is as real as on disk. The file backend lives in
:mod:`arknb.state.file_storage`.
"""

from __future__ import annotations

import re
from typing import Hashable, Protocol, runtime_checkable

from arknb.domain import ArkError, ErrorCode, ErrorLayer, Retryability, invalid_argument

from .agent_state import AgentState

__all__ = ["MemoryStateStorage", "StateStorage", "state_conflict", "storage_location", "validate_session_id"]

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


def state_conflict(session_id: str, expected: int, stored: int, where: str = "") -> ArkError:
    """The error a store raises when a save's base revision is not the stored one.

    Args:
        session_id: the session.
        expected: the revision the save was based on (``state.revision``).
        stored: the revision the store holds (0: no saved state).
        where: the store, as its repr names it, for the message.
    """
    if stored == 0:
        now = "it has no saved state (it was deleted, or never saved here)"
    elif expected == 0:
        now = f"it already has saved state at revision {stored}"
    else:
        now = f"its stored revision is {stored}"
    place = f" in {where}" if where else ""
    return ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CONFLICT,
                    f"session {session_id!r}{place} changed since this state was read: the save was "
                    f"based on revision {expected}, but {now}. Nothing was written. Another runtime "
                    "or process saved the session; to continue from what is stored, open it again "
                    "(a new AgentRuntime with this session_id, or AgentRuntime.restore)", Retryability.NEVER)


def storage_location(storage: object) -> Hashable:
    """Where ``storage`` keeps its sessions, as a value equal for two stores on the same place.

    A store may name its place with a ``location`` attribute (``FileStateStorage``: its
    resolved directory; ``SQLiteStore``: its resolved file). A store without one is
    its own place: two instances never share sessions (``MemoryStateStorage``).
    """
    location = getattr(storage, "location", None)
    if location is None:
        return ("object", id(storage))
    return location


@runtime_checkable
class StateStorage(Protocol):
    """Where sessions are saved: the contract every store implements, arknb's and yours.

    Every method is async. A store is used by runtimes in this process and, when it
    keeps its sessions somewhere shared (a directory, a database), by runtimes in other
    processes at the same time; the contract below is what keeps them from overwriting
    each other (DESIGN §8); the conformance kit of DESIGN §13 (``arknb.testing.StoreConformance``)
    is to test it.

    Revisions. Every saved state carries ``revision`` (``AgentState.revision``): 0 means
    "never saved here"; each successful save stores the next one.

    - ``save(state) -> int`` is a compare-and-swap. It succeeds only if the stored
      revision equals ``state.revision`` (no stored state counts as revision 0): it
      then writes the state with revision ``state.revision + 1`` and returns that new
      revision, which the caller keeps for its next save. Otherwise it raises
      ``ArkError(storage, state_conflict)`` naming the session, the expected and the
      stored revision, and writes nothing. The comparison and the write are one atomic
      step, also across processes (a lock, a transaction). A save also refuses to
      overwrite a stored state it cannot read (``state_corrupt``) or that a newer arknb
      wrote (``state_version_unsupported``). A successful save clears a not-resumable
      mark: the saved state itself now says whether it is resumable. A save that raises
      anything else (``state_save_failed``) changed nothing either.
    - ``load(session_id)`` returns the stored state with its stored ``revision``, or
      None for an unknown session. It raises ``state_corrupt`` or
      ``state_version_unsupported`` rather than return a state it could only partly read,
      and never changes what is stored.
    - ``mark_not_resumable(session_id)`` records that the session must not be resumed,
      without changing its revision (it is a flag beside the state, not a new version of
      it). It must work even when the saved state cannot be read, because it is the
      fallback after a failed terminal save (seed 000 §9.3). A marked session with no
      state loads as an empty state with ``not_resumable=True`` (revision 0).
    - ``delete(session_id)`` forgets the session (no error if unknown); the next save of
      it must then be based on revision 0, so a runtime still holding the deleted state
      gets ``state_conflict`` instead of bringing it back.
    - ``list_sessions()`` lists the saved or marked sessions, sorted.

    Optional: a ``location`` attribute naming where the sessions live (see
    :func:`storage_location`); runtimes of one process use it to keep one owner per session.
    """

    async def load(self, session_id: str) -> AgentState | None:
        """The saved state of ``session_id`` (at its stored revision), or None if there is none."""
        ...

    async def save(self, state: AgentState) -> int:
        """Save ``state`` if the stored revision is ``state.revision``; returns the new revision."""
        ...

    async def mark_not_resumable(self, session_id: str) -> None:
        """Record that ``session_id`` must not be resumed (its revision is unchanged)."""
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
    loaded object (e.g. its ``metadata`` dict) can leak into what is stored. Saves are
    compare-and-swaps on the revision like every store's (see :class:`StateStorage`);
    the sessions are this instance's own, so only runtimes of this process share them.

    Example:
        >>> storage = MemoryStateStorage()
        >>> await storage.save(AgentState(session_id="demo"))    # doctest: +SKIP
        1
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

    async def save(self, state: AgentState) -> int:
        """See :meth:`StateStorage.save`: stores ``state`` at revision ``state.revision + 1``
        if ``state.revision`` is the stored one, and returns the new revision.

        Raises:
            ArkError: ``state_conflict`` if the stored revision is another one.
        """
        if not isinstance(state, AgentState):
            raise invalid_argument(f"save expects an AgentState, got {type(state).__name__}")
        session_id = validate_session_id(state.session_id)
        stored = self._states.get(session_id)
        stored_revision = stored.revision if stored is not None else 0
        if stored_revision != state.revision:
            raise state_conflict(session_id, state.revision, stored_revision, repr(self))
        revision = state.revision + 1
        # A saved state's dicts are copied once, so later in-place edits by the caller cannot leak in.
        self._states[session_id] = state.model_copy(update={"metadata": dict(state.metadata),
                                                            "revision": revision})
        self._not_resumable.discard(session_id)
        return revision

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
