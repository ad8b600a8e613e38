"""Record model calls to a cassette and replay them offline (DESIGN §11, vcrpy's model).

``Recorder(client, path)`` is an :class:`~arknb.providers.LLMClient` that forwards
each call to ``client`` and appends it to the cassette as it ends. ``ReplayModel(path)``
plays a cassette with no network and no key, strictly in order: a request that differs
from the next record raises ``cassette_mismatch`` with a readable diff. ``fork(path,
at_call=N, then=client)`` replays the first N calls and sends the rest to ``client``,
to A/B a hook or prompt change on recorded traffic.

Example:
    >>> import arknb.eval as ev
    >>> model = ev.Recorder(client, "cassettes/weather.jsonl")   # doctest: +SKIP
    >>> runtime = ark.AgentRuntime(model, tools=[fetch_weather]) # doctest: +SKIP
    >>> await runtime.run("Weather in Paris?")                    # records once, replays after
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import weakref
from collections import OrderedDict
from contextlib import aclosing
from pathlib import Path
from typing import Any, AsyncIterator, Literal

from ..domain import (
    ArkError, CancellationToken, ErrorCode, ErrorLayer, ModelRequest, ModelResponse, StreamingEvent, invalid_argument,
)
from ..providers import Capabilities
from ._cassette_format import CASSETTE, CassetteRecord, RequestHasher, append_record, header_line, load_records
from ._files import as_path, check_header, export_lint, iter_jsonl, write_lines_atomically
from ._request_diff import describe_request_diff, similarity

__all__ = ["ForkedModel", "RecordMode", "Recorder", "ReplayModel", "Timing", "fork"]

RecordMode = Literal["once", "new_episodes", "all"]
Timing = Literal["instant", "recorded"]

_MODES = ("once", "new_episodes", "all")
_TIMINGS = ("instant", "recorded")
_CACHE_SIZE = 32
_parsed: OrderedDict[tuple, tuple[dict, tuple[CassetteRecord, ...], bool, int]] = OrderedDict()


def _load(path: Path) -> tuple[dict, list[CassetteRecord], bool, int]:
    """Parse a cassette, reusing the parse of an unchanged file (records are immutable):
    a suite that opens one cassette per case parses it once."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        from ._files import missing_file
        raise missing_file(path, CASSETTE) from None
    key = (str(path.resolve()), st.st_ino, st.st_size, st.st_mtime_ns)
    hit = _parsed.get(key)
    if hit is None:
        header, records, torn, lines = load_records(path)
        hit = (header, tuple(records), torn, lines)
        _parsed[key] = hit
        while len(_parsed) > _CACHE_SIZE:
            _parsed.popitem(last=False)
    else:
        _parsed.move_to_end(key)
    header, records, torn, lines = hit
    return header, list(records), torn, lines


def _check_timing(timing: Any) -> str:
    if timing not in _TIMINGS:
        raise invalid_argument(f"timing must be 'instant' or 'recorded', got {timing!r}")
    return timing


def _observe(client: Any, observer: Any) -> Any:
    """``client.observe_secrets(observer)`` if it has one, else a no-op stop function."""
    observe = getattr(client, "observe_secrets", None)
    return observe(observer) if callable(observe) else (lambda: None)


async def _resolve(client: Any) -> None:
    """``await client.resolve_secrets()`` if it has one."""
    resolve = getattr(client, "resolve_secrets", None)
    if callable(resolve):
        await resolve()


