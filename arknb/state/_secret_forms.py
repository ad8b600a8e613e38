"""The forms a secret takes besides its plain text, for :mod:`arknb.state.secrets`.

A key reaches a sink in more shapes than one:

- escaped: a model writing tool-call arguments may escape any character of a JSON string
  (``"sk-abc\\u0064ef"``, ``"https:\\/\\/..."``), and JSON inside JSON escapes it again.
  :func:`unescaped` decodes such text and says, for each decoded character, which
  characters of the original it came from, so a match in the decoded text is replaced
  whole (every escape it covers) in the original;
- split: a tool may return a key in two adjacent strings (two list items, two text parts
  of a message). :func:`redact_split` finds a known value across the boundaries of a run
  of strings and cuts it out of each;
- shaped: ``sk-...`` keys and bearer tokens nobody configured, told from ordinary words
  (``sk-learn-style-estimators-everywhere``) by :func:`looks_random`.
"""

from __future__ import annotations

import re
from typing import Iterable

__all__ = ["joined_strings", "loosely_unescaped", "looks_random", "redact_split", "replace_spans", "unescaped"]

_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\", '"': '"', "'": "'",
           "0": "\0", "a": "\a", "v": "\v"}
_HEX = frozenset("0123456789abcdefABCDEF")
_LEVELS = 3
"""Escaping levels decoded: JSON text, JSON inside JSON, and one more (a repr of it)."""


