"""Images and documents in the chat: what a user entry shows, and what the send box sends.

A user message's media become the entry's ``parts`` (the front end draws them, as does
the static copy):

* ``{"kind": "image", "src": "data:image/png;base64,…", "mime_type", "name", "bytes"}``:
  a thumbnail. Only inline raster data (PNG, JPEG, GIF, WebP) is ever drawn; the page
  never fetches a URL, and an SVG (markup that can carry script) is never drawn at all.
* ``{"kind": "image", "blocked": "why", "name", "mime_type"}``: an image that is not shown
  (a remote URL, an SVG, another type), with the reason.
* ``{"kind": "document", "name", "mime_type", "bytes"}``: a document, as a named chip;
  ``"as_text": True, "chars": n`` for a document sent as its text
  (``ContentPart.from_document_text``), whose text stays out of the bubble.

The send box's attachments (``{"name", "mime_type", "data"}``, base64) become parts:
images as image parts, text files as their text (a named text part), anything else as a
document part (a profile without file input refuses it, naming the way forward). Each is
checked against the chat's size cap first (``attachment_too_large`` names both sizes).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Iterable, Mapping

from ..domain import ArkError, ContentKind, ContentPart, ErrorCode, ErrorLayer, invalid_argument
from ._payload import as_dict
from ._static_html import esc

__all__ = ["DEFAULT_MAX_ATTACHMENT_BYTES", "attachment_parts", "parts_html", "size_text", "static_parts",
           "user_fields"]

DEFAULT_MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024
"""The send box's size cap per file. A message travels the kernel's websocket as base64
(4/3 of the size), and Jupyter's websocket takes at most 10 MiB a message by default."""

_SHOWN_IMAGE = re.compile(r"^image/(png|jpeg|gif|webp)$")
_BASE64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")
_STATIC_IMAGE_CHARS = 400_000
"""The largest image (base64 characters) the notebook's companion copy embeds; to_html() embeds any."""
_INLINE = "display:inline-block;margin:2px 6px 2px 0;vertical-align:top"
_TEXT_TYPES = re.compile(r"^(text/.*|application/(json|x-yaml|yaml|xml|toml))$")


def size_text(count: int) -> str:
    """``count`` bytes for people: ``"512 B"``, ``"12.3 KB"``, ``"30.0 MB"``."""
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.1f} MB"


def _decoded_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=") if data else 0


def _image(part: Mapping[str, Any]) -> dict[str, Any]:
    mime, name = str(part.get("mime_type") or ""), part.get("name")
    data, url = part.get("data"), part.get("url")
    if isinstance(url, str) and url.startswith("data:"):
        head, _, payload = url.partition(",")
        mime = head[5:].split(";")[0] or mime
        data = payload if head.endswith(";base64") else None
        if data is None:
            return {"kind": "image", "name": name, "mime_type": mime, "blocked": "an image given as a non-base64 data URL"}
    elif isinstance(url, str):
        return {"kind": "image", "name": name, "mime_type": mime or None,
                "blocked": f"remote image not loaded: {url[:200]}"}
    if not _SHOWN_IMAGE.match(mime.lower()):
        why = ("an SVG image is never drawn in the chat (it is markup that can carry script)"
               if "svg" in mime.lower() else f"a {mime or 'untyped'} image is not drawn (PNG, JPEG, GIF, WebP are)")
        return {"kind": "image", "name": name, "mime_type": mime, "blocked": why}
    if not isinstance(data, str) or not _BASE64.match(data):
        return {"kind": "image", "name": name, "mime_type": mime, "blocked": "the image data is not base64"}
    return {"kind": "image", "name": name, "mime_type": mime.lower(), "bytes": _decoded_size(data),
            "src": f"data:{mime.lower()};base64,{data}"}


def user_fields(message: Any) -> dict[str, Any]:
    """``text`` (the words, without documents sent as text) and, when there are any,
    ``parts`` (images and documents) of a user message or its dict."""
    if isinstance(message, str):
        return {"text": message}
    contents = as_dict(message).get("contents") or ()
    words: list[str] = []
    parts: list[dict[str, Any]] = []
    for raw in contents:
        part = raw if isinstance(raw, Mapping) else as_dict(raw)
        kind = str(part.get("kind") or ContentKind.TEXT.value)
        if kind == ContentKind.TEXT.value:
            text = str(part.get("text") or "")
            if part.get("name"):
                parts.append({"kind": "document", "name": str(part["name"]), "as_text": True, "chars": len(text)})
            else:
                words.append(text)
        elif kind == ContentKind.IMAGE.value:
            parts.append(_image(part))
        else:
            data = part.get("data")
            parts.append({"kind": "document", "name": str(part.get("name") or "document"),
                          "mime_type": part.get("mime_type"),
                          "bytes": _decoded_size(data) if isinstance(data, str) else None})
    fields: dict[str, Any] = {"text": "".join(words)}
    if parts:
        fields["parts"] = parts
    return fields


