"""TimelineWidget: every event of a runtime (or a recorded trace) as rows and spans."""

from __future__ import annotations

import json
import os
from typing import Any, Callable

import anywidget
import traitlets

from ._base import STATIC, check_events, detach
from ._coalescer import DEFAULT_INTERVAL, Coalescer
from ._payload import jsonable
from ._protocol import Action, Msg
from ._timeline_model import rows as _rows
from ._timeline_model import spans as _spans

__all__ = ["TimelineWidget"]

_BATCH = 2000
"""Most events per ``events`` message when a view catches up."""


class TimelineWidget(anywidget.AnyWidget):
    """A trace view: one row per event, model and tool calls as waterfall spans,
    filters by type and run, text search, a payload detail pane with the
    before/after diff of ``hook.decision``, and JSONL export.

    Live on a runtime, events are batched like the chat's deltas (about one message
    per 33 ms, at once on structural events). The event log is kept in the kernel and
    sent as offset-stamped batches; a new view says ``hello`` and gets what it lacks.

    Args:
        source: an ``AgentRuntime`` (live) or an iterable of ``AgentEvent``/dicts.
        interval, clock, call_later: batching (see ChatWidget).

    Example:
        >>> TimelineWidget(runtime)                 # doctest: +SKIP
        >>> TimelineWidget(events).to_jsonl("trace.jsonl")  # doctest: +SKIP
    """

    _esm = STATIC / "timeline.js"
    _css = STATIC / "timeline.css"

    read_only = traitlets.Bool(False).tag(sync=True)
    """True when built from recorded events (no live updates)."""

    def __init__(self, source: Any = None, *, interval: float = DEFAULT_INTERVAL,
                 clock: Callable[[], float] | None = None, call_later: Callable[..., Any] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._log: list[Any] = []
        self._sent = 0
        self._unsubscribe: Callable[[], None] | None = None
        self._coalescer = Coalescer(self._flush, interval=interval, clock=clock, call_later=call_later)
        bus = getattr(source, "bus", None)
        if bus is not None:
            self._unsubscribe = bus.subscribe("*", self._on_event)
        else:
            self._log.extend(check_events(source or (), "TimelineWidget"))
            self.read_only = True
        self.on_msg(self._on_msg)

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every event so far, as JSON-ready dicts."""
        return [_as_dict(e) for e in self._log]

    def rows(self) -> list[dict[str, Any]]:
        """One row per event (index, sequence, type, run_id, relative t, summary)."""
        return _rows(self.events)

    def spans(self) -> list[dict[str, Any]]:
        """Run, model-call and tool-call spans for the waterfall."""
        return _spans(self.events)

    def to_jsonl(self, path: str | os.PathLike[str]) -> int:
        """Write every event as one JSON line to ``path``; returns how many."""
        events = self.events
        with open(path, "w", encoding="utf-8") as f:
            for event in events:
                f.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
        return len(events)

    def _on_event(self, event: Any) -> None:
        self._log.append(event)  # converted to a dict only when flushed
        if event.type == "llm.chunk":
            self._coalescer.delta()
        else:
            self._coalescer.structural()

    def _flush(self) -> None:
        self._send_from(self._sent)

    def _send_from(self, start: int) -> None:
        end = len(self._log)
        start = max(0, min(start, end))
        while start < end:
            stop = min(end, start + _BATCH)
            self.send({"type": Msg.EVENTS, "start": start, "events": [_as_dict(e) for e in self._log[start:stop]]})
            start = stop
        self._sent = max(self._sent, end)

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any = None) -> None:
        if isinstance(content, dict) and content.get("type") == Action.HELLO:
            have = content.get("have")
            self._send_from(int(have) if isinstance(have, int) else 0)

    def close(self) -> None:
        """Stop listening to the runtime and close the widget."""
        detach(self)
        super().close()

    @classmethod
    def compare(cls, expected_events: Any, actual_events: Any, **options: Any) -> Any:
        """Two traces side by side, aligned by turn, with the first divergence marked
        (a :class:`~arknb.widgets.compare.TraceCompareWidget`; ``labels=`` names the columns)."""
        from .compare import TraceCompareWidget

        return TraceCompareWidget(expected_events, actual_events, **options)


def _as_dict(event: Any) -> dict[str, Any]:
    if isinstance(event, dict):
        return jsonable(event)
    to_dict = getattr(event, "to_dict", None)
    return jsonable(to_dict() if callable(to_dict) else event)
