"""The runtime's redactor: no secret leaves the runtime (DESIGN §9 "Secrets").

One redactor, one rule, at every exit. What it finds (:class:`~arknb.state.SecretLint`):

- the secrets the runtime knows: ``AgentRuntime(secrets=...)`` (a sub-agent's include
  its parent's) and every API key the model reports (``observe_secrets``: as it resolves each key, before the
  request that uses it is sent), in plain text, JSON-escaped (``\\u0064`` for any
  character, ``\\/``, JSON in JSON: how a model may write a key into tool-call
  arguments) and split across adjacent strings;
- credential shapes from sources it does not know: ``sk-...`` keys and bearer tokens
  that look generated, ``Authorization`` headers.

Each finding is replaced by ``[redacted]`` with one ``secret.redacted`` event per place
(where, how many, what kind; never the value). The exits, each passing through one
method here:

- events, before they are published (``AgentRuntime._publish`` -> :meth:`Redactor.payload`):
  every payload but ``llm.chunk``, which :class:`ChunkGuard` handles. Everything built
  from events is clean with them: the durable outbox, widgets, ``ev.trace`` files,
  OpenTelemetry spans, eval reports;
- what a durable store records of each call (``SessionScope.redact`` ->
  :meth:`Redactor.value`): operation inputs, results, errors and hook records;
- history, as messages are appended (:meth:`Redactor.messages`): state in memory, the
  next model request and saved state are clean. A tool still gets its arguments as
  the model wrote them (the loop hands it the model's own message);
- the :class:`AgentRunResult` a run returns (final message, error);
- saved state, by the save-time lint (:func:`lint_before_save`), the last line;
- a model that writes files of its own (``ev.Recorder``'s cassettes) is handed the
  runtime's lint (``redact_with``) and redacts with it;
- a sub-agent's events, as they are re-published on this runtime's bus
  (:func:`publish_foreign`).

Streamed text (``llm.chunk``): a secret may arrive split across chunks.
:class:`ChunkGuard` holds back the end of a chunk while it could be the start of a known
secret (at most ``len(secret) - 1`` characters) or of a credential shape (a word
``sk-...``, ``Bearer <token>``, ``Authorization: ...`` not ended yet, at most
``_SHAPE_HOLD`` characters), and releases it, redacted, with the next chunk or at the end
of the stream. So no ``llm.chunk`` payload, and no concatenation of the consecutive
chunks of one model call, contains a secret known when they were published, nor a
credential shape. The cost: a chunk that ends like the start of either reaches
listeners one chunk later; any other chunk costs one short regex search.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any, Callable

from ..domain import AgentMessage, ArkError
from ..events import AgentEvent, EventTypes
from ..events.envelope import freeze_payload
from ..state import REDACTED, AgentState, Redaction, SecretLint
from .result import AgentRunResult

if TYPE_CHECKING:
    from .runtime import AgentRuntime

__all__ = ["ChunkGuard", "Redactor", "learn_model_secrets", "lint_before_save", "publish_foreign"]

_PREFIX_LIMIT = 256
"""Secrets up to this length are matched by their prefixes in one ``endswith`` call;
longer ones (rare) by a search, so a huge secret does not cost quadratic memory."""
_SHAPE_HOLD = 512
"""At most this much of a chunk's end is held while it could still become a credential shape."""


def _prefix_of(word: str, rest: str = "", shortest: int = 1) -> str:
    """A regex for any prefix of ``word`` at least ``shortest`` letters long, and of
    ``word`` followed by ``rest``."""
    pattern = f"(?:{rest})?" if rest else ""
    for letter in reversed(word[shortest:]):
        pattern = f"(?:{letter}{pattern})?"
    return word[:shortest] + pattern


