"""Sessions as JSON files in one directory, written atomically.

Layout: ``<directory>/<session_id>.json`` holds the state; a small
``<session_id>.not_resumable`` marker is written when a session must not be resumed
but its state file is missing or unreadable. Every write goes to a temporary file in
the same directory, is flushed and fsynced, then ``os.replace``d over the target and
the directory is fsynced: a crash leaves the old file or the new one, never half of
either (DESIGN §8). Blocking I/O runs in a worker thread so a notebook's event loop
stays responsive.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import time
from pathlib import Path

from arknb.domain import ArkError, ErrorCode, ErrorLayer, Retryability, invalid_argument

from ._encoding import IncrementalStateEncoder
from .agent_state import AgentState
from .storage import validate_session_id

__all__ = ["FileStateStorage"]

_STATE_SUFFIX = ".json"
_MARKER_SUFFIX = ".not_resumable"


class FileStateStorage:
    """One JSON file per session in ``directory`` (created on the first save).

    Saves of one session are serialised by a per-session lock, so concurrent saves
    land one after the other and the file always holds exactly one of them.

    Example:
        >>> storage = FileStateStorage(".arknb")        # doctest: +SKIP
        >>> await storage.save(AgentState(session_id="demo"))   # doctest: +SKIP
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        if not isinstance(directory, (str, os.PathLike)):
            raise invalid_argument(f"FileStateStorage expects a directory path, got "
                                   f"{type(directory).__name__}")
        self._dir = Path(directory)
        self._locks: dict[str, asyncio.Lock] = {}
        self._encoders: dict[str, IncrementalStateEncoder] = {}

    @property
    def directory(self) -> Path:
        """Where the files live."""
        return self._dir

    def path_for(self, session_id: str) -> Path:
        """The state file of ``session_id`` (validated)."""
        return self._dir / f"{validate_session_id(session_id)}{_STATE_SUFFIX}"

    def _marker_for(self, session_id: str) -> Path:
        return self._dir / f"{session_id}{_MARKER_SUFFIX}"

    def _lock(self, session_id: str) -> asyncio.Lock:
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = asyncio.Lock()
        return lock

    async def load(self, session_id: str) -> AgentState | None:
        """The saved state, or None if the session has neither a file nor a marker.

        With a not-resumable marker the state comes back with ``not_resumable=True``
        (an empty state if the file is missing).

        Raises:
            ArkError: ``state_corrupt`` naming the session and the file (which is left
                untouched); ``state_version_unsupported`` for a newer format;
                ``state_load_failed`` (storage) if the file cannot be read at all.
        """
        path = self.path_for(session_id)
        text, marked = await asyncio.to_thread(self._read, session_id, path)
        if text is None:
            return AgentState(session_id=session_id, not_resumable=True) if marked else None
        state = self._parse(session_id, path, text)
        return state.model_copy(update={"not_resumable": True}) if marked else state

    async def save(self, state: AgentState) -> None:
        """Write ``state`` atomically; then drop a not-resumable marker, since the saved
        state now says for itself whether it is resumable.

        Raises:
            ArkError: ``state_save_failed`` (storage) if the write fails; the previous
                file is then still in place.
        """
        if not isinstance(state, AgentState):
            raise invalid_argument(f"save expects an AgentState, got {type(state).__name__}")
        path = self.path_for(state.session_id)
        encoder = self._encoders.get(state.session_id)
        if encoder is None:
            encoder = self._encoders[state.session_id] = IncrementalStateEncoder()
        text = encoder.encode(state)
        async with self._lock(state.session_id):
            await asyncio.to_thread(self._write_state, state.session_id, path, text)

    async def mark_not_resumable(self, session_id: str) -> None:
        """Set ``not_resumable`` in the saved state; if the file is missing, corrupt or
        cannot be rewritten, write the small marker file instead (seed 000 §9.3: the
        fallback after a failed terminal save must not depend on the state being readable).

        Raises:
            ArkError: ``state_save_failed`` if neither the state nor the marker can be written.
        """
        path = self.path_for(session_id)
        async with self._lock(session_id):
            await asyncio.to_thread(self._mark, session_id, path)

    async def delete(self, session_id: str) -> None:
        """Remove the state file and the marker (no error if absent)."""
        path = self.path_for(session_id)
        self._encoders.pop(session_id, None)
        async with self._lock(session_id):
            await asyncio.to_thread(self._delete, session_id, path)

    async def list_sessions(self) -> list[str]:
        """Sessions with a state file or a marker, sorted."""
        return await asyncio.to_thread(self._list)

    # -- blocking helpers, run in a worker thread ------------------------------------

    def _read(self, session_id: str, path: Path) -> tuple[str | None, bool]:
        try:
            data: bytes | None = path.read_bytes()
        except FileNotFoundError:
            data = None
        except OSError as exc:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_LOAD_FAILED,
                           f"could not read the state of session {session_id!r} from {path}: {exc}",
                           Retryability.CONDITIONAL) from exc
        marked = self._marker_for(session_id).exists()
        if data is None:
            return None, marked
        try:
            return data.decode("utf-8"), marked
        except UnicodeDecodeError as exc:
            raise self._corrupt(session_id, path, f"not UTF-8 text ({exc.reason})") from None

    def _parse(self, session_id: str, path: Path, text: str) -> AgentState:
        source = f"session {session_id!r} ({path})"
        state = AgentState.from_json(text, source=source)
        if state.session_id != session_id:
            raise self._corrupt(session_id, path,
                                f"the file holds session {state.session_id!r}")
        return state

    @staticmethod
    def _corrupt(session_id: str, path: Path, detail: str) -> ArkError:
        return ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                        f"saved state from session {session_id!r} ({path}) is corrupt: {detail}")

    def _write_state(self, session_id: str, path: Path, text: str) -> None:
        try:
            _write_atomic(path, text)
        except OSError as exc:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED,
                           f"could not save session {session_id!r} to {path}: {exc}",
                           Retryability.CONDITIONAL) from exc
        # Only after the new state is in place: a crash before this line leaves the
        # marker, and a marked session is never resumed by mistake. A marker that
        # cannot be removed errs on the safe side (the session loads as not resumable).
        with contextlib.suppress(OSError):
            self._marker_for(session_id).unlink()

    def _mark(self, session_id: str, path: Path) -> None:
        try:
            text, _ = self._read(session_id, path)
            state = self._parse(session_id, path, text) if text is not None else None
        except ArkError:  # corrupt, newer version or unreadable: fall back to the marker
            state = None
        if state is not None:
            try:
                _write_atomic(path, state.model_copy(update={"not_resumable": True}).to_json())
                return
            except OSError:
                pass  # try the much smaller marker below
        marker = self._marker_for(session_id)
        body = json.dumps({"session_id": session_id, "not_resumable": True,
                           "marked_at": time.time()})
        try:
            _write_atomic(marker, body)
        except OSError as exc:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED,
                           f"could not mark session {session_id!r} not resumable in "
                           f"{self._dir}: {exc}", Retryability.CONDITIONAL) from exc

    def _delete(self, session_id: str, path: Path) -> None:
        for target in (path, self._marker_for(session_id)):
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
        _fsync_directory(self._dir)

    def _list(self) -> list[str]:
        try:
            with os.scandir(self._dir) as entries:
                names = [entry.name for entry in entries if entry.is_file()]
        except FileNotFoundError:
            return []
        sessions = set()
        for name in names:
            for suffix in (_STATE_SUFFIX, _MARKER_SUFFIX):
                if name.endswith(suffix):
                    candidate = name[: -len(suffix)]
                    with contextlib.suppress(ArkError):  # temp files and strangers are not sessions
                        sessions.add(validate_session_id(candidate))
        return sorted(sessions)

    def __repr__(self) -> str:
        return f"FileStateStorage({str(self._dir)!r})"


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a crash leaves the old or the new file, never half."""
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    # Same directory as the target: os.replace is only atomic within one file system.
    # The leading dot keeps the temp file out of list_sessions (session ids cannot start with '.').
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable. Not every platform can open a directory
    # (Windows cannot); there the replace is as durable as the OS makes it.
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