class _Tape:
    """A cassette's records as a tree of conversations and the position reached in it."""

    def __init__(self, path: Path, records: list[CassetteRecord], lines: int, torn: bool = False) -> None:
        self.path = path
        self.torn = torn  # the file ends in a partial record (its recording was interrupted)
        self.records = records
        self.children: dict[int, list[CassetteRecord]] = {}
        for record in records:
            self.children.setdefault(record.parent, []).append(record)
        self.cursor = 0
        self.calls = 0
        self.lines = lines
        self.hasher = RequestHasher()

    def add(self, record: CassetteRecord) -> None:
        self.records.append(record)
        self.children.setdefault(record.parent, []).append(record)
        self.lines = record.line

    def find(self, digest: str) -> CassetteRecord | None:
        """The next record (a child of the cursor) recorded for this exact request."""
        for record in self.children.get(self.cursor, ()):
            if record.request_hash == digest:
                return record
        return None

    def lookup(self, request: ModelRequest) -> tuple[str, str, CassetteRecord | None]:
        """``(canonical JSON, hash, matching next record or None)`` for a request."""
        canonical = self.hasher.canonical(request)
        digest = self.hasher.digest(canonical)
        return canonical, digest, self.find(digest)

    def advance(self, record: CassetteRecord) -> None:
        self.cursor = record.call
        self.calls += 1

    def mismatch(self, canonical: str) -> ArkError:
        """``cassette_mismatch`` against the nearest candidate, or ``cassette_exhausted``."""
        call = self.calls + 1
        candidates = self.children.get(self.cursor, ())
        if not candidates:
            where = f"none follows record {self.cursor}" if self.cursor else "none is at its start"
            notes = ""
            if self.torn:
                notes += (f" Its last line (line {self.lines}) is a record cut off when its recording was "
                          "interrupted, so it was left out.")
            digest = self.hasher.digest(canonical)
            if self.cursor and any(r.request_hash == digest for r in self.children.get(0, ())):
                notes += (" This request is the cassette's first call again: one model object plays one "
                          "conversation, once. Give each runtime (and each re-run of a cell) a new one, or call "
                          "reset() on a ReplayModel.")
            return ArkError(ErrorLayer.CONFIG, ErrorCode.CASSETTE_EXHAUSTED,
                            f"cassette {self.path} has no record for model call {call}: it holds "
                            f"{len(self.records)} record(s) and {where}.{notes} Record the rest with "
                            f"Recorder(client, path, mode='new_episodes'), or fork(path, at_call={self.calls}, "
                            f"then=client) to send it to a live model")
        actual = json.loads(canonical)
        nearest = max(candidates, key=lambda r: similarity(r.request, actual))
        return ArkError(ErrorLayer.CONFIG, ErrorCode.CASSETTE_MISMATCH,
                        f"model call {call} does not match record {nearest.call} of cassette {self.path} "
                        f"(line {nearest.line}):\n{describe_request_diff(nearest.request, actual)}\n"
                        f"Re-record with Recorder(client, path, mode='new_episodes') (keeps what matches) or "
                        f"mode='all', or fork(path, at_call={self.calls}, then=client) to A/B the change")


async def _play(tape: _Tape, record: CassetteRecord, timing: str,
                cancel: CancellationToken | None) -> AsyncIterator[StreamingEvent]:
    """Move the tape to ``record`` and yield its events (at their offsets with ``timing="recorded"``)."""
    tape.advance(record)
    path = tape.path
    loop = asyncio.get_running_loop()
    start = loop.time()
    recorded = timing == "recorded"
    for event, offset in zip(record.events, record.offsets):
        if cancel is not None and cancel.cancelled:
            raise cancel.error()
        if recorded:
            delay = start + offset - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
        yield event
    if record.error is not None:
        raise record.error.to_error()
    if not record.complete:
        raise ArkError(ErrorLayer.CONFIG, ErrorCode.CASSETTE_EXHAUSTED,
                       f"record {record.call} of cassette {path} (line {record.line}) ends after "
                       f"{len(record.events)} event(s): when it was recorded the run stopped reading there "
                       f"(e.g. a hook aborted the stream). Re-record it to replay further")


async def _complete(stream: AsyncIterator[StreamingEvent]) -> ModelResponse:
    try:
        async for event in stream:
            if event.type == "model_complete":
                return event.response
    finally:
        await stream.aclose()
    raise ArkError(ErrorLayer.PROVIDER, ErrorCode.PROVIDER_STREAM_INCOMPLETE, "the stream ended without a response")


