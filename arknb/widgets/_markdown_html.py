"""Untrusted Markdown (model and tool text) as safe HTML, in Python.

The same rules as the live view (``js/src/lib/markdown.js``): raw HTML in the text is
shown as text, never parsed (so "Never trust <script> tags" keeps every word); links
only to http(s), mailto and ``#``, opened in a new tab with ``noopener``; images only
as inline data (a remote image is a request nobody asked for), else their alt text.
Used for the chat's static copies (``_chat_html``).
"""

from __future__ import annotations

import re
from typing import Any

from markdown_it import MarkdownIt

from ._static_html import esc

__all__ = ["markdown_html"]

_SAFE_HREF = re.compile(r"^(https?:|mailto:|#)", re.IGNORECASE)
_SAFE_IMG = re.compile(r"^data:image/(png|gif|jpeg|webp);", re.IGNORECASE)


def _markdown() -> MarkdownIt:
    # html=False: raw HTML is text. linkify off: a bare URL stays text, as in the live view.
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
        return f'<span class="arknb-img-blocked">[image{": " + esc(alt) if alt else ""}]</span>'

    md.add_render_rule("link_open", link_open)
    md.add_render_rule("image", image)
    return md


_MD = _markdown()


def markdown_html(text: Any) -> str:
    """Safe HTML for untrusted Markdown ``text`` (see the module docstring for the rules).

    Example:
        >>> markdown_html("**hi** <script>x</script>")
        '<p><strong>hi</strong> &lt;script&gt;x&lt;/script&gt;</p>'
    """
    return _MD.render("" if text is None else str(text)).strip()