# The end of a text that may be the start of a credential shape the next chunk completes:
# a word "sk", "sk-..."; "bea"... "bearer", or "bearer <partial token>"; "auth"...
# "authorization", or the header with a partial value (searched in the last _SHAPE_HOLD
# characters). Shorter starts are not held: a chunk ending in the word "a" or "s" (common)
# would always wait for the next one, and tokenizers do not cut these words there.
_PARTIAL_TOKEN = r"[A-Za-z0-9\-._~+/]*=*"
_SHAPE_START = re.compile(r"(?i:\b(?:" + "|".join((
    _prefix_of("sk", r"-[A-Za-z0-9_\-]*", 2),
    _prefix_of("bearer", r"\s+" + _PARTIAL_TOKEN, 3),
    _prefix_of("authorization", r"[\"'\\]*\s*[:=]?\s*[\"'\\]*(?:[A-Za-z]+\s+)?" + _PARTIAL_TOKEN, 4),
)) + r"))\Z")
_SHAPE_ANCHOR = re.compile(r"(?i:sk|bea|auth|api)")
"""What every credential shape, and every start of one the guard holds, contains."""


class Redactor:
    """Redacts the runtime's outgoing values and says so through ``emit``.

    Args:
        lint: the lint holding the known secrets (shared with the save-time check).
        emit: ``emit(event_type, payload)``, the runtime's publisher.
    """

    __slots__ = ("lint", "_emit", "_checked", "__weakref__")  # a model holds its learn() weakly

    def __init__(self, lint: SecretLint, emit: Callable[[str, Any], None]) -> None:
        self.lint = lint
        self._emit = emit
        # How much of history is known clean: (messages, the last of them, secrets known
        # then). Appending checks new messages once, and the save-time lint skips them.
        self._checked: tuple[int, Any, int] = (0, None, 0)

    def learn(self, secret: Any) -> None:
        """Redact ``secret`` (a ``str`` or ``SecretStr``) from now on. A model calls this
        (through ``observe_secrets``) before it uses a key it just resolved."""
        self.lint.add(secret)

    def value(self, value: Any, where: str) -> Any:
        """``value`` with every secret in it redacted (the same object when clean)."""
        redacted, hits = self.lint.redact(value)
        if hits:
            self.report(Redaction(where, len(hits), tuple(sorted(set(hits)))))
        return redacted

    def generation(self) -> int:
        """Changes when the lint learns a secret (never 0: credential shapes are always
        looked for): what :meth:`value` found clean stays clean while it stays."""
        return len(self.lint.known_values) + 1

    def payload(self, event_type: str, payload: Any) -> tuple[Any, Redaction | None]:
        """An event payload with every finding redacted, and what was (``None`` when it
        was clean); the caller publishes the event first, then the report."""
        redacted, hits = self.lint.redact(payload)
        if not hits:
            return payload, None
        return redacted, Redaction(f"event {event_type}", len(hits), tuple(sorted(set(hits))))

    def messages(self, history: tuple[AgentMessage, ...],
                 messages: tuple[AgentMessage, ...]) -> tuple[AgentMessage, ...]:
        """Messages about to be appended to ``history``, redacted (secrets and shapes)."""
        out = list(messages)
        changed = False
        first_index = len(history)
        for offset, message in enumerate(out):
            redacted, hits = self.lint.redact(message)
            if hits:
                out[offset] = redacted
                changed = True
                self.report(Redaction(f"history[{first_index + offset}]", len(hits), tuple(sorted(set(hits)))))
        if out and self.checked_from(history) == first_index:
            self._checked = (first_index + len(out), out[-1], len(self.lint.known_values))
        return tuple(out) if changed else messages

    def checked_from(self, history: tuple[AgentMessage, ...]) -> int:
        """Where the unchecked part of ``history`` starts (0 after a secret was learnt,
        or when history is not the one checked, e.g. a state loaded in its place)."""
        count, last, known = self._checked
        if known != len(self.lint.known_values) or count > len(history):
            return 0
        if count and history[count - 1] is not last:
            return 0
        return count

    def mark_checked(self, history: tuple[AgentMessage, ...]) -> None:
        """All of ``history`` was checked with the secrets known now."""
        self._checked = (len(history), history[-1] if history else None, len(self.lint.known_values))

    def result(self, result: AgentRunResult) -> AgentRunResult:
        """A run's result with its final message and error redacted."""
        updates: dict[str, Any] = {}
        if result.final_message is not None:
            message = self.value(result.final_message, "run result final_message")
            if message is not result.final_message:
                updates["final_message"] = message
        if result.error is not None:
            error = self.error(result.error, "run result error")
            if error is not result.error:
                updates["error"] = error
        return dataclasses.replace(result, **updates) if updates else result

    def error(self, error: ArkError, where: str) -> ArkError:
        """``error`` itself when clean, else a copy with its message (and provider code)
        redacted, and no traceback or chained exceptions (they may hold the original)."""
        message, hits = self.lint.redact_text(error.message)
        code, code_hits = self.lint.redact_text(error.provider_code) if error.provider_code else (None, [])
        hits = hits + code_hits
        if not hits:
            return error
        self.report(Redaction(where, len(hits), tuple(sorted(set(hits)))))
        return ArkError(error.layer, error.code, message, error.retryability, status_code=error.status_code,
                        provider_code=code)

    def chunk_guard(self) -> ChunkGuard:
        """A guard for one model call's streamed text."""
        return ChunkGuard(self)

    def report(self, redaction: Redaction) -> None:
        """Publish ``secret.redacted`` for ``redaction`` (its payload holds no secret)."""
        self._emit(EventTypes.SECRET_REDACTED, redaction.to_payload())


