"""RunHandle: a run started in the background with ``runtime.start``."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Generator

from .result import AgentRunResult

__all__ = ["RunHandle"]


class RunHandle:
    """A background run. ``await handle`` gives its :class:`AgentRunResult`.

    Example:
        >>> handle = runtime.start("hello")     # doctest: +SKIP
        >>> result = await handle               # doctest: +SKIP
    """

    def __init__(self, task: asyncio.Task, run_id: str, cancel: Callable[[], bool]) -> None:
        self._task = task
        self.run_id = run_id
        self._cancel = cancel

    @property
    def done(self) -> bool:
        """True once the run has ended."""
        return self._task.done()

    @property
    def task(self) -> asyncio.Task:
        """The underlying asyncio task."""
        return self._task

    def cancel(self) -> bool:
        """Cancel the run (final: it ends ``cancelled``). False if it already ended."""
        if self._task.done():
            return False
        return self._cancel()

    def result(self) -> AgentRunResult:
        """The result of a finished run (raises ``asyncio.InvalidStateError`` before)."""
        return self._task.result()

    async def wait(self) -> AgentRunResult:
        """Wait for the result without cancelling the run if the waiter is cancelled."""
        return await asyncio.shield(self._task)

    def __await__(self) -> Generator[Any, None, AgentRunResult]:
        return self.wait().__await__()

    def __repr__(self) -> str:
        return f"RunHandle(run_id={self.run_id!r}, done={self.done})"
