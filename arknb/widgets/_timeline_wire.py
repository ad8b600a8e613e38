"""How the TimelineWidget sends events to its front end: compact, exact, cheap to build.

A run is hundreds of events (a streamed answer thousands of ``llm.chunk``), and what
the kernel spends on them is mostly building one dict per event and JSON-encoding
it: the envelope alone (ids, sequence, timestamp) costs more to encode than most
payloads, and floats are the slowest thing JSON writes. So a flush sends its events
as one *batch* of columns, each taken by one C-level pass (``map`` of an
``attrgetter``) and packed by ``struct`` or one ``join``; nothing here loops over
events in Python on the usual path:

* ``type``, ``session_id``, ``run_id`` (and the chunks' ``kind``): a table of the
  distinct values plus a uint16 code per event (``None`` when there is one value);
* ``sequence`` and ``timestamp``: float64 columns (binary: exact, no number printing);
* ``event_id``: the ids, NUL-separated in one UTF-8 buffer (else a list: see
  :func:`_strings`). (The runtime makes them ``"<run_id>:<sequence>"`` and
  the front end could rebuild them, but proving that costs the kernel more than
  sending them.)
* payloads: ``llm.chunk`` payloads of the usual ``{kind, text, index}`` shape as
  columns (texts like the ids, index as int32), a tool-call chunk's ``call_id`` and
  ``name`` in ``chunk_calls`` (``[[chunk position, call_id, name], ...]``, only in a batch
  that has some), every other payload as JSON, in order.

Columns are little-endian binary ``buffers`` of the comm message. A batch item::

    {"batch": n, "type": [...], "type_at": buf | None, "session_id": [...], "session_id_at": buf | None,
     "run_id": [...], "run_id_at": buf | None, "seq": buf, "ts": buf,
     "id": buf | [...], "payload": [...], "chunks": bool,
     "kind": [...], "kind_at": buf | None, "text": buf | [...], "index": buf | None}

An ``events`` message is ``{"type": "events", "start": s, "first": f, "events": items}``;
``items`` is one batch, or event dicts (``AgentEvent.to_dict()``) when the events do
not fit the columns (recorded dicts with missing or extra keys, odd field types).
:func:`decode` is the reference reader (``js/src/lib/timeline_store.js`` does the same
in the browser); both give back exactly ``AgentEvent.to_dict()``.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Mapping, Sequence
from functools import partial
from itertools import compress, repeat
from operator import attrgetter, eq, itemgetter, ne
from typing import Any

from ..domain.frozen import FrozenDict, FrozenList
from ._payload import jsonable

__all__ = ["CHUNK", "decode", "encode", "event_dict"]

CHUNK = "llm.chunk"
_CHUNK_KEYS = 3  # kind, text, index: a chunk payload with anything else goes with the payloads
_EVENT_KEYS = 7  # the keys of AgentEvent.to_dict(): a dict with others is sent whole
_BIG_ENDIAN = sys.byteorder == "big"
_FIELDS = ("type", "payload", "session_id", "run_id", "sequence", "timestamp", "event_id")

_ATTR = {name: attrgetter(name) for name in _FIELDS}
_PARENT_RUN, _PARENT_CALL = attrgetter("parent_run_id"), attrgetter("parent_call_id")
_ITEM = {name: itemgetter(name) for name in _FIELDS}
_KIND, _TEXT, _INDEX = itemgetter("kind"), itemgetter("text"), itemgetter("index")

_SCALARS = frozenset({str, int, float, bool, type(None)})
# Runtime payloads are frozen all the way down (DESIGN §4): their dicts and lists are
# read-only subclasses, which json and the comm encode as the dicts and lists they are.
# The checks below compare exact types (C-level set lookups); a frozen subclass they have
# not met yet is learnt the first time (see _json_container).
_DICTS = {dict, FrozenDict}
_TOP_LEVEL = set(_SCALARS) | _DICTS | {list, FrozenList}
_types_of = partial(map, type)


def _json_container(kind: type) -> bool:
    """True if ``kind`` is a frozen dict or list (any subclass: the events module has its
    own); it then joins the exact-type sets, so later checks accept it at C speed."""
    if issubclass(kind, FrozenDict):
        _DICTS.add(kind)
        _TOP_LEVEL.add(kind)
        return True
    if issubclass(kind, FrozenList):
        _TOP_LEVEL.add(kind)
        return True
    return False


def _plain(value: Any) -> Any:
    """``value`` as plain JSON types. Payloads are JSON-ready by contract, but may hold
    read-only views (mappings, tuples) that json cannot encode; the usual plain values
    are checked by exact type (the fast path), anything else goes through ``jsonable``."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict or isinstance(value, FrozenDict):
        return {k if type(k) is str else str(k): _plain(v) for k, v in value.items()}
    if kind is list or kind is tuple or isinstance(value, FrozenList):
        return [_plain(v) for v in value]
    return jsonable(value)


