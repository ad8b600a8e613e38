"""The chat's change log: what the kernel sends after the first snapshot.

A view gets the whole transcript once (the snapshot trait, on ``hello``); after
that only changes travel, as operations in batched ``delta`` messages (see
``_protocol``):

* ``["add", entry]``: a new entry, appended;
* ``["patch", entry_id, {field: value, ...}]``: fields of an entry that changed (a
  tool card's status and result, a hook line's count);
* ``[field, entry_id, start, end, text]``: streamed text appended to ``entry[field]``
  (``field`` is ``"text"`` or ``"reasoning"``), offsets in code points.

So the bytes a run costs depend on the run, never on the length of the session.
Streamed text is kept apart while it arrives: :meth:`ChangeLog.chunk` appends to a
list (the per-chunk cost of a widget) and :meth:`ChangeLog.take` joins it into one
operation per stream per flush.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ChangeLog", "Stream"]


class Stream:
    """One streamed field of one entry: ``text`` has been sent, ``parts`` not yet."""

    __slots__ = ("entry", "field", "parts", "text", "dirty")

    def __init__(self, entry: dict[str, Any], field: str) -> None:
        self.entry = entry
        self.field = field
        self.parts: list[str] = []
        self.text: str = entry.get(field) or ""
        self.dirty = False


class ChangeLog:
    """Queued operations since the last :meth:`take` (or snapshot), in order.

    An entry added and changed within one flush travels once, as its latest
    ``add``; a patch carries each changed field once, with its latest value.

    Example:
        >>> log = ChangeLog()
        >>> card = {"id": "tool:c1", "kind": "tool", "status": "running"}
        >>> log.added(card)
        >>> log.take()
        [['add', {'id': 'tool:c1', 'kind': 'tool', 'status': 'running'}]]
        >>> card["status"] = "done"; log.touched(card, ["status"])
        >>> log.take()
        [['patch', 'tool:c1', {'status': 'done'}]]
    """

    __slots__ = ("_ops", "_adds", "_patches", "_dirty")

    def __init__(self) -> None:
        self._ops: list[list[Any]] = []
        self._adds: dict[str, dict[str, Any]] = {}         # entry id -> the queued copy
        self._patches: dict[str, tuple[dict[str, Any], set[str]]] = {}  # id -> (entry, fields)
        self._dirty: list[Stream] = []

    def __bool__(self) -> bool:
        return bool(self._ops or self._dirty)

    def added(self, entry: dict[str, Any]) -> None:
        """``entry`` was appended to the transcript."""
        copy = dict(entry)
        self._adds[entry["id"]] = copy
        self._ops.append(["add", copy])

    def touched(self, entry: dict[str, Any], fields: list[str]) -> None:
        """``fields`` of ``entry`` changed (their new values are read at :meth:`take`)."""
        eid = entry["id"]
        queued = self._adds.get(eid)
        if queued is not None:  # not sent yet: the add carries the new values
            for name in fields:
                queued[name] = entry[name]
            return
        patch = self._patches.get(eid)
        if patch is None:
            op: list[Any] = ["patch", eid, None]
            self._patches[eid] = (entry, set(fields))
            self._ops.append(op)
        else:
            patch[1].update(fields)

    # -- streams ----------------------------------------------------------------------

    def chunk(self, stream: Stream, text: str) -> None:
        """Append a streamed piece (O(1): joined at the next take)."""
        stream.parts.append(text)
        if not stream.dirty:
            stream.dirty = True
            self._dirty.append(stream)

    def settle(self, stream: Stream) -> None:
        """End ``stream``: queue what it has not sent yet and write its text into the entry."""
        self._drain(stream)
        stream.entry[stream.field] = stream.text
        queued = self._adds.get(stream.entry["id"])
        if queued is not None and queued.get(stream.field) == "":
            # The entry has not been sent: send it with its text rather than text + a delta.
            queued[stream.field] = stream.text
            self._ops = [op for op in self._ops if not _is_stream_op(op, stream)]

    def _drain(self, stream: Stream) -> None:
        if stream.dirty:
            stream.dirty = False
            self._dirty.remove(stream)
        if not stream.parts:
            return
        piece = "".join(stream.parts)
        stream.parts.clear()
        start = len(stream.text)
        stream.text += piece
        self._ops.append([stream.field, stream.entry["id"], start, start + len(piece), piece])

    # -- sending ------------------------------------------------------------------------

    def take(self) -> list[list[Any]]:
        """Every queued operation, ready to send; the log is empty afterwards."""
        for stream in list(self._dirty):
            self._drain(stream)
        ops = self._ops
        for op in ops:
            if op[0] == "patch" and op[2] is None:
                entry, fields = self._patches[op[1]]
                op[2] = {name: entry[name] for name in sorted(fields)}
        self._ops, self._adds, self._patches = [], {}, {}
        return ops

    def clear(self, streams: list[Stream]) -> None:
        """Forget everything queued: a snapshot carries it. Open ``streams`` keep going
        from the text the snapshot holds."""
        for stream in streams:
            if stream.parts:
                stream.text += "".join(stream.parts)
                stream.parts.clear()
            stream.dirty = False
            stream.entry[stream.field] = stream.text
        self._ops, self._adds, self._patches, self._dirty = [], {}, {}, []


def _is_stream_op(op: list[Any], stream: Stream) -> bool:
    return op[0] == stream.field and op[1] == stream.entry["id"]
