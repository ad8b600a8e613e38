"""Static HTML copies of the widgets, for notebooks read without a kernel.

A widget output in a saved notebook is only a model id; without the kernel (or
saved widget state) nbviewer, GitHub and exports show nothing useful. So the
widgets put a ``text/html`` rendering of their current state next to the widget
view in their output, and refresh it (``update_display``) when they settle. Live
front ends prefer the widget view and never show it.

What is here is shared by both widgets:

* :func:`markdown_html`: untrusted Markdown as safe HTML, with the live view's rules
  (raw HTML is shown as text, links only http(s)/mailto/#, images only inline data);
* :func:`esc` and :func:`document` (a standalone page around a fragment);
* :class:`StaticOutput`: the output's display id, the bundle with ``text/html``, and
  a refresh that waits until the widget has been quiet for a moment.

The copy in the output is bounded (the newest :attr:`StaticOutput.LIMIT` entries,
long texts clipped), so refreshing it costs the same late in a long session as
early; ``to_html()`` on a widget gives everything.
"""

from __future__ import annotations

import asyncio
import html
import re
import time
import uuid
import weakref
from typing import Any, Callable

from markdown_it import MarkdownIt

__all__ = ["STATIC_CSS", "StaticOutput", "clip", "document", "esc", "markdown_html"]

_SAFE_HREF = re.compile(r"^(https?:|mailto:|#)", re.IGNORECASE)
_SAFE_IMG = re.compile(r"^data:image/(png|gif|jpeg|webp);", re.IGNORECASE)


