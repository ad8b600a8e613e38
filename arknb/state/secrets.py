"""Secret lint: find credentials in text and values, and replace them by ``[redacted]``.

A tool result or a hook may copy an API key or an ``Authorization`` header into the
session. :class:`SecretLint` knows two kinds of secret: the configured ones (the model's
API keys, learnt by the runtime when they are resolved, and ``AgentRuntime(secrets=)``),
matched verbatim, and well-known credential shapes (``sk-...`` keys, bearer tokens,
``Authorization`` headers) matched by pattern (DESIGN §8, §9).

The runtime uses it twice: on everything that leaves it (events, history, results) and,
as the last line, on every save, where a finding is redacted in the saved copy and in
memory instead of refusing the save. Findings are described ("bearer token pattern in
history[3]"), never quoted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Callable, Iterable, Iterator

from pydantic import BaseModel

from arknb.domain import ArkError, ErrorCode, ErrorLayer

from ._encoding import APPEND_ONLY_FIELDS, header_json
from ._secret_forms import (
    joined_strings, loosely_unescaped, looks_random, redact_split, replace_spans, unescaped, without_separators,
)
from .agent_state import AgentState

__all__ = ["ENV_SUFFIXES", "REDACTED", "Redaction", "SecretLint", "environment_secrets", "redact_value"]

REDACTED = "[redacted]"
"""What a secret is replaced by, everywhere."""

ENV_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET")
"""Environment variables whose values count as secrets (the keys on this machine)."""

_MIN_SECRET_LENGTH = 8
_MAX_DEPTH = 64

# One pass over the text finds every pattern; the group name says which one matched and
# the value group is what gets replaced (the header name and scheme stay readable).
# Quotes, escaped or not (\", \\\"), are allowed around header names because the text may be
# JSON, or JSON inside JSON. A backslash only before a quote: a JSON escape such as \u0000
# must not read as the start of a token, or the save-time check would find in a saved
# document what no string of the state holds, and refuse every later save.
_TOKEN = r"[A-Za-z0-9\-._~+/]{16,}=*"
_QUOTES = r"(?:\\*[\"'])*"
_PATTERNS = re.compile(
    r"(?P<authorization>\b(?i:authorization)" + _QUOTES + r"\s*[:=]\s*" + _QUOTES + r"(?:[A-Za-z]+\s+)?)"
    r"(?P<authorization_v>" + _TOKEN + ")"
    r"|(?P<bearer>\b(?i:bearer)\s+)(?P<bearer_v>" + _TOKEN + ")"
    r"|(?P<sk_key>)(?P<sk_key_v>\bsk-[A-Za-z0-9_\-]{16,})"
)
def _hides_letters(text: str) -> bool:
    """True if ``text`` has an escape that can stand for a letter (``\\u0064``, ``\\x64``):
    only those can hide a pattern's anchor word (``\\"`` and ``\\/`` cannot)."""
    return "\\u" in text or "\\x" in text


def _has_anchor(text: str) -> bool:
    """True if ``text`` holds a word every pattern match (and every credential-named
    mapping key) contains. ``str.lower`` and ``in`` are several times faster than a
    case-insensitive regex search, and almost no text has any of them."""
    if "sk-" in text:
        return True
    lowered = text.lower()
    return ("bearer" in lowered or "authorization" in lowered
            or ("api" in lowered and ("api-key" in lowered or "api_key" in lowered)))
# A mapping entry {"X-Authorization": "<token>"} is a header even though no single string
# holds both the name and the value. Its value counts as a credential when it starts like
# one (what the pattern finds in the entry's JSON, "authorization":"<token> ..."), and is
# redacted whole; the name may end in quotes or a separator (JSON text sees through them).
_HEADER_KEY = re.compile(r"(?i:authorization|x-api-key|api[-_]key)[\s\"'\\:=]*\Z")
_HEADER_VALUE = re.compile(r"\s*" + _QUOTES + r"(?:[A-Za-z]+\s+)?" + _TOKEN)
# Redacting a match can expose another (a long word first taken for the scheme, as in
# "Authorization: <word> <token>"): the text is searched again, a few times at most.
_MAX_PASSES = 8
_DESCRIPTIONS = {
    "authorization": "Authorization header",
    "bearer": "bearer token pattern",
    "sk_key": "sk- API key pattern",
}


@dataclass(frozen=True, slots=True)
class Redaction:
    """What was redacted in one place: ``where`` ("history[3]", "event tool.after"),
    how many replacements, and the kinds found (descriptions, never values)."""

    where: str
    count: int
    kinds: tuple[str, ...]

    def to_payload(self) -> dict[str, Any]:
        """The ``secret.redacted`` event payload."""
        return {"where": self.where, "count": self.count, "kinds": list(self.kinds)}


