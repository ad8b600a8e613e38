"""Sessions as JSON files in one directory, written atomically, saved by compare-and-swap.

Layout: ``<directory>/<session_id>.json`` holds the state; a small
``<session_id>.not_resumable`` marker is written when a session must not be resumed
but its state file is missing or unreadable; a hidden ``.<session_id>.lock`` is the
lock a writer holds (``fcntl.flock``) while it compares the stored revision and
replaces the file, so two processes saving one session never both win (DESIGN §8).

Every write goes to the session's temporary file in the same directory, is flushed and
fsynced, then ``os.replace``d over the target and the directory is fsynced: a crash
leaves the old file or the new one, never half of either. Writes happen under the lock,
so the temporary file's name is fixed: the next save of the session reuses it, and a
temporary file a killed write left behind is gone after that save. Blocking I/O runs in
a worker thread so a notebook's event loop stays responsive.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from arknb.domain import ArkError, ErrorCode, ErrorLayer, Retryability, invalid_argument

from ._encoding import IncrementalStateEncoder
from .agent_state import AgentState
from .storage import state_conflict, validate_session_id

try:
    import fcntl
except ImportError:  # Windows: one process per directory (the in-process lock still holds)
    fcntl = None  # type: ignore[assignment]

__all__ = ["FileStateStorage"]

_STATE_SUFFIX = ".json"
_MARKER_SUFFIX = ".not_resumable"
_LOCK_SUFFIX = ".lock"
_TEMP_SUFFIX = ".tmp"
# Temporary files of earlier versions (and of platforms without fcntl) had random
# names: tempfile.mkstemp's eight characters between the target's name and ".tmp".
_RANDOM_TEMP = r"\.{name}\.[a-z0-9_]{{8}}\.tmp"

# What identifies the file a revision was read from or written to: a save by anyone
# else replaces the file, which gives it another inode and times.
_FileKey = tuple[int, int, int, int, int]


def _file_key(st: os.stat_result) -> _FileKey:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class FileStateStorage:
    """One JSON file per session in ``directory`` (created on the first save).

    Saves are compare-and-swaps on the state's revision (the contract of
    :class:`~arknb.state.StateStorage`): a save based on a revision that is no longer
    the stored one raises ``state_conflict`` and writes nothing, also when the other
    writer is another process. Saves of one session by this instance land one after
    the other.

    Example:
        >>> storage = FileStateStorage(".arknb")        # doctest: +SKIP
        >>> await storage.save(AgentState(session_id="demo"))   # doctest: +SKIP
        1
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        if not isinstance(directory, (str, os.PathLike)):
            raise invalid_argument(f"FileStateStorage expects a directory path, got "
                                   f"{type(directory).__name__}")
        self._dir = Path(directory)
        # Resolved now, so a later chdir (notebooks do that) or a symlink cannot make one
        # directory look like two.
        self._location = ("file", os.path.realpath(self._dir))
        self._locks: dict[str, asyncio.Lock] = {}
        self._encoders: dict[str, IncrementalStateEncoder] = {}
        # The revision of the file this instance last read or wrote, per session, with
        # the file's identity then: a save whose file is still that one need not parse it.
        self._known: dict[str, tuple[_FileKey, int]] = {}
        self._swept: set[str] = set()  # sessions whose stray temporary files were looked for

    @property
    def directory(self) -> Path:
        """Where the files live."""
        return self._dir

    @property
    def location(self) -> tuple[str, str]:
        """The resolved directory: two stores on one directory share their sessions."""
        return self._location

    def path_for(self, session_id: str) -> Path:
        """The state file of ``session_id`` (validated)."""
        return self._dir / f"{validate_session_id(session_id)}{_STATE_SUFFIX}"

    def _marker_for(self, session_id: str) -> Path:
        return self._dir / f"{session_id}{_MARKER_SUFFIX}"

    def _lock_path(self, session_id: str) -> Path:
        # A leading dot: hidden, and never a session (session ids cannot start with '.').
        return self._dir / f".{session_id}{_LOCK_SUFFIX}"

    def _lock(self, session_id: str) -> asyncio.Lock:
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = asyncio.Lock()
        return lock

    async def load(self, session_id: str) -> AgentState | None:
        """The saved state, or None if the session has neither a file nor a marker.

        With a not-resumable marker the state comes back with ``not_resumable=True``
        (an empty state if the file is missing). A UTF-8 byte order mark is accepted.

        Raises:
            ArkError: ``state_corrupt`` naming the session and the file (which is left
                untouched); ``state_version_unsupported`` for a newer format;
                ``state_load_failed`` (storage) if the file cannot be read at all.
        """
        path = self.path_for(session_id)
        return await asyncio.to_thread(self._load, session_id, path)

    async def save(self, state: AgentState) -> int:
        """Write ``state`` atomically if the stored revision is ``state.revision``; returns
        the new revision (``state.revision + 1``). Then drop a not-resumable marker, since
        the saved state now says for itself whether it is resumable.

        Raises:
            ArkError: ``state_conflict`` if the stored revision is another one;
                ``state_corrupt`` / ``state_version_unsupported`` if the stored file cannot
                be read or is from a newer arknb (it is never overwritten);
                ``state_save_failed`` (storage) if the write fails. In every case the
                previous file is still in place.
        """
        if not isinstance(state, AgentState):
            raise invalid_argument(f"save expects an AgentState, got {type(state).__name__}")
        path = self.path_for(state.session_id)
        encoder = self._encoders.get(state.session_id)
        if encoder is None:
            encoder = self._encoders[state.session_id] = IncrementalStateEncoder()
        revision = state.revision + 1
        # A shallow copy keeps the history's items, so the encoder still reuses their JSON.
        text = encoder.encode(state.model_copy(update={"revision": revision}))
        async with self._lock(state.session_id):
            await asyncio.to_thread(self._save, state.session_id, path, text, state.revision)
        return revision

    async def mark_not_resumable(self, session_id: str) -> None:
        """Set ``not_resumable`` in the saved state (its revision unchanged); if the file is
        missing, corrupt or cannot be rewritten, write the small marker file instead (seed
        000 §9.3: the fallback after a failed terminal save must not depend on the state
        being readable).

        Raises:
            ArkError: ``state_save_failed`` if neither the state nor the marker can be written.
        """
        path = self.path_for(session_id)
        async with self._lock(session_id):
            await asyncio.to_thread(self._mark, session_id, path)

    async def delete(self, session_id: str) -> None:
        """Remove the state file, the marker and the lock file (no error if absent)."""
        path = self.path_for(session_id)
        self._encoders.pop(session_id, None)
        async with self._lock(session_id):
            await asyncio.to_thread(self._delete, session_id, path)

    async def list_sessions(self) -> list[str]:
        """Sessions with a state file or a marker, sorted."""
        return await asyncio.to_thread(self._list)

    # -- blocking helpers, run in a worker thread ------------------------------------

    def _load(self, session_id: str, path: Path) -> AgentState | None:
        data, key = self._read(session_id, path)
        marked = self._marker_for(session_id).exists()
        if data is None:
            return AgentState(session_id=session_id, not_resumable=True) if marked else None
        state = self._parse(session_id, path, data)
        self._known[session_id] = (key, state.revision)
        return state.model_copy(update={"not_resumable": True}) if marked else state

    def _read(self, session_id: str, path: Path) -> tuple[bytes | None, _FileKey | None]:
        try:
            with open(path, "rb") as handle:
                key = _file_key(os.fstat(handle.fileno()))
                return handle.read(), key
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_LOAD_FAILED,
                           f"could not read the state of session {session_id!r} from {path}: {exc}",
                           Retryability.CONDITIONAL) from exc

    def _source(self, session_id: str, path: Path) -> str:
        return f"session {session_id!r} ({path})"

    def _parse(self, session_id: str, path: Path, data: bytes) -> AgentState:
        state = AgentState.from_json(data, source=self._source(session_id, path))
        if state.session_id != session_id:
            raise self._corrupt(session_id, path, f"the file holds session {state.session_id!r}")
        return state

    @staticmethod
    def _corrupt(session_id: str, path: Path, detail: str) -> ArkError:
        return ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_CORRUPT,
                        f"saved state from session {session_id!r} ({path}) is corrupt: {detail}")

    def _stored_revision(self, session_id: str, path: Path) -> int:
        """The revision of the stored file (0 if there is none); called under the lock."""
        data, key = self._read(session_id, path)
        if data is None:
            return 0
        known = self._known.get(session_id)
        if known is not None and known[0] == key:
            return known[1]
        try:
            # Read as strictly as a load: a file someone else wrote (or edited by hand) that
            # a load would refuse is not overwritten either (unknown fields, wrong types).
            # Only a file this instance does not know costs a parse.
            revision = self._parse(session_id, path, data).revision  # a version 2 document: 0
        except ArkError as exc:
            raise ArkError(exc.layer, exc.code,
                           f"{exc.message}; the save was refused, so the file stays as it is (fix it, "
                           "or delete the session to start over: storage.delete(...) or "
                           "AgentRuntime(..., fresh=True))", exc.retryability) from None
        self._known[session_id] = (key, revision)
        return revision

    def _save(self, session_id: str, path: Path, text: str, expected: int) -> None:
        try:
            with self._locked(session_id):
                stored = self._stored_revision(session_id, path)
                if stored != expected:
                    raise state_conflict(session_id, expected, stored, repr(self))
                self._sweep(session_id, path)
                _write_atomic(path, text)
                # From here on the save has happened: nothing below may report it failed.
                self._remember(session_id, path, expected + 1)
                # Only after the new state is in place: a crash before this line leaves the
                # marker, and a marked session is never resumed by mistake. A marker that
                # cannot be removed errs on the safe side (the session loads as not resumable).
                marker = self._marker_for(session_id)
                for leftover in (marker, _temp_for(marker)):
                    with contextlib.suppress(OSError):
                        leftover.unlink()
        except OSError as exc:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED,
                           f"could not save session {session_id!r} to {path}: {exc}",
                           Retryability.CONDITIONAL) from exc

    def _remember(self, session_id: str, path: Path, revision: int) -> None:
        try:
            self._known[session_id] = (_file_key(os.stat(path)), revision)
        except OSError:  # the next save reads the file instead
            self._known.pop(session_id, None)

    def _sweep(self, session_id: str, path: Path) -> None:
        """Remove temporary files with random names that an earlier write left (once per
        session and instance: the fixed-name one is reused by every save anyway)."""
        if session_id in self._swept or fcntl is None:
            return
        self._swept.add(session_id)
        pattern = re.compile("|".join(_RANDOM_TEMP.format(name=re.escape(target.name))
                                      for target in (path, self._marker_for(session_id))))
        with contextlib.suppress(OSError), os.scandir(self._dir) as entries:
            for entry in entries:
                if pattern.fullmatch(entry.name):
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)

    def _mark(self, session_id: str, path: Path) -> None:
        try:
            with self._locked(session_id):
                self._mark_locked(session_id, path)
        except OSError as exc:  # the directory or the lock file cannot be created
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED,
                           f"could not mark session {session_id!r} not resumable in "
                           f"{self._dir}: {exc}", Retryability.CONDITIONAL) from exc

    def _mark_locked(self, session_id: str, path: Path) -> None:
        try:
            data, key = self._read(session_id, path)
            state = self._parse(session_id, path, data) if data is not None else None
        except ArkError:  # corrupt, newer version or unreadable: fall back to the marker
            state = None
        if state is not None:
            try:
                _write_atomic(path, state.model_copy(update={"not_resumable": True}).to_json())
                self._remember(session_id, path, state.revision)
                return
            except OSError:
                pass  # try the much smaller marker below
        marker = self._marker_for(session_id)
        body = json.dumps({"session_id": session_id, "not_resumable": True,
                           "marked_at": time.time()})
        _write_atomic(marker, body)

    def _delete(self, session_id: str, path: Path) -> None:
        if not self._dir.exists():
            return
        try:
            with self._locked(session_id):
                for target in (path, self._marker_for(session_id), self._lock_path(session_id)):
                    with contextlib.suppress(FileNotFoundError):
                        target.unlink()
                self._known.pop(session_id, None)
        except OSError as exc:
            raise ArkError(ErrorLayer.STORAGE, ErrorCode.STATE_SAVE_FAILED,
                           f"could not delete session {session_id!r} from {self._dir}: {exc}",
                           Retryability.CONDITIONAL) from exc
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

    @contextlib.contextmanager
    def _locked(self, session_id: str) -> Iterator[None]:
        """Hold the session's lock file, which every writer of the directory takes."""
        if fcntl is None:
            yield
            return
        self._dir.mkdir(parents=True, exist_ok=True)
        lock_path = self._lock_path(session_id)
        while True:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                # A delete removes the lock file: a writer that waited on the removed one
                # holds a lock nobody else takes, so it opens the current file again.
                try:
                    current = os.stat(lock_path)
                except FileNotFoundError:
                    current = None
                held = os.fstat(fd)
                if current is not None and (current.st_dev, current.st_ino) == (held.st_dev, held.st_ino):
                    break
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
        try:
            yield
        finally:
            os.close(fd)  # releases the lock

    def __repr__(self) -> str:
        return f"FileStateStorage({str(self._dir)!r})"


def _temp_for(path: Path) -> Path:
    return path.with_name(f".{path.name}{_TEMP_SUFFIX}")


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a crash leaves the old or the new file, never half.

    Called under the session's lock, so the temporary file's name can be fixed; without
    ``fcntl`` it gets a random one (no other process is kept out).
    """
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    # Same directory as the target: os.replace is only atomic within one file system.
    # The leading dot keeps the temp file out of list_sessions (session ids cannot start with '.').
    if fcntl is not None:
        tmp_name = str(_temp_for(path))
        fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    else:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=_TEMP_SUFFIX, dir=directory)
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