def _decode_once(text: str) -> tuple[str, list[int], list[int]] | None:
    """``text`` with one level of backslash escapes decoded, with each decoded character's
    ``[start, end)`` in ``text``; None when nothing was decoded."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i, size, changed = 0, len(text), False
    while i < size:
        char = text[i]
        if char == "\\" and i + 1 < size:
            code = text[i + 1]
            if code == "u" and i + 6 <= size and all(c in _HEX for c in text[i + 2:i + 6]):
                value, end = int(text[i + 2:i + 6], 16), i + 6
                # A surrogate pair written as two escapes is one character.
                if (0xD800 <= value < 0xDC00 and text[end:end + 2] == "\\u" and end + 6 <= size
                        and all(c in _HEX for c in text[end + 2:end + 6])):
                    low = int(text[end + 2:end + 6], 16)
                    if 0xDC00 <= low < 0xE000:
                        value, end = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00), end + 6
                out.append(chr(value))
            elif code == "x" and i + 4 <= size and all(c in _HEX for c in text[i + 2:i + 4]):
                out.append(chr(int(text[i + 2:i + 4], 16)))
                end = i + 4
            elif code in _SIMPLE:
                out.append(_SIMPLE[code])
                end = i + 2
            else:
                out.append(char)
                starts.append(i)
                ends.append(i + 1)
                i += 1
                continue
            starts.append(i)
            ends.append(end)
            i, changed = end, True
            continue
        out.append(char)
        starts.append(i)
        ends.append(i + 1)
        i += 1
    return ("".join(out), starts, ends) if changed else None


def unescaped(text: str) -> tuple[str, list[int], list[int]] | None:
    """``text`` with its backslash escapes decoded (up to three levels: JSON in JSON in a
    repr), and for each decoded character the ``[start, end)`` of the original characters
    it came from; None when ``text`` holds no escape."""
    if "\\" not in text:
        return None
    first = _decode_once(text)
    if first is None:
        return None
    decoded, starts, ends = first
    for _ in range(_LEVELS - 1):
        if "\\" not in decoded:
            break
        again = _decode_once(decoded)
        if again is None:
            break
        decoded, inner_starts, inner_ends = again
        starts = [starts[s] for s in inner_starts]
        ends = [ends[e - 1] for e in inner_ends]
    return decoded, starts, ends


_LOOSE = re.compile(r"\\+(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)", re.DOTALL)


def loosely_unescaped(text: str) -> str:
    """A quick approximation of :func:`unescaped` (any number of backslashes before an
    escape count as one level or several), for deciding whether a value needs the exact
    walk: it may find more than is there, never less."""
    def one(match: re.Match) -> str:
        code = match.group(1)
        if len(code) > 1:
            return chr(int(code[1:], 16))
        return _SIMPLE.get(code, code)

    return _LOOSE.sub(one, text)


_BETWEEN_STRINGS = re.compile(r'"\s*,\s*"')


def joined_strings(text: str) -> tuple[str, list[int], list[int]] | None:
    """``text`` (JSON, or text holding JSON) with the separators between adjacent strings
    (``", "``) left out, so a value cut across two array items reads whole; with each
    character's ``[start, end)`` in ``text`` (a span from one character to a later one
    covers the separators between them). None when there is no such separator."""
    if '",' not in text:
        return None
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    cursor = 0
    for match in _BETWEEN_STRINGS.finditer(text):
        pieces.append(text[cursor:match.start()])
        starts.extend(range(cursor, match.start()))
        ends.extend(range(cursor + 1, match.start() + 1))
        cursor = match.end()
    if cursor == 0:
        return None
    pieces.append(text[cursor:])
    starts.extend(range(cursor, len(text)))
    ends.extend(range(cursor + 1, len(text) + 1))
    return "".join(pieces), starts, ends


def redact_split(texts: list[str], values: Iterable[str], redacted: str) -> tuple[list[str], int]:
    """``texts`` (adjacent strings) with every known value that runs across a boundary
    between them cut out: ``redacted`` takes the place of its part in the first string it
    starts in, its parts in the following strings are removed. Returns the new strings and
    how many values were cut (0: the same list)."""
    joined = "".join(texts)
    bounds: list[int] = []
    offset = 0
    for text in texts[:-1]:
        offset += len(text)
        bounds.append(offset)
    spans: list[tuple[int, int]] = []
    for value in values:
        start = joined.find(value)
        while start != -1:
            end = start + len(value)
            if any(start < bound < end for bound in bounds):
                spans.append((start, end))
            start = joined.find(value, start + 1)
    if not spans:
        return texts, 0
    spans = _merged(spans)
    out: list[str] = []
    offset = 0
    for text in texts:
        low, high = offset, offset + len(text)
        pieces: list[str] = []
        cursor = low
        for start, end in spans:
            if end <= low or start >= high:
                continue
            pieces.append(joined[cursor:max(start, low)])
            if start >= low:
                pieces.append(redacted)  # where the value starts
            cursor = min(end, high)
        pieces.append(joined[cursor:high])
        out.append("".join(pieces))
        offset = high
    return out, len(spans)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    spans.sort()
    merged = [spans[0]]
    for start, end in spans[1:]:
        if start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def replace_spans(text: str, spans: list[tuple[int, int]], redacted: str) -> str:
    """``text`` with each (merged) ``[start, end)`` span replaced by ``redacted``."""
    pieces: list[str] = []
    cursor = 0
    for start, end in _merged(spans):
        pieces.append(text[cursor:start])
        pieces.append(redacted)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


_MIXED_CASE = re.compile(r"[a-z][A-Z]|[A-Z]{8}")


def looks_random(token: str) -> bool:
    """True if ``token`` (what follows ``sk-`` or ``Bearer``) looks generated rather than
    written: it has a digit, an underscore, a dot, a slash or a plus, a lowercase letter
    followed by an uppercase one, eight capitals in a row, or one unbroken run of 24
    letters. Words joined by hyphens (``learn-style-estimators-everywhere``,
    ``Learn-Style-Guide-Everywhere``) do not; every provider key format seen does (OpenAI
    ``sk-proj-`` and legacy keys, Anthropic ``sk-ant-api03-``, DeepSeek's hex keys, JWTs)."""
    if any(c.isdigit() or c in "_./+" for c in token):
        return True
    if _MIXED_CASE.search(token):
        return True
    return any(len(part) >= 24 for part in token.split("-"))