def esc(value: Any) -> str:
    """``value`` as HTML text (quotes escaped too, so it is safe in attributes)."""
    return html.escape("" if value is None else str(value), quote=True)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how many were left out."""
    if limit <= 0 or len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({len(text) - limit:,} more characters in the live view and in to_html())"


def _markdown() -> MarkdownIt:
    # html=False: raw HTML in model output is text, never markup ("Never trust <script>
    # tags" keeps every word). The live view renders the same way (js/src/lib/markdown.js).
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False})
    md.enable(["table", "strikethrough"])
    md.validateLink = lambda url: bool(_SAFE_HREF.match(url.strip())) or bool(_SAFE_IMG.match(url.strip()))

    def link_open(renderer, tokens, idx, options, env):
        token = tokens[idx]
        if not _SAFE_HREF.match((token.attrGet("href") or "").strip()):
            token.attrs.pop("href", None)
        token.attrSet("target", "_blank")
        token.attrSet("rel", "noopener noreferrer nofollow")
        return md.renderer.renderToken(tokens, idx, options, env)

    def image(renderer, tokens, idx, options, env):
        token = tokens[idx]
        alt = "".join(child.content for child in token.children or ())
        if _SAFE_IMG.match(token.attrGet("src") or ""):
            return f'<img src="{esc(token.attrGet("src"))}" alt="{esc(alt)}">'
        # Offline readers and privacy: no remote image is ever fetched.
        return f'<span class="arknb-img-blocked">[image{": " + esc(alt) if alt else ""}]</span>'

    md.add_render_rule("link_open", link_open)
    md.add_render_rule("image", image)
    return md


_MD = _markdown()


def markdown_html(text: Any) -> str:
    """Safe HTML for untrusted Markdown ``text`` (see the module docstring for the rules)."""
    return _MD.render("" if text is None else str(text)).strip()


STATIC_CSS = """
.arknb-static { font-family: var(--jp-ui-font-family, system-ui, sans-serif); font-size: 13px;
  line-height: 1.45; color: var(--jp-ui-font-color1, #1f2328); background: var(--jp-layout-color1, #fff);
  border: 1px solid var(--jp-border-color2, #d0d7de); border-radius: 6px; padding: 8px 10px; max-width: 60em; }
.arknb-static .arknb-s-head { color: var(--jp-ui-font-color2, #59636e); font-size: 0.9em; margin-bottom: 6px; }
.arknb-static .arknb-s-entry { margin: 6px 0; }
.arknb-static .arknb-s-who { font-weight: 600; }
.arknb-static .arknb-s-user { background: var(--jp-layout-color2, #f3f4f6); border-radius: 8px; padding: 4px 8px; }
.arknb-static .arknb-s-plain { white-space: pre-wrap; overflow-wrap: anywhere; }
.arknb-static .arknb-s-tool, .arknb-static .arknb-s-approval { border-left: 3px solid #00838f; padding: 2px 8px;
  background: var(--jp-layout-color2, #f6f8fa); border-radius: 4px; }
.arknb-static .arknb-s-tool[data-status="error"], .arknb-static .arknb-s-tool[data-status="denied"] { border-left-color: #c62828; }
.arknb-static .arknb-s-tool[data-status="done"] { border-left-color: #2e7d32; }
.arknb-static .arknb-s-approval { border-left-color: #b26a00; }
.arknb-static .arknb-s-muted, .arknb-static .arknb-s-hook, .arknb-static .arknb-s-notice { color: var(--jp-ui-font-color2, #59636e); }
.arknb-static pre { white-space: pre-wrap; word-break: break-word; background: var(--jp-layout-color2, #f3f4f6);
  padding: 4px 6px; border-radius: 4px; margin: 4px 0; font-size: 0.92em; }
.arknb-static table { border-collapse: collapse; margin: 4px 0; }
.arknb-static td, .arknb-static th { border: 1px solid var(--jp-border-color2, #d0d7de); padding: 2px 6px; }
.arknb-static code { font-family: var(--jp-code-font-family, ui-monospace, monospace); font-size: 0.92em; }
.arknb-static .arknb-img-blocked { font-style: italic; color: var(--jp-ui-font-color2, #59636e); }
@media (prefers-color-scheme: dark) { .arknb-static.arknb-standalone { color: #e6edf3; background: #0d1117;
  border-color: #30363d; } .arknb-static.arknb-standalone pre, .arknb-static.arknb-standalone .arknb-s-user,
  .arknb-static.arknb-standalone .arknb-s-tool, .arknb-static.arknb-standalone .arknb-s-approval { background: #161b22; } }
"""
"""Styles for the static copies (read fine without them: GitHub strips ``<style>``)."""


def document(title: str, body: str) -> str:
    """A standalone HTML page (UTF-8, inline styles, no script) around ``body``."""
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{STATIC_CSS}"
            "@media (prefers-color-scheme: dark) { body { background: #010409; } }</style></head>\n"
            f"<body>{body}</body></html>\n")


_PENDING: "weakref.WeakSet[StaticOutput]" = weakref.WeakSet()
_HOOKED = False


def _flush_pending(*_args: Any) -> None:
    """IPython's post_run_cell: republish every copy still waiting, so the copy in the
    output is current when the cell's execution ends (what nbclient and exports keep)."""
    for output in list(_PENDING):
        try:
            output.refresh_now()
        except Exception:  # one widget must not break the cell for the others
            pass


def _hook_cells() -> None:
    global _HOOKED
    if _HOOKED:
        return
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return
    shell = get_ipython()
    if shell is None:
        return
    shell.events.register("post_run_cell", _flush_pending)
    _HOOKED = True


class StaticOutput:
    """The static copy inside a widget's notebook output.

    ``_ipython_display_`` calls :meth:`display`, which publishes the widget view and
    the ``text/html`` copy under one display id; :meth:`refresh_soon` republishes both
    (``update_display``) once the widget has been quiet for :attr:`QUIET` seconds, at
    least every :attr:`MAX_WAIT` seconds while it keeps changing, and at the end of the
    notebook cell running meanwhile (so an executed notebook keeps the final copy). (A live front end
    re-creates the view on such an update; the chat's front end adopts the old view's
    DOM, so the reader sees no change.) After the widget is closed the output keeps
    only the copy.

    Args:
        render: returns the current copy (an HTML fragment).
        base: returns the widget's own mimebundle ``(data, metadata)``, or None once
            it is closed.
        call_later, clock: injectable timer and monotonic clock (tests).
    """

    LIMIT = 200
    """Most entries (chat) or rows (timeline) in the copy inside the output."""
    QUIET = 1.0
    MAX_WAIT = 10.0

    def __init__(self, render: Callable[[], str], base: Callable[[], Any], *,
                 call_later: Callable[..., Any] | None = None, clock: Callable[[], float] | None = None) -> None:
        self._render = render
        self._base = base
        self._call_later = call_later
        self._clock = clock or time.monotonic
        self.display_id = f"arknb-{uuid.uuid4().hex}"
        self.displayed = False
        self.refreshes = 0
        """How many times the copy was republished (tests, benchmarks)."""
        self._timer: Any = None
        self._first_wait: float | None = None

    def bundle(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The widget's mimebundle with the ``text/html`` copy added."""
        base = self._base()
        if isinstance(base, tuple):
            data, metadata = base
        else:
            data, metadata = base or {}, {}
        data = dict(data or {})
        data.setdefault("text/plain", "arknb widget (static copy)")
        data["text/html"] = self._render()
        return data, dict(metadata or {})

    def display(self) -> None:
        """Publish the widget's output (its view plus the copy) under our display id."""
        from IPython.display import display

        data, metadata = self.bundle()
        display(data, raw=True, metadata=metadata, display_id=self.display_id)
        self.displayed = True
        _hook_cells()

    def refresh_soon(self) -> None:
        """The widget settled (a run ended, a batch waits): republish the copy shortly."""
        if not self.displayed:
            return
        now = self._clock()
        if self._first_wait is None:
            self._first_wait = now
        if self._timer is not None:
            if now - self._first_wait >= self.MAX_WAIT:
                return  # the pending timer fires soon: the copy is refreshed at least this often
            self._cancel()
        delay = min(self.QUIET, max(0.0, self._first_wait + self.MAX_WAIT - now))
        self._timer = self._later(delay, self.refresh_now)
        if self._timer is None:  # no running loop: refresh at once
            self.refresh_now()
        else:
            _PENDING.add(self)

    def refresh_now(self) -> None:
        """Republish the copy at once (a no-op until the widget was displayed)."""
        self._cancel()
        _PENDING.discard(self)
        self._first_wait = None
        if not self.displayed:
            return
        from IPython.display import update_display

        data, metadata = self.bundle()
        self.refreshes += 1
        update_display(data, raw=True, metadata=metadata, display_id=self.display_id)

    def close(self) -> None:
        """The widget closes: its outputs keep the copy only (no view to re-create)."""
        self._cancel()
        if self.displayed:
            self._base = lambda: None
            self.refresh_now()

    def _cancel(self) -> None:
        if self._timer is not None:
            try:
                self._timer.cancel()
            except Exception:  # a foreign handle
                pass
            self._timer = None

    def _later(self, delay: float, callback: Callable[[], None]) -> Any:
        if self._call_later is not None:
            return self._call_later(delay, callback)
        try:
            return asyncio.get_running_loop().call_later(delay, callback)
        except RuntimeError:
            return None