class _OneAtATime:
    """A cassette follows one conversation: overlapping streams would interleave it."""

    __slots__ = ("busy", "owner")

    def __init__(self, owner: str) -> None:
        self.busy = False
        self.owner = owner

    def enter(self) -> None:
        if self.busy:
            raise invalid_argument(f"{self.owner} plays one conversation at a time: give each runtime "
                                   "(and each concurrent case) its own instance")
        self.busy = True


class ReplayModel:
    """An :class:`~arknb.providers.LLMClient` that plays a cassette offline, in order.

    Args:
        path: the cassette (JSONL, as written by :class:`Recorder`).
        timing: ``"instant"`` (default) yields every event at once; ``"recorded"``
            waits for each event's recorded offset from the call's start.

    Raises (from the constructor): ``eval_file_not_found``, ``cassette_corrupt``
    (names file and line), ``cassette_version_unsupported``. From a call:
    ``cassette_mismatch`` (the request differs from the next record; the message has
    the diff), ``cassette_exhausted`` (no record left).

    Example:
        >>> runtime = ark.AgentRuntime(ev.ReplayModel("cassettes/weather.jsonl"), tools=[...])  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str], *, timing: Timing = "instant") -> None:
        self.path = as_path(path, "ReplayModel path")
        self.timing = _check_timing(timing)
        self.header, records, torn, lines = _load(self.path)
        self._tape = _Tape(self.path, records, lines, torn)
        self._gate = _OneAtATime("ReplayModel")

    @property
    def records(self) -> int:
        """How many records the cassette holds."""
        return len(self._tape.records)

    @property
    def capabilities(self) -> Capabilities:
        """What the recorded model could do, as far as the cassette shows: a typed answer
        recorded with native JSON-schema output is asked for natively on replay too."""
        native = any("output" in record.request for record in self._tape.records
                     if isinstance(record.request, dict))
        return Capabilities(json_schema_output=native)

    @property
    def played(self) -> int:
        """How many model calls were answered so far."""
        return self._tape.calls

    def reset(self) -> None:
        """Start again from the first record (for a new conversation)."""
        self._tape.cursor = 0
        self._tape.calls = 0

    async def stream(self, request: ModelRequest, *,
                     cancel: CancellationToken | None = None) -> AsyncIterator[StreamingEvent]:
        """Yield the next record's events; the request must match it."""
        self._gate.enter()
        try:
            canonical, _digest, record = self._tape.lookup(request)
            if record is None:
                raise self._tape.mismatch(canonical)
            async with aclosing(_play(self._tape, record, self.timing, cancel)) as events:
                async for event in events:
                    yield event
        finally:
            self._gate.busy = False

    async def generate(self, request: ModelRequest, *, cancel: CancellationToken | None = None) -> ModelResponse:
        """The next record's complete response."""
        return await _complete(self.stream(request, cancel=cancel))

    def __repr__(self) -> str:
        return f"ReplayModel({str(self.path)!r}, records={self.records}, played={self.played}, timing={self.timing!r})"


