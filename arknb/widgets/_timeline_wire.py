"""How the TimelineWidget sends events to its front end: compact, exact, cheap to build.

A streamed answer is thousands of ``llm.chunk`` events that differ only in their text,
index, sequence, id and time. Sent as one JSON object each they cost the kernel about
10 µs per chunk (a 5,000-chunk burst took 4x the run itself), mostly in encoding
floats. So consecutive chunks of one run are sent as a *pack*: the texts and ids as
JSON lists, sequence and timestamp as little-endian float64 binary buffers (exact for
every timestamp, and for integers below 2**53), index as int32. Everything is built with
C-level ``map``/``groupby`` passes; nothing here loops over chunks in Python.

An ``events`` message is ``{"type": "events", "start": s, "first": f, "events": items}``
plus binary ``buffers``; ``items`` are event dicts (``AgentEvent.to_dict()``) or packs::

    {"pack": "llm.chunk", "n": 3, "session_id": "...", "run_id": "...",
     "kind": "text" | ["text", "reasoning", ...], "text": [...], "id": [...],
     "seq0": 17 | None, "seq": None | buffer_index, "ts": buffer_index, "index": buffer_index}

``seq0`` is set when the sequences are consecutive (the usual case), else ``seq``
names a buffer. :func:`decode` is the reference reader (``js/src/lib/timeline_store.js``
does the same in the browser); both give back exactly ``AgentEvent.to_dict()``.
"""

from __future__ import annotations

import sys
from array import array
from itertools import groupby
from operator import attrgetter, itemgetter
from collections.abc import Mapping, Sequence
from typing import Any

from ..domain.frozen import FrozenDict, FrozenList
from ._payload import jsonable

__all__ = ["CHUNK", "decode", "encode", "event_dict"]

CHUNK = "llm.chunk"
_CHUNK_KEYS = 3  # kind, text, index: a chunk payload with anything else is sent whole
_BIG_ENDIAN = sys.byteorder == "big"

_ATTR = {name: attrgetter(name) for name in ("type", "payload", "session_id", "run_id", "sequence", "timestamp",
                                              "event_id")}
_ITEM = {name: itemgetter(name) for name in _ATTR}
_KIND, _TEXT, _INDEX = itemgetter("kind"), itemgetter("text"), itemgetter("index")


def _kind_of(event: Any) -> Any:
    return event.get("type") if isinstance(event, Mapping) else getattr(event, "type", None)


_SCALARS = frozenset({str, int, float, bool, type(None)})
# Runtime payloads are frozen all the way down (DESIGN §4): their dicts and lists are these
# read-only subclasses, which json and the comm encode as the dicts and lists they are.
_FROZEN = (FrozenDict, FrozenList)


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


_TOP_LEVEL = _SCALARS | {dict, list}


def event_dict(event: Any) -> dict[str, Any]:
    """One event as the JSON-ready dict of ``AgentEvent.to_dict()``.

    An ``AgentEvent`` payload is JSON-ready by contract (the runtime builds it from
    JSON values, frozen), so only its top level is checked on this hot path; a payload
    with anything else at the top (a mapping view, a tuple, a model) is converted whole.
    ``tests/widgets/test_timeline_wire.py`` checks that real runtime payloads are
    JSON-ready all the way down. Dicts from recorded traces are checked deeply.
    """
    to_dict = getattr(event, "to_dict", None)  # an AgentEvent: the hot path, no ABC check
    if to_dict is None and isinstance(event, Mapping):
        data = dict(event)
        return data if _is_plain(data) else _plain(data)
    data = to_dict() if callable(to_dict) else {}
    payload = data.get("payload")
    if payload:
        for key, value in payload.items():
            if (type(value) not in _TOP_LEVEL and not isinstance(value, _FROZEN)) or type(key) is not str:
                data["payload"] = _plain(payload)
                break
    return data


def _floats(values: Any) -> bytes:
    column = array("d", values)
    if _BIG_ENDIAN:
        column.byteswap()
    return column.tobytes()


def _ints(values: Any) -> bytes:
    column = array("i", values)
    if _BIG_ENDIAN:
        column.byteswap()
    return column.tobytes()


