"""Loop detection: the same tool call again and again ends the run (seed 000 §14, 003 §4.1)."""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from typing import Awaitable, Callable, Iterable, Literal

from ..domain import ToolCall, invalid_argument
from ..domain.json_decode import decode_json

__all__ = ["LoopDetector", "LoopHit", "tool_signature"]


def tool_signature(call: ToolCall) -> str:
    """Tool name plus the canonical JSON of its arguments (sorted keys, no spaces).

    Arguments that are not valid JSON (or nest too deeply to be read) are compared as
    the raw text.
    """
    try:
        canonical = json.dumps(decode_json(call.arguments_json or "{}"), sort_keys=True,
                               separators=(",", ":"), ensure_ascii=False)
    except (ValueError, RecursionError):  # JSONTooDeepError is a ValueError
        canonical = call.arguments_json
    return f"{call.name}:{canonical}"


@dataclass(frozen=True, slots=True)
class LoopHit:
    """A detected loop: which call, how often within the window."""

    signature: str
    tool: str
    count: int
    window: int
    threshold: int

    @property
    def message(self) -> str:
        return (f"tool call {self.signature} repeated {self.count} times in the last "
                f"{self.window} calls (threshold {self.threshold})")


Diagnose = Callable[[LoopHit, tuple], Awaitable[str]]


class LoopDetector:
    """Counts tool-call signatures in a sliding window.

    Args:
        threshold: how many identical calls within the window count as a loop (default 3).
        window: how many recent calls to remember (default 8).
        on_detect: ``"stop"`` ends the run with ``loop_detected``; ``"ask"`` turns the
            loop into a pending decision a human approves (continue) or denies (stop).
        diagnose: optional ``async (hit, history) -> str`` that explains the loop (e.g. by
            asking a model); if it fails, the plain message is used.

    Example:
        >>> detector = LoopDetector(threshold=3, window=8, on_detect="ask")
    """

    def __init__(self, threshold: int = 3, window: int = 8, *,
                 on_detect: Literal["stop", "ask"] = "stop", diagnose: Diagnose | None = None,
                 enabled: bool = True) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 2:
            raise invalid_argument(f"LoopDetector threshold must be an int >= 2, got {threshold!r}")
        if isinstance(window, bool) or not isinstance(window, int) or window < threshold:
            raise invalid_argument(f"LoopDetector window must be an int >= threshold ({threshold}), got {window!r}")
        if on_detect not in ("stop", "ask"):
            raise invalid_argument(f"LoopDetector on_detect must be 'stop' or 'ask', got {on_detect!r}")
        if diagnose is not None and not callable(diagnose):
            raise invalid_argument("LoopDetector diagnose must be an async callable or None")
        if not isinstance(enabled, bool):
            raise invalid_argument(f"LoopDetector enabled must be a bool, got {enabled!r}")
        self.threshold = threshold
        self.window = window
        self.on_detect = on_detect
        self.diagnose = diagnose
        self.enabled = enabled
        self._recent: deque[str] = deque(maxlen=window)
        self._forgiven: set[str] = set()

    def reset(self) -> None:
        """Forget every call seen (at the start of a run with new input)."""
        self._recent.clear()
        self._forgiven.clear()

    def forgive(self, signature: str) -> None:
        """A human said this repetition is fine: stop counting it."""
        self._forgiven.add(signature)

    def observe(self, calls: Iterable[ToolCall]) -> LoopHit | None:
        """Record ``calls``; return the first loop found, if any."""
        if not self.enabled:
            return None
        hit: LoopHit | None = None
        for call in calls:
            signature = tool_signature(call)
            self._recent.append(signature)
            if hit is None and signature not in self._forgiven:
                count = self._recent.count(signature)
                if count >= self.threshold:
                    hit = LoopHit(signature, call.name, count, self.window, self.threshold)
        return hit

    async def explain(self, hit: LoopHit, history: tuple) -> str:
        """The diagnose callback's explanation, or the plain message if it fails."""
        if self.diagnose is None:
            return hit.message
        try:
            text = await self.diagnose(hit, history)
        except Exception as exc:
            return f"{hit.message} (diagnosis failed: {type(exc).__name__}: {exc})"
        return str(text) if text else hit.message

    def snapshot(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(recent signatures, forgiven signatures): what a saved state keeps."""
        return tuple(self._recent), tuple(sorted(self._forgiven))

    def restore(self, recent: Iterable[str], forgiven: Iterable[str]) -> None:
        """Continue counting from a saved :meth:`snapshot` (after a restore)."""
        self._recent.clear()
        self._recent.extend(recent)
        self._forgiven = set(forgiven)