class Recorder:
    """An :class:`~arknb.providers.LLMClient` that records ``client``'s calls to a cassette.

    Record modes follow vcrpy:

    - ``"once"`` (default): record when the cassette does not exist yet; otherwise
      replay it (never calling ``client``) and refuse requests it has no record for.
    - ``"new_episodes"``: replay what matches, record the rest. New calls are appended
      as a branch after the last matching record; nothing is rewritten, so the old
      conversation still replays too.
    - ``"all"``: record everything again into a fresh cassette.

    Each record is appended and flushed as its call ends, so a crash loses at most the
    call in flight. A record holds the request's messages, tools and config and every
    streamed event with its offset; never a key, header or URL. Each line passes through
    the redaction of every runtime that uses this recorder (its ``secrets=``, the keys it
    learnt, credential shapes; handed over by ``redact_with``), with ``client``'s own key
    values and this machine's ``*_API_KEY`` variables, plain or escaped, before it is written.

    Args:
        client: the model to record (e.g. an ``OpenAICompatibleClient``).
        path: the cassette file (its folder is created when the first record is written).
        mode: ``"once"``, ``"new_episodes"`` or ``"all"``.
        timing: how replayed records are played (see :class:`ReplayModel`).
    """

    def __init__(self, client: Any, path: str | os.PathLike[str], mode: RecordMode = "once", *,
                 timing: Timing = "instant") -> None:
        if not callable(getattr(client, "stream", None)):
            raise invalid_argument(f"Recorder needs an LLMClient to record (with a stream() method), "
                                   f"got {type(client).__name__}")
        if mode not in _MODES:
            raise invalid_argument(f"mode must be 'once', 'new_episodes' or 'all', got {mode!r}")
        self.client = client
        self.path = as_path(path, "Recorder path")
        self.mode = mode
        self.timing = _check_timing(timing)
        self._gate = _OneAtATime("Recorder")
        self._lints: weakref.WeakSet = weakref.WeakSet()  # the runtimes' (redact_with)
        self._fresh = False   # "all": the old file is replaced at the first recorded call
        self._torn = False
        self.recorded = 0
        """How many calls this recorder wrote."""
        exists = self.path.exists()
        if exists and mode != "all":
            _header, records, self._torn, lines = _load(self.path)
            self._tape = _Tape(self.path, records, lines, self._torn)
        else:
            if exists:
                self._check_overwritable()
            self._tape = _Tape(self.path, [], 0)
            self._fresh = True
        # "once" on an existing cassette only replays; it never calls the client.
        self._replay_only = mode == "once" and exists

    def _check_overwritable(self) -> None:
        # mode="all" rewrites the cassette, but never a file that is not one of ours.
        for number, value in iter_jsonl(self.path, CASSETTE, tolerate_torn_tail=True):
            check_header(self.path, CASSETTE, number, value)
            return
        raise CASSETTE.error(self.path, 1, "is empty, not a cassette: refusing to overwrite it")

    @property
    def recording(self) -> bool:
        """False when this recorder only replays (mode ``"once"`` on an existing cassette)."""
        return not self._replay_only

    @property
    def capabilities(self) -> Any:
        """The recorded client's capabilities (a typed answer is asked for the same way)."""
        return getattr(self.client, "capabilities", None)

    def secret_values(self) -> tuple[Any, ...]:
        """The client's key values, so the runtime's secret lint knows them too."""
        values = getattr(self.client, "secret_values", None)
        return tuple(values()) if callable(values) else ()

    def observe_secrets(self, observer: Any) -> Any:
        """Forwarded to the client: a key it resolves later (env, callable) still reaches
        the runtime's redactor before its request is sent (DESIGN §9)."""
        return _observe(self.client, observer)

    async def resolve_secrets(self) -> None:
        """Forwarded to the client (see :meth:`LLMClient <arknb.providers.base.LLMClient>`)."""
        await _resolve(self.client)

    def redact_with(self, lint: Any) -> None:
        """Redact what this recorder writes with ``lint`` too: the runtime calls this with
        its own :class:`~arknb.state.SecretLint` (held weakly), so a cassette never holds
        a secret the runtime knows (DESIGN §9)."""
        self._lints.add(lint)
        share = getattr(self.client, "redact_with", None)
        if callable(share):
            share(lint)
    def check_input(self, messages: Any) -> None:
        """Forwarded to the client: a part it cannot take is refused before a run starts."""
        check = getattr(self.client, "check_input", None)
        if callable(check):
            check(messages)

    def _redact(self, line: str) -> str:
        from ..state import SecretLint

        own = SecretLint(s.get_secret_value() if hasattr(s, "get_secret_value") else str(s)
                         for s in self.secret_values())
        return export_lint(own, *list(self._lints))(line)

    async def stream(self, request: ModelRequest, *,
                     cancel: CancellationToken | None = None) -> AsyncIterator[StreamingEvent]:
        """Replay the matching record, or forward to ``client`` and record the call."""
        self._gate.enter()
        try:
            canonical, digest, record = self._tape.lookup(request)
            if record is not None and self.mode != "all":
                async with aclosing(_play(self._tape, record, self.timing, cancel)) as events:
                    async for event in events:
                        yield event
                return
            if self._replay_only:
                raise self._tape.mismatch(canonical)
            # aclosing: when the run stops reading, the record is written before this returns.
            async with aclosing(self._record(request, canonical, digest, cancel)) as events:
                async for event in events:
                    yield event
        finally:
            self._gate.busy = False

    async def _record(self, request: ModelRequest, canonical: str, digest: str,
                      cancel: CancellationToken | None) -> AsyncIterator[StreamingEvent]:
        events: list[tuple[float, StreamingEvent]] = []
        error: ArkError | None = None
        keep, complete = True, False
        started = time.perf_counter()
        upstream = self.client.stream(request, cancel=cancel)
        try:
            async for event in upstream:
                events.append((time.perf_counter() - started, event))
                yield event
            complete = True
        except ArkError as exc:
            if exc.layer is ErrorLayer.CANCELLED:
                keep = False  # a Stop is not what the model answered
            else:
                error = exc
            raise
        except GeneratorExit:
            raise  # the run stopped reading (e.g. a hook aborted): keep what it saw, marked incomplete
        except BaseException:
            keep = False  # task cancelled, or not an arknb failure: nothing trustworthy to replay
            raise
        finally:
            aclose = getattr(upstream, "aclose", None)
            if aclose is not None:
                await aclose()
            # A reader that stops right after model_complete (generate) got the whole call.
            complete = complete or bool(events and events[-1][1].type == "model_complete")
            if keep and not (cancel is not None and cancel.cancelled):
                self._write(request, canonical, digest, events, error, complete)

    def _write(self, request: ModelRequest, canonical: str, digest: str, events: list, error: ArkError | None,
               complete: bool) -> None:
        tape = self._tape
        self._prepare_file()
        call = len(tape.records) + 1
        append_record(self.path, call=call, parent=tape.cursor, request_json=canonical, request_hash=digest,
                      events=events, error=error, complete=complete, redact=self._redact)
        record = CassetteRecord(call=call, parent=tape.cursor, line=tape.lines + 1, request_hash=digest,
                                request=json.loads(canonical), events=tuple(e for _, e in events),
                                offsets=tuple(o for o, _ in events), error=error.info() if error else None,
                                complete=complete)
        tape.add(record)
        tape.advance(record)
        self.recorded += 1

    def _prepare_file(self) -> None:
        if self._fresh:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.mode == "all":
                write_lines_atomically(self.path, [header_line()])
            else:
                try:
                    with open(self.path, "x", encoding="utf-8", newline="\n") as out:
                        out.write(header_line() + "\n")
                except FileExistsError:
                    raise ArkError(ErrorLayer.STORAGE, ErrorCode.CASSETTE_CORRUPT,
                                   f"cassette {self.path} was created by someone else after this Recorder was "
                                   f"made; it was left as it is (make a new Recorder to use it)") from None
            self._fresh = False
            self._tape.lines = 1
        elif self._torn:
            # The partial last line of a recorder that died mid-write: cut it before appending.
            with open(self.path, "rb+") as f:
                data = f.read()
                f.truncate(data.rfind(b"\n") + 1)
            self._torn = self._tape.torn = False
            self._tape.lines -= 1  # the cut line is gone: the next record takes its number

    async def generate(self, request: ModelRequest, *, cancel: CancellationToken | None = None) -> ModelResponse:
        """The complete response (recorded like a streamed call)."""
        return await _complete(self.stream(request, cancel=cancel))

    def __repr__(self) -> str:
        return (f"Recorder({type(self.client).__name__}, {str(self.path)!r}, mode={self.mode!r}, "
                f"records={len(self._tape.records)}, recording={self.recording})")


