"""The cassette file: header, records, request hashing, and reading one back (DESIGN §11).

A cassette is JSONL. Line 1 is the header ``{"arknb_cassette": 1, "created_at": ...,
"arknb_version": ...}``; every further line is one model call::

    {"call": 2, "parent": 1, "request_hash": "<sha256>", "request": {messages, tools, config},
     "events": [{"offset": 0.0, "type": "model_start", ...}, ...], "error": null, "complete": true}

``call`` numbers records from 1 in file order; ``parent`` is the record the
conversation had reached before this call (0 at the start). A cassette recorded in
one go is a chain (each parent is the previous record); ``mode="new_episodes"`` adds
branches without rewriting anything, so every recorded conversation stays replayable
in order. The request holds only the messages, tools and config: never keys, headers
or URLs, which live in the client.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..domain import ArkError, ErrorCode, ModelRequest, StreamingEvent, StreamingEventAdapter
from ..domain.errors import ErrorInfo
from ._files import FileKind, canonical_json, check_header, iter_jsonl, now_iso, too_deep

__all__ = ["CASSETTE", "CassetteRecord", "RequestHasher", "append_record", "header_line", "load_records"]

CASSETTE_VERSION = 1
_NOT_SENT = {"output", "truncated"}  # the runtime's notes on a saved answer: the model never sees them

CASSETTE = FileKind("cassette", "arknb_cassette", CASSETTE_VERSION, ErrorCode.CASSETTE_CORRUPT,
                    ErrorCode.CASSETTE_VERSION_UNSUPPORTED)


def header_line() -> str:
    """The first line of a new cassette."""
    from ._version import arknb_version

    return json.dumps({"arknb_cassette": CASSETTE_VERSION, "created_at": now_iso(), "arknb_version": arknb_version()})


@dataclass(frozen=True, slots=True)
class CassetteRecord:
    """One recorded model call, parsed."""

    call: int
    parent: int
    line: int
    request_hash: str
    request: dict[str, Any]
    events: tuple[StreamingEvent, ...]
    offsets: tuple[float, ...]
    error: ErrorInfo | None
    complete: bool


class RequestHasher:
    """Canonical JSON and sha256 of a request, reusing each message's JSON between calls.

    A run's requests share their history messages (the same frozen objects), so each
    message is serialised once, not once per call: replaying stays about as cheap as
    the scripted model.
    """

    __slots__ = ("_messages", "_tools")

    def __init__(self) -> None:
        self._messages: dict[int, tuple[Any, str]] = {}
        self._tools: tuple[Any, str] | None = None

    def canonical(self, request: ModelRequest) -> str:
        """The request's canonical JSON: ``{"config":..,"messages":[..],"tools":[..]}``."""
        cache = self._messages
        fresh: dict[int, tuple[Any, str]] = {}
        parts = []
        for message in request.messages:
            hit = cache.get(id(message))
            if hit is None or hit[0] is not message:
                hit = (message, canonical_json(message.model_dump(mode="json", exclude_defaults=True,
                                                                  exclude=_NOT_SENT)))
            fresh[id(message)] = hit
            parts.append(hit[1])
        self._messages = fresh  # only this request's messages stay cached: memory stays bounded
        tools = self._tools
        if tools is None or tools[0] is not request.tools:
            tools = (request.tools, ",".join(canonical_json(t.model_dump(mode="json", exclude_defaults=True))
                                             for t in request.tools))
            self._tools = tools
        config = canonical_json(request.config.model_dump(mode="json", exclude_defaults=True))
        # A typed answer asked for natively (DESIGN §17) is part of the request; absent, the
        # canonical form is what it always was (older cassettes still match).
        output = request.output
        tail = "" if output is None else f',"output":{canonical_json(output.model_dump(mode="json"))}'
        return f'{{"config":{config},"messages":[{",".join(parts)}]{tail},"tools":[{tools[1]}]}}'

    @staticmethod
    def digest(canonical: str) -> str:
        """sha256 (hex) of the canonical JSON."""
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def append_record(path: Path, *, call: int, parent: int, request_json: str, request_hash: str,
                  events: list[tuple[float, StreamingEvent]], error: ArkError | None, complete: bool,
                  redact: Any = None) -> None:
    """Append one record as a single line and flush it (a crash loses at most the call in flight)."""
    dumped = []
    for offset, event in events:
        data = StreamingEventAdapter.dump_python(event, mode="json")
        dumped.append(json.dumps({"offset": round(offset, 6), **data}, ensure_ascii=False, separators=(",", ":")))
    error_json = json.dumps(error.to_dict(), ensure_ascii=False, separators=(",", ":")) if error is not None else "null"
    line = (f'{{"call":{call},"parent":{parent},"request_hash":"{request_hash}","request":{request_json},'
            f'"events":[{",".join(dumped)}],"error":{error_json},"complete":{"true" if complete else "false"}}}')
    if redact is not None:
        line = redact(line)
    with open(path, "a", encoding="utf-8", newline="\n") as out:
        # One write of the whole line: records never interleave, and a torn last line
        # (the process died mid-write) is recognised and skipped by the reader.
        out.write(line + "\n")
        out.flush()