class ChunkGuard:
    """Redacts configured secrets from one model call's streamed text, also when a secret
    is split across chunks (see the module docstring for what that guarantees).

    ``feed(kind, text)`` returns what may be published now (possibly ``""``);
    ``flush(kind)`` returns what is still held at the end of the stream.
    """

    __slots__ = ("_lint", "_redactor", "_held", "_secrets", "_prefixes", "_ends", "_long")

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._lint = redactor.lint
        self._held: dict[str, str] = {}
        self._secrets: tuple[str, ...] = ()
        self._prefixes: tuple[str, ...] = ()
        self._ends: frozenset[str] = frozenset()
        self._long: tuple[str, ...] = ()

    def feed(self, kind: str, text: str) -> str:
        secrets = self._lint.known_values
        if not secrets:  # the common case: no secret configured, only shapes to look for
            held = self._held
            if held:
                text = held.pop(kind, "") + text
            elif _SHAPE_ANCHOR.search(text) is None:
                return text  # most chunks: nothing held, nothing a shape starts with
            return self._shapes(kind, text, 0)
        if secrets is not self._secrets:  # learnt a key: every proper prefix, for endswith()
            self._secrets = secrets
            short = [secret for secret in secrets if len(secret) <= _PREFIX_LIMIT]
            self._prefixes = tuple({secret[:size] for secret in short for size in range(1, len(secret))})
            # The characters a proper prefix can end with: most chunks end with another.
            self._ends = frozenset(prefix[-1] for prefix in self._prefixes)
            self._long = tuple(secret for secret in secrets if len(secret) > _PREFIX_LIMIT)
        held = self._held
        if held:
            pending = held.pop(kind, "")
            text = pending + text
        count = 0
        for secret in secrets:
            if secret in text:
                count += text.count(secret)
                text = text.replace(secret, REDACTED)
        if count:
            self._redactor.report(Redaction("event llm.chunk", count, ("configured secret",)))
        keep = 0
        if text and text[-1] in self._ends and text.endswith(self._prefixes):
            keep = max(len(prefix) for prefix in self._prefixes if text.endswith(prefix))
        if self._long:
            keep = max(keep, _held_suffix(text, self._long))
        return self._shapes(kind, text, keep)

    def _shapes(self, kind: str, text: str, keep: int) -> str:
        """``text`` less its last ``keep`` characters, or more if its end may be the start
        of a credential shape (held for ``kind``), with the shapes it completes redacted."""
        # Every shape and every start of one held holds one of these: most chunks none.
        shaped = _SHAPE_ANCHOR.search(text) is not None
        if shaped:
            match = _SHAPE_START.search(text, max(0, len(text) - _SHAPE_HOLD))
            if match is not None:
                keep = max(keep, len(text) - match.start())
        if keep:
            self._held[kind] = text[-keep:]
            text = text[:-keep]
        return self._redact_shapes(text) if shaped else text

    def _redact_shapes(self, text: str) -> str:
        if len(text) < 19:
            return text
        redacted, hits = self._lint.redact_text(text)
        if hits:
            self._redactor.report(Redaction("event llm.chunk", len(hits), tuple(sorted(set(hits)))))
        return redacted

    def flush(self, kind: str) -> str:
        """The text still held for ``kind`` (never a whole known secret; a credential
        shape it completes is redacted)."""
        return self._redact_shapes(self._held.pop(kind, ""))


