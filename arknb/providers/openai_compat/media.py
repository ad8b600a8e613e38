"""Image and document parts on the wire, and the refusal of parts a profile cannot carry.

A user message's parts become Chat Completions content parts: text as ``text``, an
image as ``image_url`` (its URL, or a ``data:`` URL of its bytes), a document as an
OpenAI ``file`` part (``file_data``, a ``data:`` URL, with its ``filename``). A part the
profile cannot carry is refused with ``unsupported_content`` naming the profiles that
accept it and the way to send a document's text instead; :func:`check_message` does it
before anything is sent (the runtime asks before it starts a run, so a refused message
never reaches the session's history).
"""

from __future__ import annotations

import mimetypes
from typing import Any

from ...domain import AgentMessage, ArkError, ContentKind, ContentPart, ErrorCode, ErrorLayer, Role
from .profiles import ProviderProfile

__all__ = ["check_message", "user_content"]

# Who accepts what, for the refusal's way forward.
_ACCEPTS = {
    ContentKind.IMAGE: "profiles.openai(), profiles.zhipu() (a vision model), profiles.local(images=True) "
                       "(a vision model on your server)",
    ContentKind.DOCUMENT: "profiles.openai(), profiles.local(files=True) (a server that takes OpenAI file parts)",
}
_TEXT_INSTEAD = ("; to send a document's text instead, extracted here: ark.ContentPart.from_document_text(path) "
                 "(PDF, Markdown, text)")


def _refused(profile: ProviderProfile, part: ContentPart, why: str) -> ArkError:
    label = f" {part.name!r}" if part.name else ""
    forward = _ACCEPTS[part.kind] + (_TEXT_INSTEAD if part.kind is ContentKind.DOCUMENT else "")
    return ArkError(ErrorLayer.CONFIG, ErrorCode.UNSUPPORTED_CONTENT,
                    f"the {part.kind.value} part{label} cannot be sent: {why}. Profiles that accept "
                    f"{part.kind.value} parts: {forward}. Nothing was sent")


def _check_part(part: ContentPart, profile: ProviderProfile) -> None:
    caps = profile.capabilities
    if part.kind is ContentKind.IMAGE and not caps.images:
        raise _refused(profile, part, f"profile {profile.provider_id!r} does not accept image input")
    if part.kind is ContentKind.DOCUMENT:
        if not caps.files:
            raise _refused(profile, part, f"profile {profile.provider_id!r} does not accept document (file) input")
        if part.data is None:
            raise _refused(profile, part, "a file part carries the document's bytes, not a URL: give "
                                          "ContentPart.document(data=<base64>, mime_type=..., name=...)")


def check_message(message: AgentMessage, profile: ProviderProfile) -> None:
    """Raise ``ArkError(unsupported_content)`` for a part of ``message`` the profile cannot carry."""
    if message.role is not Role.USER:
        return
    for part in message.contents:
        if part.kind is not ContentKind.TEXT:
            _check_part(part, profile)


def _data_url(part: ContentPart) -> str:
    return f"data:{part.mime_type};base64,{part.data}"


def _file(part: ContentPart) -> dict[str, Any]:
    name = part.name or "document" + (mimetypes.guess_extension(part.mime_type or "") or "")
    return {"type": "file", "file": {"filename": name, "file_data": _data_url(part)}}


def user_content(message: AgentMessage, profile: ProviderProfile) -> str | list[dict[str, Any]]:
    """The ``content`` of a user message: its text, or a list of parts when it carries media."""
    parts = message.contents
    if all(p.kind is ContentKind.TEXT for p in parts):
        return message.text
    out: list[dict[str, Any]] = []
    for part in parts:
        if part.kind is ContentKind.TEXT:
            out.append({"type": "text", "text": part.text})
            continue
        _check_part(part, profile)
        if part.kind is ContentKind.IMAGE:
            out.append({"type": "image_url", "image_url": {"url": part.url if part.url is not None
                                                           else _data_url(part)}})
        else:
            out.append(_file(part))
    return out