class SecretLint:
    """Finds and redacts credentials: configured secrets and well-known token shapes.

    Args:
        known: secrets to look for verbatim (API keys the session was configured with).
            Strings shorter than 8 characters are ignored: they would match ordinary text.

    Example:
        >>> lint = SecretLint(["my-very-secret-key"])
        >>> lint.scan("the key is my-very-secret-key")
        ['configured secret #1']
        >>> lint.redact_text("the key is my-very-secret-key")
        ('the key is [redacted]', ['configured secret #1'])
    """

    __slots__ = ("_known", "known_values", "_replace_order", "_forms", "_halves", "__weakref__")

    def __init__(self, known: Iterable[str] = ()) -> None:
        # Each secret is kept with the escaped forms it takes inside JSON text (a saved
        # document) and inside a repr, if it contains quotes, backslashes or control
        # characters; texts are searched for all of them.
        self._known: list[tuple[str, ...]] = []
        self.known_values: tuple[str, ...] = ()
        """The configured secrets in plain form (for the streaming guard); never shown."""
        self._replace_order: tuple[tuple[int, str], ...] = ()
        self._forms: tuple[str, ...] = ()
        self._halves: tuple[str, ...] = ()
        for secret in known:
            self.add(secret)

    def add(self, secret: Any) -> bool:
        """Look for ``secret`` too (a pydantic ``SecretStr`` is accepted). Returns True if
        it was new; too-short strings and non-strings are ignored."""
        getter = getattr(secret, "get_secret_value", None)
        value = getter() if callable(getter) else secret
        if not isinstance(value, str) or len(value) < _MIN_SECRET_LENGTH or value in self.known_values:
            return False
        in_repr = repr(value)[1:-1]
        variants = (value, json.dumps(value, ensure_ascii=False)[1:-1], in_repr, in_repr.replace("'", "\\'"))
        self._known.append(tuple(dict.fromkeys(variants)))
        self.known_values = self.known_values + (value,)
        # Longest first, so a key that contains another known key is replaced whole.
        forms = [(number, form) for number, entry in enumerate(self._known, start=1) for form in entry]
        self._replace_order = tuple(sorted(forms, key=lambda item: -len(item[1])))
        self._forms = tuple(form for _, form in forms)
        self._halves = self._halves + (value[:len(value) // 2], value[(len(value) + 1) // 2:])
        return True

    def scan(self, text: str) -> list[str]:
        """Descriptions of the credentials in ``text``, each kind once, in a stable order:
        also a configured secret written with escapes (``\\u0064``, ``\\/``, JSON in JSON).

        The descriptions never contain the secret itself.
        """
        findings = [f"configured secret #{number}"
                    for number, forms in enumerate(self._known, start=1)
                    if any(form in text for form in forms)]
        if self._known:
            escaped, split = self._maybe_hidden(text, patterns=False)
            if escaped or split:
                findings.extend(self._hidden_spans(text, patterns=False, escaped=escaped, split=split)[1])
        # The regex costs ~100 µs per few hundred characters; almost no text contains any of
        # its anchor words, so look for those first (every save is linted).
        if _has_anchor(text):
            seen = {kind.removesuffix("_v") for kind, _, _ in _matches(text)}
            findings.extend(_DESCRIPTIONS[kind] for kind in _DESCRIPTIONS if kind in seen)
        return list(dict.fromkeys(findings))

    def redact_text(self, text: str, *, patterns: bool = True) -> tuple[str, list[str]]:
        """``text`` with every finding replaced by ``[redacted]``, and one description per
        replacement; with ``patterns=False`` only the configured secrets. Unchanged text
        is returned as the same object."""
        if len(text) < _MIN_SECRET_LENGTH:
            return text, []
        hits: list[str] = []
        for number, form in self._replace_order:
            if form in text:
                hits.extend([f"configured secret #{number}"] * text.count(form))
                text = text.replace(form, REDACTED)
        escaped, split = self._maybe_hidden(text, patterns=patterns)
        if escaped or split:
            # A secret with escaped characters (a model may escape any of them in JSON),
            # or cut across adjacent strings: found in the decoded or joined text,
            # replaced whole in this one.
            spans, found = self._hidden_spans(text, patterns=patterns, escaped=escaped, split=split)
            if spans:
                text = replace_spans(text, spans, REDACTED)
                hits.extend(found)
        if patterns and len(text) >= 19 and _has_anchor(text):
            for _ in range(_MAX_PASSES):
                text, found = _redact_patterns(text)
                if not found:
                    break
                hits.extend(found)
        return text, hits

    def _maybe_hidden(self, text: str, *, patterns: bool) -> tuple[bool, bool]:
        """``(escaped, split)``: whether an escape in ``text`` may hide a finding, and
        whether a configured secret may run across adjacent strings in it (quick checks:
        only the few texts that may hold one are decoded or joined exactly)."""
        escaped = False
        if "\\" in text and (self._known or (patterns and _hides_letters(text))):
            loose = loosely_unescaped(text)
            if loose != text:
                escaped = (any(value in loose for value in self.known_values)
                           or (patterns and _has_anchor(loose)))
        split = ('"' in text or "'" in text) and any(half in text for half in self._halves)
        if split:  # the value reads whole once the separators between strings are gone
            joined = without_separators(text)
            split = any(value in joined for value in self.known_values)
        return escaped, split

    def _hidden_spans(self, text: str, *, patterns: bool, escaped: bool = True,
                      split: bool = True) -> tuple[list[tuple[int, int]], list[str]]:
        """Where in ``text`` a finding lies that the plain pass cannot see: written with
        escapes (found in the decoded text), or a configured secret cut across adjacent
        strings (``["first half", "second half"]``, at any JSON depth). Returns ``[start,
        end)`` spans covering whole escapes and separators, and what each is."""
        spans: list[tuple[int, int]] = []
        hits: list[str] = []
        decoded = unescaped(text) if escaped else None
        if decoded is not None:
            plain, original = decoded
            for number, value in enumerate(self.known_values, start=1):
                for start in _find_all(plain, value):
                    span = original(start, start + len(value))
                    if "\\" in text[span[0]:span[1]]:  # else the plain pass saw it
                        spans.append(span)
                        hits.append(f"configured secret #{number}")
            if patterns and _has_anchor(plain):
                for kind, start, end in _matches(plain):
                    span = original(start, end)
                    if "\\" in text[span[0]:span[1]]:
                        spans.append(span)
                        hits.append(_DESCRIPTIONS[kind.removesuffix("_v")])
        view = joined_strings(text) if split else None
        if view is not None:
            joined, join_starts, join_ends = view
            for value in self.known_values:
                for start in _find_all(joined, value):
                    low, high = join_starts[start], join_ends[start + len(value) - 1]
                    if high - low > len(value):  # longer in the text: it runs across a separator
                        spans.append((low, high))
                        hits.append("configured secret split across strings")
        return spans, hits

    def redact_split(self, texts: list[str]) -> tuple[list[str], list[str]]:
        """Adjacent strings (items of one list, text parts of one message) with every
        configured secret that runs across them cut out; one description per secret."""
        out, count = redact_split(texts, self.known_values, REDACTED)
        return out, ["configured secret split across strings"] * count

    def redact_known_text(self, text: str) -> tuple[str, list[str]]:
        """:meth:`redact_text` for the configured secrets only."""
        return self.redact_text(text, patterns=False)

    def redact(self, value: Any, *, patterns: bool = True) -> tuple[Any, list[str]]:
        """:func:`redact_value` with this lint's text redaction: ``(value, hits)``, the
        very same value and ``[]`` when there is nothing to redact.

        Most values hold nothing, so each is first turned into one text (in C: JSON for
        models, ``repr`` for the rest) and checked; only a value that may hold a finding
        is walked. With ``patterns=False`` a lint that knows no secret costs nothing.
        """
        if not self.may_hold_secret(value, patterns=patterns):
            return value, []
        return redact_value(value, self.redact_text if patterns else self.redact_known_text,
                            self.redact_split if self._known else None)

    def may_hold_secret(self, value: Any, *, patterns: bool = True) -> bool:
        """False when ``value`` certainly holds no finding (a quick check on one text)."""
        forms = self._forms
        if not forms and not patterns:
            return False
        try:
            if isinstance(value, BaseModel):
                text = value.model_dump_json()
            elif isinstance(value, str):
                text = value
            else:
                text = repr(value)
        except Exception:  # a value that cannot be shown cheaply: walk it
            return True
        if forms:
            for form in forms:
                if form in text:
                    return True
            if "\\" in text:  # an escaped secret: a quick decoding may show it
                loose = loosely_unescaped(text)
                if any(value in loose for value in self.known_values):
                    return True
            # A secret split across two strings leaves its first or its second half whole;
            # one cut across more items of a list reads whole without the separators.
            if any(half in text for half in self._halves):
                return True
            if "," in text:
                joined = without_separators(text)
                if any(value in joined for value in self.known_values):
                    return True
        return patterns and len(text) >= 10 and (_has_anchor(text) or (_hides_letters(text) and _has_anchor(
            loosely_unescaped(text))))

    def redact_state(self, state: AgentState, *, history_from: int = 0) -> tuple[AgentState, list[Redaction]]:
        """The state with every finding redacted, and where each was.

        Args:
            state: the state about to be saved.
            history_from: messages before this index were already checked (the runtime's
                history only grows), so only the new ones and the other fields are scanned.

        Returns:
            ``(state, redactions)``: the same object and ``[]`` when it is clean.

        Raises:
            ArkError: ``secret_in_state`` (security) in the one case it cannot redact: a
                finding that spans JSON structure (no single string holds it). The
                message says what was found, never the secret.
        """
        start = max(0, history_from)
        new = state.history[start:]
        if not any(self.scan(part) for part in [m.model_dump_json() for m in new] + [header_json(state)]):
            return state, []
        redactions: list[Redaction] = []
        history = list(state.history)
        for index in range(start, len(history)):
            redacted, hits = self.redact(history[index])
            if hits:
                history[index] = redacted
                redactions.append(_redaction(f"history[{index}]", hits))
        updates: dict[str, Any] = {"history": tuple(history)} if redactions else {}
        for name in AgentState.model_fields:
            if name in APPEND_ONLY_FIELDS:
                continue
            redacted, hits = self.redact(getattr(state, name))
            if hits:
                updates[name] = redacted
                redactions.append(_redaction(name, hits))
        state = state.model_copy(update=updates) if updates else state
        self.check(state, history_from=start)  # a finding no single string holds: refuse
        return state, redactions

    def check(self, state: AgentState, *, history_from: int = 0) -> None:
        """Raise if ``state`` holds a credential (for callers that refuse rather than redact).

        Args:
            state: the state about to be saved.
            history_from: messages before this index were already checked.

        Raises:
            ArkError: ``secret_in_state`` (security); the message says what was found
                and where (``history[2]``, ``metadata``, ...), never the secret.
        """
        if history_from <= 0:
            if not self.scan(state.to_json()):
                return
        else:
            new = state.history[history_from:]
            parts = [m.model_dump_json() for m in new]
            # The rest of the state, without the append-only fields: history's new messages
            # are above, and usages hold token counts only (one more per model call).
            parts.append(header_json(state))
            if not any(self.scan(part) for part in parts):
                return
        # Slow path, only on failure: find which part of the state holds each finding.
        located: list[str] = []
        for index, message in enumerate(state.history):
            located.extend(f"{finding} in history[{index}]"
                           for finding in self.scan(message.model_dump_json()))
        other_fields = [name for name in AgentState.model_fields if name != "history"]
        for field in other_fields:
            findings = self.scan(state.model_dump_json(include={field}))
            located.extend(f"{finding} in {field}" for finding in findings)
        if not located:  # found only across field boundaries; report it without a place
            located = self.scan(state.to_json())
        raise ArkError(ErrorLayer.SECURITY, ErrorCode.SECRET_IN_STATE,
                       f"refusing to save session {state.session_id!r}: the state appears to "
                       f"hold a credential ({', '.join(located)}); remove it from the state "
                       "before saving")

    def __len__(self) -> int:
        return len(self._known)

    def __repr__(self) -> str:
        return f"SecretLint(known={len(self._known)})"


def environment_secrets(env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """``(name, value)`` of the variables of ``env`` (default ``os.environ``) whose names
    end in ``_API_KEY``, ``_TOKEN`` or ``_SECRET``, values of 8 characters or more."""
    import os

    env = os.environ if env is None else env
    return [(name, value) for name, value in sorted(env.items())
            if name.upper().endswith(ENV_SUFFIXES) and isinstance(value, str) and len(value) >= _MIN_SECRET_LENGTH]


def redact_value(value: Any, redact_text: Callable[[str], tuple[str, list[str]]],
                 redact_split: Callable[[list[str]], tuple[list[str], list[str]]] | None = None,
                 ) -> tuple[Any, list[str]]:
    """``value`` with ``redact_text`` applied to every string in it (keys included), and
    one description per replacement; with ``redact_split``, also to each run of adjacent
    strings of a list or tuple (strings, or text parts such as ``ContentPart``), where a
    secret may be split across items.

    Walks strings, mappings, lists, tuples and pydantic models (rebuilt with
    ``model_copy``, so frozen values stay frozen and are not re-validated). Anything
    unchanged is returned as the very same object, so callers can test identity.
    A mapping entry named like a credential header (``Authorization``,
    ``X-Authorization``, ``x-api-key``) whose value is token-shaped is redacted whole.
    """
    hits: list[str] = []
    return _walk(value, redact_text, hits, 0, redact_split), hits


def _walk(value: Any, redact_text: Callable[[str], tuple[str, list[str]]], hits: list[str], depth: int,
          split: Callable[[list[str]], tuple[list[str], list[str]]] | None = None) -> Any:
    kind = type(value)
    if kind is str or isinstance(value, str):
        if len(value) < _MIN_SECRET_LENGTH:
            return value
        redacted, found = redact_text(value)
        if not found:
            return value
        hits.extend(found)
        return redacted
    if value is None or kind is int or kind is float or kind is bool:
        return value
    if depth > _MAX_DEPTH:
        # Deeper than any value arknb builds: check it as text and redact it whole.
        _, found = redact_text(json.dumps(value, default=str, ensure_ascii=False))
        hits.extend(found)
        return REDACTED if found else value
    depth += 1
    before = len(hits)
    if kind is dict or isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if type(key) is str:
                if type(item) is str and _HEADER_KEY.search(key) and _HEADER_VALUE.match(item):
                    hits.append("Authorization header")
                    item = REDACTED
                key = _walk(key, redact_text, hits, depth, split)
            out[key] = _walk(item, redact_text, hits, depth, split)
        return out if len(hits) > before else value
    if kind is list or kind is tuple or isinstance(value, (list, tuple)):
        items = [_walk(item, redact_text, hits, depth, split) for item in value]
        if split is not None and len(items) > 1:
            items = _split_runs(items, split, hits)
        if len(hits) == before:
            return value
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, BaseModel):
        changes: dict[str, Any] = {}
        for name in type(value).model_fields:
            item = getattr(value, name)
            count = len(hits)
            redacted = _walk(item, redact_text, hits, depth, split)
            if len(hits) > count:
                changes[name] = redacted
        return value.model_copy(update=changes) if changes else value
    return value


def _find_all(text: str, value: str) -> Iterator[int]:
    start = text.find(value)
    while start != -1:
        yield start
        start = text.find(value, start + len(value))


def _text_of(item: Any) -> str | None:
    if type(item) is str:
        return item
    if isinstance(item, BaseModel) and "text" in type(item).model_fields:
        text = getattr(item, "text", None)
        return text if type(text) is str else None
    if type(item) is dict:
        text = item.get("text")
        return text if type(text) is str else None
    return None


def _with_text(item: Any, text: str) -> Any:
    if type(item) is str:
        return text
    if isinstance(item, BaseModel):
        return item.model_copy(update={"text": text})
    return {**item, "text": text}


def _split_runs(items: list[Any], split: Callable[[list[str]], tuple[list[str], list[str]]],
                hits: list[str]) -> list[Any]:
    """``items`` with each run of adjacent texts passed through ``split`` together."""
    texts = [_text_of(item) for item in items]
    index, size = 0, len(items)
    while index < size:
        if texts[index] is None:
            index += 1
            continue
        end = index
        while end < size and texts[end] is not None:
            end += 1
        if end - index > 1:
            run = texts[index:end]
            new, found = split(run)  # type: ignore[arg-type]
            if found:
                hits.extend(found)
                for offset, text in enumerate(new):
                    if text != run[offset]:
                        items[index + offset] = _with_text(items[index + offset], text)
        index = end
    return items


def _matches(text: str) -> Iterator[tuple[str, int, int]]:
    """The credential pattern matches in ``text``: (group name, start, end) of each value.
    An ``sk-`` key or a bearer token counts only if it looks generated (``looks_random``):
    ``sk-learn-style-estimators-everywhere`` is prose."""
    for match in _PATTERNS.finditer(text):
        kind = match.lastgroup
        if not kind:
            continue
        start, end = match.span(kind)
        if kind == "sk_key_v" and not looks_random(text[start + 3:end]):
            continue
        if kind == "bearer_v" and not looks_random(text[start:end]):
            continue
        yield kind, start, end


def _redact_patterns(text: str) -> tuple[str, list[str]]:
    """One pass of the credential patterns over ``text``: the text with each match's value
    replaced, and one description per match."""
    pieces: list[str] = []
    hits: list[str] = []
    last = 0
    for kind, start, end in _matches(text):
        pieces.append(text[last:start])
        pieces.append(REDACTED)
        last = end
        hits.append(_DESCRIPTIONS[kind.removesuffix("_v")])
    if not pieces:
        return text, hits
    pieces.append(text[last:])
    return "".join(pieces), hits


def _redaction(where: str, hits: list[str]) -> Redaction:
    return Redaction(where, len(hits), tuple(sorted(set(hits))))