def load_records(path: Path) -> tuple[dict[str, Any], list[CassetteRecord], bool, int]:
    """Read a cassette: ``(header, records, torn_tail, lines)``.

    ``torn_tail`` is True when the file ends in a partial line (a recorder that died
    mid-write); that line is ignored, and an appending recorder cuts it off first.
    ``lines`` is how many lines the file has.
    """
    header: dict[str, Any] | None = None
    records: list[CassetteRecord] = []
    stats: dict[str, Any] = {}
    for number, value in iter_jsonl(path, CASSETTE, tolerate_torn_tail=True, stats=stats):
        if header is None:
            header = check_header(path, CASSETTE, number, value)
            continue
        try:
            records.append(_record(path, number, value, len(records) + 1))
        except RecursionError:
            raise too_deep(path, CASSETTE, number) from None
    if header is None:
        raise CASSETTE.error(path, 1, "the file is empty: expected the header "
                                      f"{{\"arknb_cassette\": {CASSETTE_VERSION}, ...}}")
    return header, records, bool(stats.get("torn")), int(stats.get("lines", 0))


def _record(path: Path, number: int, value: Any, index: int) -> CassetteRecord:
    def bad(detail: str) -> ArkError:
        return CASSETTE.error(path, number, f"(record {index}) {detail}")

    if not isinstance(value, dict):
        raise bad(f"must be a JSON object, got {type(value).__name__}")
    call = value.get("call", index)
    if call != index:
        raise bad(f"says it is call {call!r}, but it is record {index} of the file")
    parent = value.get("parent", index - 1)
    if isinstance(parent, bool) or not isinstance(parent, int) or not 0 <= parent < index:
        raise bad(f"has parent {parent!r}; a record follows an earlier record (or 0, the start)")
    request_hash = value.get("request_hash")
    if not isinstance(request_hash, str) or len(request_hash) != 64:
        raise bad("has no request_hash (the sha256 of its request)")
    request = value.get("request")
    if not isinstance(request, dict):
        raise bad("has no request object")
    raw_events = value.get("events")
    if not isinstance(raw_events, list):
        raise bad("has no events list")
    events: list[StreamingEvent] = []
    offsets: list[float] = []
    for i, raw in enumerate(raw_events):
        if not isinstance(raw, dict):
            raise bad(f"events[{i}] must be an object")
        data = dict(raw)
        offset = data.pop("offset", 0.0)
        if isinstance(offset, bool) or not isinstance(offset, (int, float)) or offset < 0:
            raise bad(f"events[{i}] has an invalid offset {offset!r}")
        try:
            events.append(StreamingEventAdapter.validate_python(data))
        except ValidationError as exc:
            raise bad(f"events[{i}] is not a streaming event ({_first_problem(exc)})") from None
        offsets.append(float(offset))
    error = value.get("error")
    if error is not None:
        try:
            error = ErrorInfo.model_validate(error)
        except ValueError:
            raise bad("has an error that is not an arknb error object") from None
    complete = value.get("complete", True)
    if not isinstance(complete, bool):
        raise bad(f"has complete={complete!r}; expected true or false")
    return CassetteRecord(call=index, parent=parent, line=number, request_hash=request_hash, request=request,
                          events=tuple(events), offsets=tuple(offsets), error=error, complete=complete)


def _first_problem(exc: ValidationError) -> str:
    """Where and what the first validation problem is, in one line ("text: Field required")."""
    problem = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in problem.get("loc", ()))
    return f"{where}: {problem.get('msg')}" if where else str(problem.get("msg"))

