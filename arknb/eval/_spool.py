"""Where a report keeps its cases' events: an anonymous temporary file, not memory.

A suite of hundreds of cases keeps every event (for :func:`~arknb.eval.rescore`, the
timeline and ``to_jsonl``), but only the cases in flight are in memory: each finished
run's events are written here as one JSON line and read back on demand. The file has
no name and disappears when the report is garbage-collected or the process ends.
"""

from __future__ import annotations

import json
import tempfile
from typing import IO, Any

__all__ = ["EventSpool", "SpoolRef"]

SpoolRef = tuple[int, int]
"""``(offset, length)`` of one run's events in the spool."""


class EventSpool:
    """Append-only storage of event lists, each read back by its :data:`SpoolRef`."""

    __slots__ = ("_file", "_end")

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._end = 0

    def _handle(self) -> IO[bytes]:
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="arknb-eval-")
        return self._file

    def put_json(self, events_json: str) -> SpoolRef:
        """Store an already serialised JSON list of event dicts."""
        data = events_json.encode("utf-8")
        f = self._handle()
        f.seek(self._end)
        f.write(data)
        ref = (self._end, len(data))
        self._end += len(data)
        return ref

    def put(self, events: list[dict[str, Any]]) -> SpoolRef:
        """Store a list of event dicts."""
        return self.put_json(json.dumps(events, ensure_ascii=False, default=str, separators=(",", ":")))

    def get_json(self, ref: SpoolRef) -> str:
        """The stored JSON text of one entry."""
        offset, length = ref
        if length == 0:
            return "[]"
        f = self._handle()
        f.flush()
        f.seek(offset)
        return f.read(length).decode("utf-8")

    def get(self, ref: SpoolRef) -> list[dict[str, Any]]:
        """The stored event dicts of one entry."""
        return json.loads(self.get_json(ref))

    @property
    def size(self) -> int:
        """Bytes stored."""
        return self._end

    def close(self) -> None:
        """Delete the storage now (the report's events are gone after this)."""
        if self._file is not None:
            self._file.close()
            self._file = None
