"""TraceCompareWidget: two event traces side by side, aligned by turn, the first divergence marked.

Made by ``TimelineWidget.compare(expected, actual)``. The divergence is the one
:func:`arknb.eval.first_divergence` finds (ids, sequence numbers and timestamps are
ignored), computed here in the kernel; the front end (``js/src/compare.js``) only
draws it. Both traces are static, so they travel once, as synced traits.
"""

from __future__ import annotations

from typing import Any, Iterable

import anywidget
import traitlets

from ..domain import invalid_argument
from ._base import bundle, check_events
from ._payload import jsonable

__all__ = ["TraceCompareWidget"]


def _event_dict(event: Any) -> dict[str, Any]:
    if isinstance(event, dict):
        return jsonable(event)
    to_dict = getattr(event, "to_dict", None)
    return jsonable(to_dict() if callable(to_dict) else event)


class TraceCompareWidget(anywidget.AnyWidget):
    """Two traces in two columns, grouped by model turn, with the first divergence marked.

    Args:
        expected: the reference run's events (``AgentEvent`` or dicts, e.g. from
            ``ev.trace.from_jsonl``).
        actual: the run to compare with it.
        labels: the two columns' headings.

    Example:
        >>> ark.TimelineWidget.compare(recorded, replayed)   # doctest: +SKIP
    """

    _esm = bundle("compare.js")
    _css = bundle("compare.css")

    expected = traitlets.List().tag(sync=True)
    actual = traitlets.List().tag(sync=True)
    expected_turns = traitlets.List().tag(sync=True)
    actual_turns = traitlets.List().tag(sync=True)
    divergence = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    labels = traitlets.List(["expected", "actual"]).tag(sync=True)
    ignored_keys = traitlets.List().tag(sync=True)
    """Payload keys the comparison ignores (ids, times); the payload diff leaves them out too."""

    def __init__(self, expected: Iterable[Any], actual: Iterable[Any], *,
                 labels: tuple[str, str] = ("expected", "actual"), **kwargs: Any) -> None:
        # arknb.eval is loaded only here: importing the widgets must not import it.
        from ..eval.divergence import IGNORED_KEYS, first_divergence, turn_numbers

        if (not isinstance(labels, (list, tuple)) or len(labels) != 2
                or not all(isinstance(x, str) and x for x in labels)):
            raise invalid_argument(f"labels must be two non-empty strings, got {labels!r}")
        left = [_event_dict(e) for e in check_events(expected, "TimelineWidget.compare expected")]
        right = [_event_dict(e) for e in check_events(actual, "TimelineWidget.compare actual")]
        found = first_divergence(left, right)
        self._divergence = found
        super().__init__(expected=left, actual=right, expected_turns=turn_numbers(left),
                         actual_turns=turn_numbers(right), labels=list(labels),
                         ignored_keys=sorted(IGNORED_KEYS),
                         divergence=None if found is None else {
                             "index": found.index, "turn": found.turn, "event_type": found.event_type,
                             "path": found.path, "expected": jsonable(found.expected),
                             "actual": jsonable(found.actual), "text": str(found)},
                         **kwargs)

    @property
    def first_divergence(self) -> Any:
        """The :class:`arknb.eval.Divergence` shown, or None when the traces match."""
        return self._divergence

    def __repr__(self) -> str:
        what = str(self._divergence) if self._divergence is not None else "the traces match"
        return (f"TraceCompareWidget({len(self.expected)} vs {len(self.actual)} events: {what})")
