"""Static HTML beside a live widget: what a saved notebook shows without a kernel.

A widget's output is a reference to a model that lives in the kernel; a notebook
saved and shown on GitHub, in nbviewer or reopened without its kernel has no model,
so the view cannot render (JupyterLab says "model not found"). Each arknb widget
therefore displays a *companion* output next to its view: plain ``text/html``, a
static rendering of the widget's current state, kept current with
``IPython.display.update_display`` (debounced: at most about once a second, and at
once when the widget closes). Updating the widget's own output instead would make
JupyterLab rebuild the live view on every update.

While a live view is on the page it hides its companion (``js/src/lib/static_twin.js``
adds a style rule for this widget's ``static_id``); without a kernel, nothing hides
it, and a rule inside the companion hides JupyterLab's "model not found" line before
it. The HTML is built from escaped text only (``esc``): model output never becomes
markup here, as in the live view.

Used by TimelineWidget and ChatWidget::

    self._twin = StaticTwin(self, self.to_html)   # in __init__
    def _ipython_display_(self): self._twin.display()
    ...self._twin.changed()                        # after a structural change
"""

from __future__ import annotations

import html
import logging
import sys
import time
import uuid
from typing import Any, Callable

from ._coalescer import _cancel_handle, _loop_call_later

__all__ = ["STATIC_ATTR", "StaticTwin", "esc", "new_static_id", "static_block"]

STATIC_ATTR = "data-arknb-static"
"""Attribute naming the widget a static block belongs to (its ``static_id``)."""

_log = logging.getLogger("arknb.widgets")

CallLater = Callable[[float, Callable[[], None]], Any]


def esc(value: Any) -> str:
    """``value`` as HTML text (``&``, ``<``, ``>`` and both quotes escaped)."""
    return html.escape("" if value is None else str(value), quote=True)


def new_static_id() -> str:
    """A fresh id tying a widget's view to its static companion (hex, CSS-safe)."""
    return uuid.uuid4().hex


def static_block(static_id: str, body: str, *, css: str = "") -> str:
    """The companion's HTML: ``body`` in a root tagged with ``static_id``, preceded by
    the rules that hide JupyterLab's "model not found" line of the view before it
    (and ``css``, rules scoped by the caller). GitHub strips ``<style>``; the body
    must read well without it."""
    sid = "".join(c for c in static_id if c.isalnum())
    sel = f'[{STATIC_ATTR}="{sid}"]'
    # The view's output before this one, while it shows only text (loading or "model
    # not found": no element children), is hidden; a live view has elements.
    hide_error = (f".jp-OutputArea-child:has(+ .jp-OutputArea-child {sel}) "
                  f"> .jp-OutputArea-output.jupyter-widgets:not(:has(*)) {{ display: none; }}")
    return f"<style>{hide_error}{css}</style><div class=\"arknb-static\" {STATIC_ATTR}=\"{sid}\">{body}</div>"


def _in_colab() -> bool:
    # Colab renders each output in its own frame: the view could not hide its companion.
    return "google.colab" in sys.modules


class StaticTwin:
    """Keeps a ``text/html`` companion output next to a widget's view, current.

    Args:
        widget: the anywidget (its ``static_id`` trait names the companion).
        render: returns the companion's HTML (see :func:`static_block`).
        delay: seconds of quiet after a change before the companion is refreshed.
        max_wait: most seconds a change waits while changes keep coming.
        enabled: False shows the view alone (no companion).
        clock, call_later: injectable time source and timer (tests); without a
            running loop, a change refreshes at once.
    """

    def __init__(self, widget: Any, render: Callable[[], str], *, delay: float = 1.0, max_wait: float = 5.0,
                 enabled: bool = True, clock: Callable[[], float] | None = None,
                 call_later: CallLater | None = None) -> None:
        self._widget = widget
        self._render = render
        self.delay = delay
        self.max_wait = max_wait
        self.enabled = enabled and not _in_colab()
        self._clock = clock or time.monotonic
        self._call_later = call_later or _loop_call_later
        self._timer: Any = None
        self._first_change: float | None = None
        self.display_id: str | None = None
        """Set once the companion was displayed (then changes refresh it)."""
        self.refreshes = 0
        """How many times the companion was re-rendered (tests, benchmarks)."""

    def bundle(self) -> dict[str, Any]:
        """The companion's mimebundle."""
        return {"text/html": self._render(), "text/plain": f"{type(self._widget).__name__} (static summary)"}

    def display(self) -> None:
        """Show the widget's view, then its companion (what ``_ipython_display_`` does)."""
        from IPython.display import display

        data, metadata = self._widget._repr_mimebundle_()  # anywidget: (data, metadata)
        # No "<...ChatWidget object at 0x…>" line where the view cannot render (nbconvert,
        # GitHub): the companion below is the readable copy, with its own text/plain.
        data = {k: v for k, v in data.items() if k != "text/plain"} if len(data) > 1 else data
        display(data, metadata=metadata, raw=True)
        if not self.enabled:
            return
        if self.display_id is None:
            self.display_id = f"arknb-{self._widget.static_id}"
        display(self.bundle(), raw=True, display_id=self.display_id)

    def changed(self, *, settled: bool = False) -> None:
        """The widget's state changed: refresh the companion soon (debounced).

        ``settled=True`` (a run ended) refreshes on the loop's next turn instead: then
        the update still belongs to the cell that ran the run, which is what a headless
        executor (nbclient, papermill) applies to the saved output.
        """
        if self.display_id is None:
            return  # never displayed: nothing to keep current (and no cost)
        now = self._clock()
        if self._first_change is None:
            self._first_change = now
        wait = 0.0 if settled else min(self.delay, max(0.0, self._first_change + self.max_wait - now))
        self._cancel()
        self._timer = self._call_later(wait, self.refresh)
        if self._timer is None:
            self.refresh()

    def refresh(self) -> None:
        """Re-render the companion now (no-op until it was displayed)."""
        self._cancel()
        self._first_change = None
        if self.display_id is None:
            return
        try:
            from IPython.display import update_display

            update_display(self.bundle(), display_id=self.display_id, raw=True)
            self.refreshes += 1
        except Exception:  # a render bug must not break the widget or the run
            _log.debug("static companion refresh failed", exc_info=True)

    def close(self) -> None:
        """Final refresh (the companion then shows what the closed view showed)."""
        if self.display_id is not None:
            self.refresh()
        self._cancel()

    def _cancel(self) -> None:
        _cancel_handle(self._timer)
        self._timer = None