def _chip(part: Mapping[str, Any]) -> str:
    if part.get("as_text"):
        detail = f"text, {int(part.get('chars') or 0):,} characters"
    else:
        detail = " · ".join(x for x in (str(part.get("mime_type") or ""),
                                         size_text(part["bytes"]) if part.get("bytes") is not None else "") if x)
    return (f'<span class="arknb-s-chip" style="display:inline-block;border:1px solid #d0d7de;border-radius:10px;'
            f'padding:0 8px;margin:2px 4px 2px 0"><b>{esc(part.get("name") or "document")}</b>'
            f'{f" <span class=arknb-s-muted>({esc(detail)})</span>" if detail else ""}</span>')


def parts_html(parts: Iterable[Mapping[str, Any]], *, embed_limit: int | None) -> str:
    """The parts of a user entry as static HTML: ``<img>`` thumbnails of inline raster data
    only (the ``src`` is rebuilt and checked here, never taken on trust), chips otherwise."""
    out = []
    for part in parts:
        if part.get("kind") == "image":
            src = str(part.get("src") or "")
            shown = _image({"url": src, "name": part.get("name")}) if src else None
            if shown is not None and "src" in shown:
                if embed_limit is not None and len(src) > embed_limit:
                    out.append(f'<span class="arknb-img-blocked" style="{_INLINE}">[image {esc(part.get("name") or "")} '
                               f'({esc(size_text(shown["bytes"]))}): too large for this copy; shown in the live '
                               "chat and in to_html()]</span>")
                    continue
                out.append(f'<img class="arknb-s-thumb" src="{esc(shown["src"])}" alt="{esc(part.get("name") or "image")}"'
                           ' style="height:96px;width:auto;max-width:160px;object-fit:contain;border-radius:4px;margin:2px 4px 2px 0;'
                           'vertical-align:top">')
            else:
                why = part.get("blocked") or "not an inline image"
                out.append(f'<span class="arknb-img-blocked" style="{_INLINE}">[image'
                           f'{": " + esc(part["name"]) if part.get("name") else ""} — {esc(why)}]</span>')
        else:
            out.append(_chip(part))
    return f'<div class="arknb-s-parts">{"".join(out)}</div>' if out else ""


def static_parts(entry: Mapping[str, Any], *, companion: bool) -> str:
    """A user entry's parts for the static copies (the companion embeds smaller images only)."""
    parts = entry.get("parts")
    return parts_html(parts, embed_limit=_STATIC_IMAGE_CHARS if companion else None) if parts else ""


def attachment_parts(attachments: Any, *, cap: int) -> list[ContentPart]:
    """Content parts for the send box's attachments; ``ArkError`` for one over ``cap`` bytes
    (naming its size and the cap) or malformed, before anything is sent."""
    if attachments is None:
        return []
    if not isinstance(attachments, list):
        raise invalid_argument("attachments must be a list")
    parts = []
    for item in attachments:
        if not isinstance(item, Mapping):
            raise invalid_argument("each attachment must be an object with name, mime_type and data")
        name = str(item.get("name") or "attachment")
        mime = str(item.get("mime_type") or "application/octet-stream").lower()
        data = item.get("data")
        if not isinstance(data, str) or not _BASE64.match(data):
            raise invalid_argument(f"attachment {name!r}: data must be base64")
        size = _decoded_size(data)
        if size > cap:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.ATTACHMENT_TOO_LARGE,
                           f"{name} is {size_text(size)}, over this chat's {size_text(cap)} cap per file; "
                           "nothing was sent (make it smaller, or raise ChatWidget(max_attachment_bytes=...))")
        if mime.startswith("image/"):
            parts.append(ContentPart(kind=ContentKind.IMAGE, data=data, mime_type=mime, name=name))
        elif _TEXT_TYPES.match(mime) or name.lower().endswith((".md", ".markdown", ".txt")):
            try:
                text = base64.b64decode(data, validate=True).decode("utf-8-sig")
            except (binascii.Error, UnicodeDecodeError):
                parts.append(ContentPart.document(data=data, mime_type=mime, name=name))
            else:
                parts.append(ContentPart.text_document(name, text))
        else:
            parts.append(ContentPart.document(data=data, mime_type=mime, name=name))
    return parts