def _held_suffix(text: str, secrets: tuple[str, ...]) -> int:
    """The length of the longest end of ``text`` that is a proper prefix of a secret."""
    longest = 0
    size = len(text)
    for secret in secrets:
        first = secret[0]
        # Only the last len(secret) - 1 characters can start an unfinished secret.
        position = text.find(first, max(0, size - len(secret) + 1))
        while position != -1 and size - position > longest:
            if secret.startswith(text[position:]):
                longest = size - position
                break
            position = text.find(first, position + 1)
    return longest


def publish_foreign(rt: AgentRuntime, event: AgentEvent) -> None:
    """Publish another runtime's event (a sub-agent's) on ``rt``'s bus, its payload through
    ``rt``'s redactor first: the child redacted it with what it knew, the parent may know
    more (a key it learnt after the child was built)."""
    redactor = rt._redactor
    payload, redaction = redactor.payload(f"{event.type} (sub-agent)", event.payload)
    if redaction is not None:
        event = AgentEvent(event.event_id, event.type, event.session_id, event.run_id, event.sequence,
                           event.timestamp, freeze_payload(payload), event.parent_run_id, event.parent_call_id)
    rt.bus.publish(event)
    if redaction is not None:
        redactor.report(redaction)


async def learn_model_secrets(rt: AgentRuntime) -> None:
    """Have the model resolve a key it has not resolved yet (``resolve_secrets``), so the
    redactor knows it before the run publishes or saves anything: a run continued after an
    approval or a restore runs tools, which may echo the key, before its first model call.

    Best effort: a key that cannot be resolved now fails the run's model call, which
    reports it properly (as the run's error).
    """
    resolve = getattr(rt.model, "resolve_secrets", None)
    if not callable(resolve):
        return
    try:
        await resolve()
    except Exception:  # the model call raises it again, where the run reports it
        pass


def lint_before_save(rt: AgentRuntime, state: AgentState, *, in_memory: bool = True) -> AgentState:
    """The save-time lint, the last line: ``state`` (about to be saved) with every finding
    redacted, each reported by a ``secret.redacted`` event.

    Args:
        in_memory: ``state`` is the runtime's own state: it is replaced by the redacted
            one at once. Otherwise (a decision's candidate state, which becomes the
            runtime's only once saved) the caller keeps the returned state.

    Only the messages added since the last lint and the small rest of the state are
    scanned (history only grows). Raises ``secret_in_state`` only for a finding that no
    single string holds, which cannot be redacted.
    """
    redactor = rt._redactor
    state, redactions = rt.secret_lint.redact_state(state, history_from=redactor.checked_from(state.history))
    redactor.mark_checked(state.history)
    if not redactions:
        return state
    if any(r.where in ("loop_window", "loop_forgiven") for r in redactions):
        # A call's arguments held a secret: the detector keeps the redacted signatures,
        # or the next save would write the secret again.
        rt.loop_detector.restore(state.loop_window, state.loop_forgiven)
    if in_memory:
        rt._state = state
    for redaction in redactions:
        redactor.report(redaction)
    state = state.model_copy(update={"event_sequence": rt._seq})  # the reports used sequence numbers
    if in_memory:
        rt._state = state
    return state
