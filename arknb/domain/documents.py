"""A document's text, extracted locally: what ``ContentPart.from_document_text`` sends.

For a model whose profile takes no file input, a PDF, Markdown or text file goes in as
its text. Markdown and plain text are read as they are (UTF-8); a PDF's text comes from
``pypdf`` (the optional extra ``arknb[pdf]``), page by page. Nothing leaves the machine.
"""

from __future__ import annotations

from pathlib import Path

from .errors import ArkError, ErrorCode, ErrorLayer

__all__ = ["TEXT_SUFFIXES", "document_text"]

TEXT_SUFFIXES = frozenset({".txt", ".text", ".md", ".markdown", ".rst", ".csv", ".tsv", ".json", ".yaml", ".yml",
                           ".log", ".html", ".htm", ".xml", ".py", ".toml", ".ini"})
"""Suffixes read as UTF-8 text as they are (besides ``.pdf``)."""


def _unreadable(path: Path, why: str) -> ArkError:
    return ArkError(ErrorLayer.CONFIG, ErrorCode.DOCUMENT_UNREADABLE,
                    f"cannot read the text of {str(path)!r}: {why}")


def _pdf_text(path: Path) -> str:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError:
        raise ArkError(ErrorLayer.CONFIG, ErrorCode.PDF_UNAVAILABLE,
                       f"reading the PDF {str(path)!r} needs pypdf: pip install 'arknb[pdf]'") from None
    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise _unreadable(path, "the PDF is encrypted; decrypt it first")
        pages = [page.extract_text() or "" for page in reader.pages]
    except ArkError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError) as exc:
        raise _unreadable(path, f"not a readable PDF ({exc})") from exc
    text = "\n\n".join(p.strip() for p in pages).strip()
    if not text:
        raise _unreadable(path, "the PDF has no extractable text (a scan? run OCR on it first)")
    return text


def document_text(path: str | Path) -> str:
    """The text of a PDF, Markdown or text file; ``ArkError`` naming the file otherwise."""
    path = Path(path)
    if not path.is_file():
        raise _unreadable(path, "no such file" if not path.exists() else "not a file")
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return _pdf_text(path)
    if suffix not in TEXT_SUFFIXES:
        raise _unreadable(path, f"{suffix or 'no suffix'} is not a PDF, Markdown or text file "
                                f"(readable: .pdf, {', '.join(sorted(TEXT_SUFFIXES))})")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _unreadable(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise _unreadable(path, exc.strerror or str(exc)) from exc
