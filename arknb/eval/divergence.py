"""Where two runs' event transcripts part ways (DESIGN §11).

:func:`first_divergence` compares event types and payloads in order and ignores what
differs between any two runs of the same thing: event, run, session, batch and
approval ids, sequence numbers, timestamps and durations. Tool arguments are
compared as parsed JSON, so the result names the argument that changed::

    turn 3, tool.before: arguments.query differs: 'cats' != 'dogs'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..domain import invalid_argument
from ._diff import MISSING, leaf_diffs, short

__all__ = ["IGNORED_KEYS", "Divergence", "comparable", "first_divergence", "turn_numbers"]

IGNORED_KEYS = frozenset({
    "event_id", "run_id", "session_id", "batch_id", "previous_run_id", "approval_id", "sequence", "timestamp",
    "duration_ms", "created_at", "decided_at",
})
"""Keys (at any depth of a payload) that differ between any two runs and are never compared."""


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first difference between two transcripts.

    Attributes:
        index: position of the first differing event (0-based, in both lists).
        turn: the model call the event belongs to (1 = the first; 0 = before any).
        event_type: the expected event's type (the actual one's if the expected run ended).
        path: the payload field that differs (``arguments.query``), ``""`` when the
            event types differ or one transcript ended.
        expected: the expected value (the event type when ``path`` is ``""``; None past its end).
        actual: the actual value (likewise).
    """

    index: int
    turn: int
    event_type: str
    path: str
    expected: Any
    actual: Any

    def __str__(self) -> str:
        where = f"turn {self.turn}" if self.turn else "before the first model call"
        if self.path:
            return f"{where}, {self.event_type}: {self.path} differs: {short(self.expected)} != {short(self.actual)}"
        if self.actual is None:
            return f"{where}, event {self.index}: the actual run ended here; expected {self.expected} next"
        if self.expected is None:
            return f"{where}, event {self.index}: the actual run goes on with {self.actual}; the expected run ended"
        return f"{where}, event {self.index}: expected {self.expected}, got {self.actual}"


def _as_dict(event: Any, side: str, index: int) -> Mapping[str, Any]:
    if isinstance(event, Mapping):
        data = event
    else:
        to_dict = getattr(event, "to_dict", None)
        if not callable(to_dict):
            raise invalid_argument(f"{side}[{index}] is not an AgentEvent or event dict: {type(event).__name__}")
        data = to_dict()
    if not isinstance(data.get("type"), str):
        raise invalid_argument(f"{side}[{index}] has no event type")
    return data


def comparable(value: Any) -> Any:
    """A payload as it is compared: ignored keys dropped, ``arguments_json`` parsed into
    ``arguments`` (and so the ``text`` of a streamed tool call's ``llm.chunk`` when it is
    complete JSON, e.g. a call streamed in one piece)."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        call_chunk = value.get("kind") == "tool_call" and "call_id" in value
        for key, item in value.items():
            if key in IGNORED_KEYS:
                continue
            if call_chunk and key == "text" and isinstance(item, str):
                try:
                    out["arguments"] = comparable(json.loads(item))
                    continue
                except ValueError:
                    pass
            if key == "arguments_json" and isinstance(item, str):
                try:
                    out["arguments"] = comparable(json.loads(item or "{}"))
                    continue
                except ValueError:
                    pass
            out[key] = comparable(item)
        return out
    if isinstance(value, (list, tuple)):
        return [comparable(v) for v in value]
    return value


def turn_numbers(events: Iterable[Mapping[str, Any]]) -> list[int]:
    """The model-call turn of each event: it goes up at each ``llm.before`` (retries stay in their turn)."""
    turns, turn = [], 0
    for event in events:
        if event.get("type") == "llm.before":
            payload = event.get("payload") or {}
            if not payload.get("attempt") and not payload.get("purpose"):  # an extension's call is no turn
                turn += 1
        turns.append(turn)
    return turns


def _display(path: str) -> str:
    # A tool event's payload is {"call": {...}}: name its fields directly ("arguments.query").
    return path[len("call."):] if path.startswith("call.") else path


def _joined_calls(events: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``events`` with each run of a tool call's argument chunks (``llm.chunk`` kind
    ``tool_call``, one call) joined into one: where the arguments were cut is transport,
    not behaviour (a runtime with secrets configured publishes them whole at the end)."""
    out: list[Mapping[str, Any]] = []
    for event in events:
        payload = event.get("payload") or {}
        last = out[-1] if out else None
        if (event["type"] == "llm.chunk" and payload.get("kind") == "tool_call" and last is not None
                and last["type"] == "llm.chunk" and (last.get("payload") or {}).get("kind") == "tool_call"
                and last["payload"].get("index") == payload.get("index")):
            before = last["payload"]
            merged = {**before, **{k: v for k, v in payload.items() if v is not None},
                      "text": (before.get("text") or "") + (payload.get("text") or "")}
            out[-1] = {**last, "payload": merged}
            continue
        out.append(event)
    return out


def first_divergence(expected_events: Iterable[Any], actual_events: Iterable[Any]) -> Divergence | None:
    """The first place two event transcripts differ, or None when they match.

    Args:
        expected_events: the reference run's events (``AgentEvent`` or their dicts,
            e.g. from :func:`arknb.eval.trace.from_jsonl`).
        actual_events: the run to check.

    Example:
        >>> d = ev.first_divergence(recorded, replayed)   # doctest: +SKIP
        >>> print(d)                                       # doctest: +SKIP
        turn 2, tool.before: arguments.b differs: 2 != 3
    """
    if isinstance(expected_events, (str, bytes)) or isinstance(actual_events, (str, bytes)):
        raise invalid_argument("first_divergence compares two lists of events; to read a trace file use "
                               "ev.trace.from_jsonl(path)")
    expected = _joined_calls([_as_dict(e, "expected_events", i) for i, e in enumerate(expected_events)])
    actual = _joined_calls([_as_dict(e, "actual_events", i) for i, e in enumerate(actual_events)])
    turns = turn_numbers(expected)
    for i in range(min(len(expected), len(actual))):
        a, b = expected[i], actual[i]
        if a["type"] != b["type"]:
            return Divergence(i, turns[i], a["type"], "", a["type"], b["type"])
        diffs = leaf_diffs(comparable(a.get("payload") or {}), comparable(b.get("payload") or {}), limit=1)
        if diffs:
            path, old, new = diffs[0]
            return Divergence(i, turns[i], a["type"], _display(path),
                              None if old is MISSING else old, None if new is MISSING else new)
    if len(expected) > len(actual):
        i = len(actual)
        return Divergence(i, turns[i], expected[i]["type"], "", expected[i]["type"], None)
    if len(actual) > len(expected):
        i = len(expected)
        turn = turn_numbers(actual)[i]
        return Divergence(i, turn, actual[i]["type"], "", None, actual[i]["type"])
    return None
