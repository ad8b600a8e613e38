"""Event traces in and out of the notebook: JSONL with a versioned header (DESIGN §11).

The file's first line is ``{"arknb_trace": 1, "created_at": ..., "arknb_version": ...,
"events": N}``; each further line is one §4 event envelope. A trace written by a
newer arknb is refused (``trace_version_unsupported``); a malformed line names file
and line (``trace_corrupt``). ``TimelineWidget.to_jsonl`` writes this format too (its
header's ``dropped`` counts the older events the widget no longer kept); files it wrote
before it had a header (events only) are read too.

Example:
    >>> events = []
    >>> runtime.bus.subscribe(ark.EventTypes.ANY, events.append)   # doctest: +SKIP
    >>> ev.trace.to_jsonl(events, "run.trace.jsonl")               # doctest: +SKIP
    >>> ark.TimelineWidget(ev.trace.from_jsonl("run.trace.jsonl")) # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from ..domain import ErrorCode, invalid_argument
from ..events import AgentEvent
from ._event_codec import event_dict, event_from_dict
from ._files import FileKind, as_path, check_header, iter_jsonl, now_iso, too_deep, write_lines_atomically

__all__ = ["TRACE_VERSION", "from_jsonl", "to_jsonl"]

TRACE_VERSION = 1

TRACE = FileKind("trace", "arknb_trace", TRACE_VERSION, ErrorCode.TRACE_CORRUPT, ErrorCode.TRACE_VERSION_UNSUPPORTED)


def to_jsonl(events: Iterable[Any], path: str | os.PathLike[str], *, dropped: int = 0) -> int:
    """Write ``events`` (``AgentEvent`` or envelope dicts) as a trace file; returns how many.

    The file is written to a temporary file first and then moved into place, so an
    existing trace is replaced whole or not at all. ``dropped`` (recorded in the header
    with ``first_sequence``) says how many earlier events the file lacks: a timeline
    that kept only its newest events writes what it kept, and says so.
    """
    if isinstance(dropped, bool) or not isinstance(dropped, int) or dropped < 0:
        raise invalid_argument(f"to_jsonl: dropped must be an int >= 0, got {dropped!r}")
    from ._version import arknb_version

    target = as_path(path, "trace path")
    if isinstance(events, (str, bytes)) or not isinstance(events, Iterable):
        raise invalid_argument(f"to_jsonl(events, path): events must be a list of AgentEvent, "
                               f"got {type(events).__name__}")
    lines = []
    for i, event in enumerate(events):
        try:
            data = event_dict(event)
            event_from_dict(data)  # refuse to write what from_jsonl would refuse to read
        except (TypeError, ValueError) as exc:
            raise invalid_argument(f"to_jsonl: events[{i}]: {exc}") from None
        lines.append(json.dumps(data, ensure_ascii=False, default=str, separators=(",", ":")))
    first = json.loads(lines[0]).get("sequence") if lines else None
    header = json.dumps({"arknb_trace": TRACE_VERSION, "created_at": now_iso(), "arknb_version": arknb_version(),
                         "events": len(lines), "dropped": dropped, "first_sequence": first})
    write_lines_atomically(target, [header, *lines])
    return len(lines)


def from_jsonl(path: str | os.PathLike[str]) -> list[AgentEvent]:
    """Read a trace file back as ``AgentEvent`` values, in file order.

    Raises ``eval_file_not_found``, ``trace_corrupt`` (naming file and line) or
    ``trace_version_unsupported``; the file is never changed.
    """
    source = as_path(path, "trace path")
    events: list[AgentEvent] = []
    first = True
    declared: int | None = None
    for number, value in iter_jsonl(source, TRACE):
        if first:
            first = False
            if isinstance(value, dict) and "arknb_trace" in value:
                header = check_header(source, TRACE, number, value)
                count = header.get("events")
                declared = count if isinstance(count, int) and not isinstance(count, bool) else None
                continue
            if not (isinstance(value, dict) and "type" in value and "sequence" in value):
                raise TRACE.error(source, number, "is neither a trace header "
                                                  f"({{\"arknb_trace\": {TRACE_VERSION}, ...}}) nor an event")
        try:
            events.append(event_from_dict(value))
        except ValueError as exc:
            raise TRACE.error(source, number, str(exc)) from None
        except RecursionError:
            raise too_deep(source, TRACE, number) from None
    if first:
        raise TRACE.error(source, 1, "the file is empty")
    if declared is not None and declared != len(events):
        raise TRACE.error(source, None, f"the header announces {declared} events but the file holds "
                                        f"{len(events)}: it was cut short")
    return events
