"""The suite's progress bar: an ipywidgets bar in a notebook, a text bar in a terminal.

Written here rather than taken from ``tqdm``: DESIGN §11 keeps ``arknb.eval`` on the
core's dependencies, and ipywidgets (which the core already needs) is all a notebook
bar takes. Outside a notebook the bar is drawn only when stderr is a terminal, so CI
logs and redirected output are not filled with carriage returns.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

__all__ = ["Progress", "make_progress"]


class Progress:
    """Counts finished runs by status; subclasses draw them."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.counts = {"passed": 0, "failed": 0, "errored": 0}

    def label(self) -> str:
        c = self.counts
        return f"{self.done}/{self.total} · {c['passed']} passed · {c['failed']} failed · {c['errored']} errored"

    def advance(self, status: str) -> None:
        self.done += 1
        self.counts[status] = self.counts.get(status, 0) + 1
        self.draw()

    def draw(self) -> None:
        """Show the current state (nothing by default)."""

    def close(self) -> None:
        """The suite finished (or was interrupted)."""


class _WidgetProgress(Progress):
    def __init__(self, total: int) -> None:
        super().__init__(total)
        import ipywidgets
        from IPython.display import display

        self.bar = ipywidgets.IntProgress(value=0, min=0, max=max(total, 1), bar_style="info",
                                          layout=ipywidgets.Layout(width="260px"))
        self.text = ipywidgets.Label(value=self.label())
        self.box = ipywidgets.HBox([self.bar, self.text])
        display(self.box)

    def draw(self) -> None:
        self.bar.value = self.done
        self.text.value = self.label()
        if self.counts["errored"] or self.counts["failed"]:
            self.bar.bar_style = "warning" if not self.counts["errored"] else "danger"

    def close(self) -> None:
        if self.done == self.total and not (self.counts["failed"] or self.counts["errored"]):
            self.bar.bar_style = "success"


class _TextProgress(Progress):
    WIDTH = 24

    def __init__(self, total: int, stream: TextIO) -> None:
        super().__init__(total)
        self.stream = stream
        self.draw()

    def draw(self) -> None:
        filled = round(self.WIDTH * self.done / self.total) if self.total else self.WIDTH
        self.stream.write(f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.label()}")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def make_progress(enabled: Any, total: int) -> Progress:
    """The right bar for where we run (or a silent counter when ``enabled`` is false)."""
    if not enabled:
        return Progress(total)
    if _in_notebook():
        try:
            return _WidgetProgress(total)
        except Exception:  # no widget support in this front end: fall back to no bar
            return Progress(total)
    stream = sys.stderr
    if getattr(stream, "isatty", lambda: False)():
        return _TextProgress(total, stream)
    return Progress(total)
