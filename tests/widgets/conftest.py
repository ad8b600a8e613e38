"""A fake front end (captured messages), fake timers and a fake runtime for widget tests."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable

import pytest

from arknb.domain import AgentMessage, ToolCall
from arknb.events import AgentEvent, EventBus


class FakeTimers:
    """An injectable clock and ``call_later`` that run only when the test advances time."""

    def __init__(self) -> None:
        self.now = 0.0
        self._timers: list[list[Any]] = []

    def clock(self) -> float:
        return self.now

    def call_later(self, delay: float, callback: Callable[[], None]) -> Any:
        entry = [self.now + delay, callback, False]
        self._timers.append(entry)
        return SimpleNamespace(cancel=lambda: entry.__setitem__(2, True))

    def advance(self, dt: float) -> None:
        target = self.now + dt
        while True:
            due = sorted((t for t in self._timers if not t[2] and t[0] <= target), key=lambda t: t[0])
            if not due:
                break
            entry = due[0]
            self._timers.remove(entry)
            self.now = max(self.now, entry[0])
            entry[1]()
        self._timers = [t for t in self._timers if not t[2]]
        self.now = target

    @property
    def pending(self) -> int:
        return sum(1 for t in self._timers if not t[2])


class Frontend:
    """Captures what a widget sends: custom messages and snapshots of a trait."""

    def __init__(self, widget: Any, trait: str | None = None) -> None:
        self.messages: list[dict[str, Any]] = []
        self.trait_updates: list[Any] = []
        widget.send = lambda content, buffers=None: self.messages.append(content)
        if trait:
            widget.observe(lambda change: self.trait_updates.append(change["new"]), names=[trait])

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("type") == kind]


class BufferedFrontend(Frontend):
    """A fake front end that keeps each message's binary buffers (``_buffers``) and
    decodes the timeline's ``events`` messages (column batches)."""

    def __init__(self, widget: Any) -> None:
        super().__init__(widget)
        widget.send = lambda content, buffers=None: self.messages.append({**content, "_buffers": buffers or []})

    def received(self) -> list[dict[str, Any]]:
        from arknb.widgets._timeline_wire import decode

        return [e for m in self.of_type("events") for e in decode(m["events"], m["_buffers"])]


class Events:
    """Builds envelopes with increasing sequence numbers."""

    def __init__(self, timers: FakeTimers | None = None) -> None:
        self._seq = itertools.count(1)
        self.timers = timers

    def __call__(self, etype: str, run_id: str = "r1", **payload: Any) -> AgentEvent:
        seq = next(self._seq)
        t = self.timers.now if self.timers else float(seq)
        return AgentEvent(type=etype, session_id="s", run_id=run_id, sequence=seq, timestamp=t,
                          payload=payload, event_id=f"ev{seq}")


def call_dict(cid: str, name: str, args: str = "{}") -> dict[str, Any]:
    return ToolCall(id=cid, name=name, arguments_json=args).model_dump(mode="json")


def msg_dict(message: AgentMessage) -> dict[str, Any]:
    return message.model_dump(mode="json")


@dataclass
class Decision:
    ok: bool
    approval_id: str
    decision: str = ""
    all_decided: bool = False
    error: Any = None


@dataclass
class FakeItem:
    approval_id: str
    tool_call: ToolCall
    risk_level: str = "dangerous"
    reason: str = "dangerous tool"
    decision: str = "pending"
    deny_reason: str | None = None

    def model_dump(self, mode: str = "json") -> dict[str, Any]:
        return {"approval_id": self.approval_id, "tool_call": self.tool_call.model_dump(mode="json"),
                "risk_level": self.risk_level, "reason": self.reason, "decision": self.decision,
                "deny_reason": self.deny_reason}


class FakeController:
    def __init__(self) -> None:
        self.items: list[FakeItem] = []
        self.calls: list[tuple[Any, ...]] = []
        self.fail_with: Any = None

    def list_pending_approvals(self) -> list[FakeItem]:
        return list(self.items)

    async def approve(self, approval_id: str) -> Decision:
        return self._decide(("approve", approval_id), approval_id, "approved", None)

    async def deny(self, approval_id: str, reason: str | None = None) -> Decision:
        return self._decide(("deny", approval_id, reason), approval_id, "denied", reason)

    def _decide(self, record: tuple[Any, ...], approval_id: str, decision: str, reason: str | None) -> Decision:
        self.calls.append(record)
        if self.fail_with is not None:
            return Decision(False, approval_id, error=self.fail_with)
        for i, item in enumerate(self.items):
            if item.approval_id == approval_id:
                self.items[i] = FakeItem(item.approval_id, item.tool_call, decision=decision, deny_reason=reason)
                return Decision(True, approval_id, decision)
        return Decision(False, approval_id, error=SimpleNamespace(code="approval_not_found", message=approval_id))


@dataclass
class FakeRuntime:
    """The surface of AgentRuntime the widgets use (DESIGN §0, §7)."""

    bus: EventBus = field(default_factory=EventBus)
    controller: FakeController = field(default_factory=FakeController)
    state: Any = field(default_factory=lambda: SimpleNamespace(history=(), pending_approval=None))
    is_running: bool = False
    session_id: str = "s"
    started: list[str] = field(default_factory=list)
    refuse_with: BaseException | None = None
    cancelled: int = 0
    suspends: int = 0
    resumes: int = 0

    def start(self, text: str) -> Any:
        if self.refuse_with is not None:
            raise self.refuse_with
        self.started.append(text)
        return SimpleNamespace(done=False)

    def cancel(self) -> None:
        self.cancelled += 1

    def request_suspend(self) -> None:
        self.suspends += 1

    def start_resume(self) -> None:
        self.resumes += 1


@pytest.fixture
def timers() -> FakeTimers:
    return FakeTimers()


@pytest.fixture
def ev(timers: FakeTimers) -> Events:
    return Events(timers)


@pytest.fixture
def runtime() -> FakeRuntime:
    return FakeRuntime()
