"""Secret lint: refuse to save a state that holds a credential (DESIGN §8, §9).

Mandatory saves (awaiting approval, suspend, terminal) write whatever the session
holds. A tool result or a hook may have copied an API key or an ``Authorization``
header into history; :class:`SecretLint` finds that before it reaches the disk. It
reports what it found ("bearer token pattern in history[3]") and never the secret.
"""

from __future__ import annotations

import json
import re
from typing import Iterable

from arknb.domain import ArkError, ErrorCode, ErrorLayer

from ._encoding import header_json
from .agent_state import AgentState

__all__ = ["SecretLint"]

_MIN_SECRET_LENGTH = 8

# One pass over the text finds every pattern; the group name says which one matched.
# Escaped quotes (\") are allowed around header names because the text scanned is JSON.
_PATTERNS = re.compile(
    r"(?P<authorization>\b(?i:authorization)[\\\"']*\s*[:=]\s*[\\\"']*"
    r"(?:[A-Za-z]+\s+)?[A-Za-z0-9\-._~+/]{16,})"
    r"|(?P<bearer>\b(?i:bearer)\s+[A-Za-z0-9\-._~+/]{16,})"
    r"|(?P<sk_key>\bsk-[A-Za-z0-9_\-]{16,})"
)
_DESCRIPTIONS = {
    "authorization": "Authorization header",
    "bearer": "bearer token pattern",
    "sk_key": "sk- API key pattern",
}


class SecretLint:
    """Finds credentials in text: configured secrets and well-known token shapes.

    Args:
        known: secrets to look for verbatim (API keys the session was configured with).
            Strings shorter than 8 characters are ignored: they would match ordinary text.

    Example:
        >>> lint = SecretLint(["my-very-secret-key"])
        >>> lint.scan("the key is my-very-secret-key")
        ['configured secret #1']
    """

    __slots__ = ("_known",)

    def __init__(self, known: Iterable[str] = ()) -> None:
        # Each secret is kept with its JSON-escaped form, which is how it appears in a
        # saved document if it contains quotes, backslashes or control characters.
        self._known: list[tuple[str, ...]] = []
        for secret in known:
            self.add(secret)

    def add(self, secret: str) -> None:
        """Look for ``secret`` too. A pydantic ``SecretStr`` is accepted."""
        getter = getattr(secret, "get_secret_value", None)
        value = getter() if callable(getter) else secret
        if not isinstance(value, str) or len(value) < _MIN_SECRET_LENGTH:
            return
        if any(value == forms[0] for forms in self._known):
            return
        escaped = json.dumps(value, ensure_ascii=False)[1:-1]
        self._known.append((value, escaped) if escaped != value else (value,))

    def secrets(self) -> tuple[str, ...]:
        """The configured secrets (to configure another runtime's lint the same; never log them)."""
        return tuple(forms[0] for forms in self._known)

    def scan(self, text: str) -> list[str]:
        """Descriptions of the credentials in ``text``, each kind once, in a stable order.

        The descriptions never contain the secret itself.
        """
        findings = [f"configured secret #{number}"
                    for number, forms in enumerate(self._known, start=1)
                    if any(form in text for form in forms)]
        seen: set[str] = set()
        # The regex costs ~100 µs per few hundred characters; almost no text contains any of
        # its anchor words, so look for those first (every save is linted).
        lowered = text.lower()
        if "authorization" not in lowered and "bearer" not in lowered and "sk-" not in lowered:
            return findings
        for match in _PATTERNS.finditer(text):
            kind = match.lastgroup
            if kind is not None and kind not in seen:
                seen.add(kind)
        findings.extend(_DESCRIPTIONS[kind] for kind in _DESCRIPTIONS if kind in seen)
        return findings

    def check(self, state: AgentState, *, history_from: int = 0) -> None:
        """Raise if ``state`` holds a credential.

        Args:
            state: the state about to be saved.
            history_from: messages before this index were already checked (the runtime's
                history only grows), so only the new ones and the other fields are scanned.

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

    def __repr__(self) -> str:
        return f"SecretLint(known={len(self._known)})"