class ForkedModel:
    """What :func:`fork` returns: the cassette for the first ``at_call`` calls, then ``then``."""

    def __init__(self, path: Path, at_call: int, then: Any, *, match: bool, timing: str) -> None:
        self.path = path
        self.at_call = at_call
        self.then = then
        self.match = match
        self.timing = timing
        _header, records, torn, lines = _load(path)
        self._tape = _Tape(path, records, lines, torn)
        self._gate = _OneAtATime("fork()")
        self.replayed = 0
        self.forwarded = 0

    def secret_values(self) -> tuple[Any, ...]:
        """The live model's key values (for the runtime's secret lint)."""
        values = getattr(self.then, "secret_values", None)
        return tuple(values()) if callable(values) else ()

    def observe_secrets(self, observer: Any) -> Any:
        """Forwarded to the live model (see :meth:`Recorder.observe_secrets`)."""
        return _observe(self.then, observer)

    def redact_with(self, lint: Any) -> None:
        """Forwarded to the live model (see :meth:`Recorder.redact_with`)."""
        share = getattr(self.then, "redact_with", None)
        if callable(share):
            share(lint)

    async def resolve_secrets(self) -> None:
        """Forwarded to the live model (see :meth:`Recorder.resolve_secrets`)."""
        await _resolve(self.then)

    async def stream(self, request: ModelRequest, *,
                     cancel: CancellationToken | None = None) -> AsyncIterator[StreamingEvent]:
        """Replay while fewer than ``at_call`` calls were made, then forward to ``then``."""
        self._gate.enter()
        try:
            tape = self._tape
            if tape.calls < self.at_call:
                canonical, _digest, record = tape.lookup(request)
                if not self.match:
                    following = tape.children.get(tape.cursor, ())
                    record = following[0] if following else None
                if record is None:
                    raise tape.mismatch(canonical)
                self.replayed += 1
                async with aclosing(_play(tape, record, self.timing, cancel)) as events:
                    async for event in events:
                        yield event
                return
            tape.calls += 1
            self.forwarded += 1
            upstream = self.then.stream(request, cancel=cancel)
            try:
                async for event in upstream:
                    yield event
            finally:
                aclose = getattr(upstream, "aclose", None)
                if aclose is not None:
                    await aclose()
        finally:
            self._gate.busy = False

    async def generate(self, request: ModelRequest, *, cancel: CancellationToken | None = None) -> ModelResponse:
        """The complete response of the next call."""
        return await _complete(self.stream(request, cancel=cancel))

    def __repr__(self) -> str:
        return (f"fork({str(self.path)!r}, at_call={self.at_call}, then={type(self.then).__name__}, "
                f"replayed={self.replayed}, forwarded={self.forwarded})")


