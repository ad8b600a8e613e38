"""Content parts: the pieces a message is made of (text, image, document)."""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, model_validator

from .errors import invalid_argument

__all__ = ["ContentKind", "ContentPart"]


class ContentKind(StrEnum):
    """What a content part holds."""

    TEXT = "text"
    IMAGE = "image"
    DOCUMENT = "document"


_TEXT = ContentKind.TEXT


class ContentPart(BaseModel):
    """One part of a message.

    Build parts with the constructors, never by hand:

    Example:
        >>> ContentPart.from_text("hello").text
        'hello'
        >>> ContentPart.image_url("https://example.org/cat.png").kind
        <ContentKind.IMAGE: 'image'>
    """

    model_config = ConfigDict(frozen=True)

    kind: ContentKind = ContentKind.TEXT
    text: str | None = None
    url: str | None = None
    data: str | None = None
    mime_type: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _check_payload(self) -> ContentPart:
        # Runs for every part of a restored history: the common text part costs one branch.
        if self.kind is _TEXT:
            if self.text is None:
                raise ValueError("a text part needs 'text'")
            if self.url is not None or self.data is not None:
                raise ValueError("a text part carries only 'text', not 'url' or 'data'")
        else:
            if (self.url is None) == (self.data is None):
                raise ValueError(f"an {self.kind.value} part needs exactly one of 'url' or 'data'")
            if self.data is not None and not self.mime_type:
                raise ValueError(f"an {self.kind.value} part given as 'data' needs 'mime_type'")
        return self

    @classmethod
    def from_text(cls, text: str) -> ContentPart:
        """A text part."""
        if not isinstance(text, str):
            raise invalid_argument(f"ContentPart.from_text: text must be a str, got {type(text).__name__}")
        return cls.model_construct(kind=ContentKind.TEXT, text=text, url=None, data=None,
                                   mime_type=None, name=None)

    @classmethod
    def image_url(cls, url: str, *, mime_type: str | None = None) -> ContentPart:
        """An image referenced by URL (``https:`` or ``data:``)."""
        return cls(kind=ContentKind.IMAGE, url=url, mime_type=mime_type)

    @classmethod
    def image_base64(cls, data: str, mime_type: str = "image/png") -> ContentPart:
        """An image given inline as base64."""
        return cls(kind=ContentKind.IMAGE, data=data, mime_type=mime_type)

    @classmethod
    def document(cls, *, url: str | None = None, data: str | None = None,
                 mime_type: str | None = None, name: str | None = None) -> ContentPart:
        """A document by URL or inline base64."""
        return cls(kind=ContentKind.DOCUMENT, url=url, data=data, mime_type=mime_type, name=name)

    @classmethod
    def from_document_text(cls, path: str | os.PathLike[str], *, name: str | None = None) -> ContentPart:
        """A document sent as its text, extracted here: for any model, file input or not.

        PDF text comes from ``pypdf`` (``pip install 'arknb[pdf]'``); Markdown and text
        files are read as they are. The part is a text part named after the file (the
        chat shows it as a chip); its text wraps the document in
        ``<document name="...">`` lines so the model can tell it from your words.
        Raises ``ArkError`` (``document_unreadable``, ``pdf_unavailable``) naming the file.
        """
        from .documents import document_text

        path = Path(path)
        return cls.text_document(name or path.name, document_text(path))

    @classmethod
    def text_document(cls, name: str, text: str) -> ContentPart:
        """A document's text you already have, as ``from_document_text`` sends it."""
        return cls(kind=ContentKind.TEXT, text=f'\n<document name="{name}">\n{text}\n</document>\n', name=name)

    @property
    def is_document_text(self) -> bool:
        """True for a named text part: a document sent as its text (``from_document_text``)."""
        return self.kind is ContentKind.TEXT and self.name is not None

    @property
    def is_text(self) -> bool:
        """True for a text part."""
        return self.kind is ContentKind.TEXT
