"""The compressor's per-message bookkeeping: token counts, digests and safe cut points.

A model request is the leading system messages plus the conversation. Between two
calls the conversation only grows (history is append-only), and its messages are the
same objects, so :class:`MessageCosts` keeps one entry per message, matched by
identity, and recounts only messages it has not seen: deciding whether a request on a
1,000-message history fits costs an identity walk and a subtraction, not 1,000 counts.
"""

from __future__ import annotations

import hashlib
from typing import Callable, Sequence

from ..domain import AgentMessage, ArkError, ErrorLayer, ErrorCode, Role

__all__ = ["MessageCosts", "message_digest", "range_digest", "safe_cuts"]


def message_digest(message: AgentMessage) -> bytes:
    """sha256 of a message's canonical JSON (what a summary's source version is built from)."""
    return hashlib.sha256(message.model_dump_json(exclude_defaults=True).encode("utf-8")).digest()


def range_digest(digests: Sequence[bytes]) -> str:
    """The hex digest of a range of messages, from their message digests."""
    h = hashlib.sha256()
    for d in digests:
        h.update(d)
    return h.hexdigest()


class MessageCosts:
    """Token counts (and, on demand, digests) of the conversation of the last request."""

    __slots__ = ("_count", "_messages", "_prefix", "_digests", "counted")

    def __init__(self, count: Callable[[AgentMessage], int]) -> None:
        self._count = count
        self._messages: list[AgentMessage] = []
        self._prefix: list[int] = [0]
        self._digests: list[bytes | None] = []
        self.counted = 0
        """How many messages were counted so far (for tests and benchmarks)."""

    def sync(self, conversation: Sequence[AgentMessage]) -> int:
        """Match the entries to ``conversation``; returns the first index that changed."""
        messages = self._messages
        shared = min(len(messages), len(conversation))
        i = 0
        while i < shared and messages[i] is conversation[i]:
            i += 1
        if i < len(messages):
            del messages[i:]
            del self._prefix[i + 1:]
            del self._digests[i:]
        prefix = self._prefix
        for message in conversation[i:]:
            messages.append(message)
            prefix.append(prefix[-1] + self.count(message))
            self._digests.append(None)
        return i

    def count(self, message: AgentMessage) -> int:
        """Count one message with the configured counter, checking what it returns."""
        value = self._count(message)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT,
                           f"count_tokens must return an int >= 0 for a message, got {value!r}")
        self.counted += 1
        return value

    def __len__(self) -> int:
        return len(self._messages)

    def tokens(self, start: int = 0, end: int | None = None) -> int:
        """Estimated tokens of messages ``start`` to ``end - 1``."""
        end = len(self._messages) if end is None else end
        return self._prefix[end] - self._prefix[start]

    def cost(self, index: int) -> int:
        """Estimated tokens of message ``index``."""
        return self._prefix[index + 1] - self._prefix[index]

    def digest(self, start: int, end: int) -> str:
        """The source version of messages ``start`` to ``end - 1`` (digests cached per message)."""
        digests = self._digests
        for i in range(start, end):
            if digests[i] is None:
                digests[i] = message_digest(self._messages[i])
        return range_digest(digests[start:end])  # type: ignore[arg-type]


def safe_cuts(conversation: Sequence[AgentMessage]) -> list[bool]:
    """``safe[i]``: may the summary replace messages ``0..i-1`` and keep ``i..``?

    A cut is unsafe where it would split an assistant's tool calls from their results
    (the orphaned tool calls other compaction tools are known for), or leave a tool
    message at the start of what is kept. ``safe`` has ``len(conversation) + 1`` entries.
    """
    n = len(conversation)
    issued: dict[str, int] = {}
    unsafe_from = [0] * (n + 2)  # difference array over cut positions
    for j, message in enumerate(conversation):
        if message.role is Role.ASSISTANT:
            for call in message.tool_calls:
                issued[call.id] = j
        elif message.role is Role.TOOL:
            p = issued.get(message.tool_call_id or "")
            start = p + 1 if p is not None else j
            # Cuts p+1..j would put the call before the cut and its result after it.
            unsafe_from[start] += 1
            unsafe_from[j + 1] -= 1
    safe: list[bool] = []
    running = 0
    for i in range(n + 1):
        running += unsafe_from[i]
        safe.append(running == 0)
    return safe