def fork(path: str | os.PathLike[str], at_call: int, then: Any, *, match: bool = True,
         timing: Timing = "instant") -> ForkedModel:
    """Replay the first ``at_call`` model calls from the cassette, then send the rest to ``then``.

    A/B a hook or prompt change on recorded traffic: the conversation up to the
    change costs nothing, and only what follows reaches the live (or scripted) model.

    Args:
        path: the cassette.
        at_call: how many calls to replay (0 sends everything to ``then``).
        then: the :class:`~arknb.providers.LLMClient` for the calls after that.
        match: check that each replayed request matches its record (default); False
            replays the first ``at_call`` records of the recorded conversation whatever
            the requests are.
        timing: ``"instant"`` or ``"recorded"`` for the replayed calls.

    Example:
        >>> model = ev.fork("cassettes/weather.jsonl", at_call=1, then=ark.ScriptedModel(["It is sunny."]))  # doctest: +SKIP
    """
    if isinstance(at_call, bool) or not isinstance(at_call, int) or at_call < 0:
        raise invalid_argument(f"at_call must be an int >= 0 (how many calls to replay), got {at_call!r}")
    if not callable(getattr(then, "stream", None)):
        raise invalid_argument(f"then must be an LLMClient (with a stream() method), got {type(then).__name__}")
    model = ForkedModel(as_path(path, "fork path"), at_call, then, match=bool(match), timing=_check_timing(timing))
    if at_call > len(model._tape.records):
        raise invalid_argument(f"at_call={at_call}, but cassette {model.path} holds only "
                               f"{len(model._tape.records)} record(s)")
    return model