def _is_plain(value: Any) -> bool:
    """True if ``value`` is made of plain JSON types only (a check, no copies)."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is dict or isinstance(value, FrozenDict):
        return all(type(k) is str and _is_plain(v) for k, v in value.items())
    if kind is list or kind is tuple or isinstance(value, FrozenList):
        return all(map(_is_plain, value))
    return False


def _top_plain(payload: Any) -> bool:
    """An AgentEvent payload is JSON-ready by contract (the runtime builds it from JSON
    values, frozen), so only its top level is checked on the hot path: a dict (plain
    or frozen) whose values are JSON types (exact types: a subclass may encode otherwise)."""
    if not (type(payload) in _DICTS or _json_container(type(payload))):
        return False
    if not _TOP_LEVEL.issuperset(map(type, payload.values())) and not all(
            kind in _TOP_LEVEL or _json_container(kind) for kind in map(type, payload.values())):
        return False
    return all(type(k) is str for k in payload)


def event_dict(event: Any) -> dict[str, Any]:
    """One event as the JSON-ready dict of ``AgentEvent.to_dict()``.

    An ``AgentEvent`` payload is JSON-ready by contract (the runtime builds it from
    JSON values, frozen), so only its top level is checked on this hot path (see
    :func:`_top_plain`); a payload with anything else at the top (a mapping view, a
    tuple, a model) is converted whole. ``tests/widgets/test_timeline_wire.py`` checks
    that real runtime payloads are JSON-ready all the way down. Dicts from recorded
    traces are checked deeply.
    """
    to_dict = getattr(event, "to_dict", None)  # an AgentEvent: the hot path, no ABC check
    if to_dict is None and isinstance(event, Mapping):
        data = dict(event)
        return data if _is_plain(data) else _plain(data)
    data = to_dict() if callable(to_dict) else {}
    payload = data.get("payload")
    if payload and not _top_plain(payload):
        data["payload"] = _plain(payload)
    return data


# -- columns --------------------------------------------------------------------------

def _bytes(typecode: str, values: Sequence[Any]) -> bytes:
    """``values`` as a little-endian column. ``struct`` rather than ``array``: array
    parses every item with ``PyArg_Parse``, which made it the costliest pass here."""
    return struct.pack(f"<{len(values)}{typecode}", *values)


def _column(typecode: str, data: Any) -> list[Any]:
    column = array(typecode)
    column.frombytes(bytes(data))
    if _BIG_ENDIAN:
        column.byteswap()
    return column.tolist()


class _Buffers(list):
    def add(self, data: bytes) -> int:
        self.append(data)
        return len(self) - 1


def _codes(values: Sequence[Any], buffers: _Buffers) -> tuple[list[Any], int | None]:
    """A column of few distinct (hashable) values: the table, and a uint16 code per value
    as a buffer (None when there is one value, the usual case: ``count`` compares by
    identity first, so it is the cheapest pass there is). Raises TypeError/OverflowError
    when the values do not fit (unhashable; struct.error past 65,536 distinct)."""
    first = values[0]
    if values.count(first) == len(values):
        return [first], None
    table = list(dict.fromkeys(values))
    code = {value: i for i, value in enumerate(table)}
    return table, buffers.add(_bytes("H", list(map(code.__getitem__, values))))


def _strings(values: Sequence[Any], buffers: _Buffers) -> int | list[Any]:
    """A column of strings as one NUL-separated UTF-8 buffer (one ``join``: JSON-encoding
    thousands of short strings costs several times more), or the plain list when a value
    is not a string, holds a NUL or a lone surrogate."""
    try:
        joined = "\0".join(values)
        if joined.count("\0") == len(values) - 1:
            return buffers.add(joined.encode())
    except (TypeError, UnicodeEncodeError):
        pass
    return list(values)


def _payloads(payloads: Sequence[Any], deep: bool) -> list[Any]:
    """Payloads as plain JSON values: checked with C-level passes when they all are
    (the usual case), converted one by one otherwise."""
    if not deep:
        try:
            if all(map(_TOP_LEVEL.issuperset, map(_types_of, map(dict.values, payloads)))):
                return list(payloads)
        except TypeError:  # a payload that is not a dict (a read-only view)
            pass
        return [p if _top_plain(p) else _plain(p) for p in payloads]
    return [p if _is_plain(p) else _plain(p) for p in payloads]


def _split_chunks(types: list[Any], payloads: list[Any], table: list[Any]) -> tuple[list[Any], list[Any]]:
    """The chunk payloads and the other payloads, each in order. A flush usually holds one
    stretch of chunks between other events: two slices then, not two passes."""
    if table == [CHUNK]:
        return payloads, []
    if CHUNK not in table:
        return [], payloads
    first, count = types.index(CHUNK), types.count(CHUNK)
    end = first + count
    if types[first:end].count(CHUNK) == count:  # one stretch (count compares by identity first)
        return payloads[first:end], payloads[:first] + payloads[end:]
    return (list(compress(payloads, map(eq, types, repeat(CHUNK)))),
            list(compress(payloads, map(ne, types, repeat(CHUNK)))))


def _call_columns(chunks: list[Any], deep: bool) -> list[list[Any]]:
    """``[[chunk position, call_id, name], ...]`` for the tool-call chunks among ``chunks``
    (``{kind, text, index, call_id, name}``); any other shape raises ``KeyError``."""
    out = []
    for position, payload in enumerate(chunks):
        size = len(payload)
        if size == _CHUNK_KEYS:
            continue
        if size != _CHUNK_KEYS + 2:
            raise KeyError("kind")
        call_id, name = payload["call_id"], payload["name"]
        if deep and not {type(call_id), type(name)} <= {str, type(None)}:
            raise TypeError("call_id and name must be str or None")
        out.append([position, call_id, name])
    return out


def _batch(events: Sequence[Any], get: dict[str, Any], deep: bool) -> tuple[dict[str, Any], _Buffers]:
    """One batch item for ``events`` (``get``: a C-level getter per field). One pass per
    field: a getter per row would allocate a tuple per event, and the garbage collector
    would walk them."""
    buffers = _Buffers()
    types = list(map(get["type"], events))
    payloads = list(map(get["payload"], events))
    seqs = list(map(get["sequence"], events))
    ts = list(map(get["timestamp"], events))
    if deep and not (set(map(type, seqs)) == {int} and set(map(type, ts)) == {float}):
        raise TypeError("sequence must be int and timestamp float")  # recorded dicts: sent whole
    item: dict[str, Any] = {"batch": len(types)}
    item["type"], item["type_at"] = _codes(types, buffers)
    item["session_id"], item["session_id_at"] = _codes(list(map(get["session_id"], events)), buffers)
    item["run_id"], item["run_id_at"] = _codes(list(map(get["run_id"], events)), buffers)
    # Sequences always as a column: one struct pass is cheaper than proving them consecutive.
    item["seq"] = buffers.add(_bytes("d", seqs))
    item["ts"] = buffers.add(_bytes("d", ts))
    item["id"] = _strings(list(map(get["event_id"], events)), buffers)
    if not deep:
        # A sub-agent's events carry their parent run and call (DESIGN §14): two coded
        # columns, sent only when a batch has such events.
        parent_runs = list(map(_PARENT_RUN, events))
        if any(parent_runs):
            item["parent_run_id"], item["parent_run_id_at"] = _codes(parent_runs, buffers)
            item["parent_call_id"], item["parent_call_id_at"] = _codes(list(map(_PARENT_CALL, events)), buffers)
    chunk_payloads, others = _split_chunks(types, payloads, item["type"])
    mark = len(buffers)
    columns = bool(chunk_payloads)
    if columns:
        try:
            extra = None
            if set(map(len, chunk_payloads)) != {_CHUNK_KEYS}:
                extra = _call_columns(chunk_payloads, deep)
            kinds, texts = list(map(_KIND, chunk_payloads)), list(map(_TEXT, chunk_payloads))
            if deep and not set(map(type, kinds)) == set(map(type, texts)) == {str}:
                raise TypeError("kind and text must be str")
            index = _bytes("i", list(map(_INDEX, chunk_payloads)))
            kind_table, kind_at = _codes(kinds, buffers)
            item.update(kind=kind_table, kind_at=kind_at, text=_strings(texts, buffers), index=buffers.add(index))
            if extra is not None:
                item["chunk_calls"] = extra
        except (KeyError, TypeError, OverflowError, struct.error):
            columns = False  # an odd chunk: every chunk goes with the other payloads
            del buffers[mark:]
            others = payloads
    item["chunks"] = columns
    if not columns:
        item.update(kind=[], kind_at=None, text=[], index=None)
    item["payload"] = _payloads(others, deep)
    return item, buffers


def encode(events: Sequence[Any]) -> tuple[list[Any], list[bytes]]:
    """``events`` (AgentEvents or dicts) as wire items and their binary buffers."""
    if not events:
        return [], []
    dicts = type(events[0]) is dict
    try:
        if dicts and set(map(len, events)) != {_EVENT_KEYS}:
            raise KeyError("extra keys")
        # C-level getters for the shape of the first event (the live case: all AgentEvents);
        # a getter meeting another shape raises, and the events are sent whole.
        item, buffers = _batch(events, _ITEM if dicts else _ATTR, deep=dicts)
        return [item], list(buffers)
    except (AttributeError, TypeError, KeyError, OverflowError, ValueError, struct.error):
        return list(map(event_dict, events)), []


def _strings_of(column: Any, buffers: Sequence[Any]) -> list[Any]:
    return bytes(buffers[column]).decode().split("\0") if type(column) is int else column


def decode(items: Sequence[Any], buffers: Sequence[Any]) -> list[dict[str, Any]]:
    """The event dicts an ``events`` message carries (what the browser rebuilds)."""
    out: list[dict[str, Any]] = []
    for item in items:
        if "batch" not in item:
            out.append(item)
            continue
        n = item["batch"]

        def strings(name: str) -> list[Any]:
            at = item[f"{name}_at"]
            table = item[name]
            return [table[i] for i in _column("H", buffers[at])] if at is not None else list(repeat(table[0], n))

        types, sessions, runs = strings("type"), strings("session_id"), strings("run_id")
        parented = "parent_run_id" in item
        parent_runs = strings("parent_run_id") if parented else ()
        parent_calls = strings("parent_call_id") if parented else ()
        seqs = [int(s) for s in _column("d", buffers[item["seq"]])]
        ts = _column("d", buffers[item["ts"]])
        ids = _strings_of(item["id"], buffers)
        if item["chunks"]:
            count = types.count(CHUNK)
            kinds = ([item["kind"][i] for i in _column("H", buffers[item["kind_at"]])]
                     if item["kind_at"] is not None else [item["kind"][0]] * count)
            texts, index = _strings_of(item["text"], buffers), _column("i", buffers[item["index"]])
            calls = {position: (call_id, name) for position, call_id, name in item.get("chunk_calls") or ()}
        others = iter(item["payload"])
        c = 0
        for i in range(n):
            if item["chunks"] and types[i] == CHUNK:
                payload = {"kind": kinds[c], "text": texts[c], "index": index[c]}
                if c in calls:
                    payload["call_id"], payload["name"] = calls[c]
                c += 1
            else:
                payload = next(others)
            event = {"event_id": ids[i], "type": types[i], "session_id": sessions[i], "run_id": runs[i],
                     "sequence": seqs[i], "timestamp": ts[i], "payload": payload}
            if parented and parent_runs[i] is not None:
                event["parent_run_id"], event["parent_call_id"] = parent_runs[i], parent_calls[i]
            out.append(event)
    return out
