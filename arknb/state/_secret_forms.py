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
from bisect import bisect_right
from typing import Callable, Iterable

__all__ = ["joined_strings", "loosely_unescaped", "looks_random", "redact_split", "replace_spans", "unescaped",
           "without_separators"]

_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\", '"': '"', "'": "'",
           "0": "\0", "a": "\a", "v": "\v"}
_LEVELS = 3
"""Escaping levels decoded: JSON text, JSON inside JSON, and one more (a repr of it)."""


_ESCAPE = re.compile(r"\\(?:u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|u([0-9a-fA-F]{4})"
                     r"|x([0-9a-fA-F]{2})|(.))", re.DOTALL)


class _Level:
    """Where the characters of a text decoded once came from: the decoded position of each
    escape, where it started in the text before, and how long it was (plain characters in
    between map one to one)."""

    __slots__ = ("decoded", "original", "length")

    def __init__(self) -> None:
        self.decoded: list[int] = []
        self.original: list[int] = []
        self.length: list[int] = []

    def start(self, position: int) -> int:
        """Where decoded character ``position`` starts in the text before."""
        i = bisect_right(self.decoded, position) - 1
        if i < 0:
            return position
        if self.decoded[i] == position:
            return self.original[i]
        return self.original[i] + self.length[i] + position - self.decoded[i] - 1

    def end(self, position: int) -> int:
        """Where decoded character ``position`` ends (exclusive) in the text before."""
        i = bisect_right(self.decoded, position) - 1
        if i >= 0 and self.decoded[i] == position:
            return self.original[i] + self.length[i]
        return self.start(position) + 1


def _decode_once(text: str) -> tuple[str, _Level] | None:
    """``text`` with one level of backslash escapes decoded, and where each character came
    from; None when nothing was decoded. Found by a regex, so a long text with few escapes
    costs a C-speed scan."""
    pieces: list[str] = []
    level = _Level()
    cursor = 0
    size = 0  # length of the decoded text so far
    for match in _ESCAPE.finditer(text):
        high, low, code, byte, simple = match.groups()
        if simple is not None and simple not in _SIMPLE:
            continue  # not an escape: the backslash stays a character
        plain = text[cursor:match.start()]
        pieces.append(plain)
        size += len(plain)
        if high is not None:
            char = chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + (int(low, 16) - 0xDC00))
        elif code is not None:
            char = chr(int(code, 16))
        elif byte is not None:
            char = chr(int(byte, 16))
        else:
            char = _SIMPLE[simple]
        pieces.append(char)
        level.decoded.append(size)
        level.original.append(match.start())
        level.length.append(match.end() - match.start())
        size += 1
        cursor = match.end()
    if not level.decoded:
        return None
    pieces.append(text[cursor:])
    return "".join(pieces), level


def unescaped(text: str) -> tuple[str, Callable[[int, int], tuple[int, int]]] | None:
    """``text`` with its backslash escapes decoded (up to three levels: JSON in JSON in a
    repr), and a function giving, for a ``[start, end)`` span of the decoded text, the span
    of the original characters it came from (whole escapes); None when ``text`` holds no
    escape."""
    if "\\" not in text:
        return None
    levels: list[_Level] = []
    decoded = text
    for _ in range(_LEVELS):
        if "\\" not in decoded:
            break
        once = _decode_once(decoded)
        if once is None:
            break
        decoded, level = once
        levels.append(level)
    if not levels:
        return None

    def span(start: int, end: int) -> tuple[int, int]:
        low, high = start, end - 1
        for level in reversed(levels):  # innermost decoding first
            low, high = level.start(low), level.end(high) - 1
        return low, high + 1

    return decoded, span


_LOOSE = re.compile(r"\\+(?:u([dD][89abAB][0-9a-fA-F]{2})\\+u([dD][c-fC-F][0-9a-fA-F]{2})"
                    r"|(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}))")


def loosely_unescaped(text: str) -> str:
    """A quick approximation of :func:`unescaped` for deciding whether a value needs the
    exact walk: ``\\u`` and ``\\x`` escapes decoded (behind any number of backslashes),
    then every backslash dropped (``\\"`` reads ``"``, ``\\n`` reads ``n``), at C speed
    but for the ``\\u`` escapes. A secret holding a backslash or a control character is
    found in its escaped forms by the plain pass instead."""
    if "\\u" in text or "\\x" in text:
        def one(match: re.Match) -> str:
            high, low, code = match.groups()
            if high is not None:
                return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + (int(low, 16) - 0xDC00))
            return chr(int(code[1:], 16))

        text = _LOOSE.sub(one, text)
    return text.replace("\\", "")


_BETWEEN_STRINGS = re.compile(r"""\\*(["'])\s*,\s*\\*\1""")  # ", " at any JSON depth, or a repr's ', '


def without_separators(text: str) -> str:
    """``text`` with the separators between adjacent strings left out (see
    :func:`joined_strings`), at C speed, without the position map."""
    return _BETWEEN_STRINGS.sub("", text)


def joined_strings(text: str) -> tuple[str, list[int], list[int]] | None:
    """``text`` (JSON at any depth, or a repr) with the separators between adjacent strings
    (``", "``, ``\\", \\"``, ``', '``) left out, so a value cut across two array items reads whole; with each
    character's ``[start, end)`` in ``text`` (a span from one character to a later one
    covers the separators between them). None when there is no such separator."""
    if '",' not in text and "'," not in text:
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