def _pack(group: list[Any], get: dict[str, Any], buffers: list[bytes]) -> dict[str, Any] | None:
    """A pack of ``group`` (chunks of one shape, read with ``get``), or None when they
    cannot share one. Each line is one C-level pass over the group."""
    try:
        payloads = list(map(get["payload"], group))
        if set(map(len, payloads)) != {_CHUNK_KEYS} or len(set(map(get["run_id"], group))) != 1 \
                or len(set(map(get["session_id"], group))) != 1:
            return None
        first, last = get["sequence"](group[0]), get["sequence"](group[-1])
        if not (isinstance(first, int) and isinstance(last, int)):
            return None
        kinds = set(map(_KIND, payloads))
        pack: dict[str, Any] = {
            "pack": CHUNK, "n": len(group), "session_id": get["session_id"](group[0]),
            "run_id": get["run_id"](group[0]),
            "kind": next(iter(kinds)) if len(kinds) == 1 else list(map(_KIND, payloads)),
            "text": list(map(_TEXT, payloads)), "id": list(map(get["event_id"], group)), "seq0": None, "seq": None}
        # Sequences increase strictly within a session: equal span and count means consecutive.
        consecutive = last - first == len(group) - 1
        seqs = None if consecutive else _floats(map(get["sequence"], group))
        ts = _floats(map(get["timestamp"], group))
        index = _ints(map(_INDEX, payloads))
    except (AttributeError, KeyError, TypeError, OverflowError):
        return None  # not the chunk shape (or a field of another type): send the events whole
    if seqs is None:
        pack["seq0"] = first
    else:
        pack["seq"] = len(buffers)
        buffers.append(seqs)
    pack["ts"] = len(buffers)
    buffers.append(ts)
    pack["index"] = len(buffers)
    buffers.append(index)
    return pack


def encode(events: Sequence[Any]) -> tuple[list[Any], list[bytes]]:
    """``events`` (AgentEvents or dicts) as wire items and their binary buffers."""
    if not events:
        return [], []
    try:
        # C-level getters for the shape of the first event (the live case: all AgentEvents);
        # a getter meeting the other shape raises, and the list is encoded event by event.
        return _encode(events, _ITEM if type(events[0]) is dict else _ATTR)
    except (AttributeError, TypeError, KeyError):
        return _encode(events, None)


def _encode(events: Sequence[Any], get: dict[str, Any] | None) -> tuple[list[Any], list[bytes]]:
    items: list[Any] = []
    buffers: list[bytes] = []
    for etype, run in groupby(events, get["type"] if get else _kind_of):
        group = list(run)
        if etype != CHUNK or len(group) < 2 or get is None:
            items.extend(map(event_dict, group))
            continue
        pack = _pack(group, get, buffers)
        if pack is not None:
            items.append(pack)
            continue
        # Chunks of several runs, or an odd one among them (rare): pack each stretch
        # of one run and the usual shape, send the rest whole.
        for stretch in _stretches(group, get):
            pack = _pack(stretch, get, buffers) if len(stretch) > 1 else None
            if pack is not None:
                items.append(pack)
            else:
                items.extend(map(event_dict, stretch))
    return items, buffers


def _stretches(group: list[Any], get: dict[str, Any]) -> list[list[Any]]:
    def shape(event: Any) -> tuple[Any, ...]:
        payload = get["payload"](event)
        usual = len(payload) == _CHUNK_KEYS and all(k in payload for k in ("kind", "text", "index"))
        return (get["run_id"](event), get["session_id"](event)) if usual else ("odd", id(event))

    return [list(stretch) for _, stretch in groupby(group, shape)]


def _column(buffers: Sequence[Any], index: int) -> list[float]:
    column = array("d")
    column.frombytes(bytes(buffers[index]))
    if _BIG_ENDIAN:
        column.byteswap()
    return column.tolist()


def _int_column(buffers: Sequence[Any], index: int) -> list[int]:
    column = array("i")
    column.frombytes(bytes(buffers[index]))
    if _BIG_ENDIAN:
        column.byteswap()
    return column.tolist()


def decode(items: Sequence[Any], buffers: Sequence[Any]) -> list[dict[str, Any]]:
    """The event dicts an ``events`` message carries (what the browser rebuilds)."""
    out: list[dict[str, Any]] = []
    for item in items:
        if item.get("pack") != CHUNK:
            out.append(item)
            continue
        n = item["n"]
        seqs = (list(range(item["seq0"], item["seq0"] + n)) if item.get("seq0") is not None
                else [int(s) for s in _column(buffers, item["seq"])])
        ts = _column(buffers, item["ts"])
        index = _int_column(buffers, item["index"])
        kinds = item["kind"] if isinstance(item["kind"], list) else [item["kind"]] * n
        for i in range(n):
            out.append({"event_id": item["id"][i], "type": CHUNK, "session_id": item["session_id"],
                        "run_id": item["run_id"], "sequence": seqs[i], "timestamp": ts[i],
                        "payload": {"kind": kinds[i], "text": item["text"][i], "index": index[i]}})
    return out
