"""Grades and graders: the value a check returns, and ``@ev.grader`` for your own checks (DESIGN §11).

A grader is any object with a ``name`` and ``async __call__(case, result) -> Grade``.
:func:`grader` turns a plain function (sync or async) returning a bool, a float in
[0, 1] or a :class:`Grade` into one. A grader that raises, or returns something else,
gives an *errored* grade carrying the exception text: the case is then ``errored``,
never silently passed, and the suite goes on.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from ..domain import invalid_argument

if TYPE_CHECKING:
    from .case import Case, CaseResult

__all__ = ["FunctionGrader", "Grade", "Grader", "grade_safely", "grader", "grader_name"]


@dataclass(frozen=True, slots=True)
class Grade:
    """The outcome of one grader on one case.

    Attributes:
        name: the grader's name.
        passed: whether the check passed.
        score: in [0, 1] (1 for a pass of a yes/no check).
        explanation: why, in a sentence (shown in reports).
        error: set when the grader itself failed (raised, or its verdict could not be
            read); such a grade never passes and makes its case ``errored``.

    Example:
        >>> Grade("polite", True, 1.0, "says please")
        Grade(name='polite', passed=True, score=1.0, explanation='says please', error=None)
    """

    name: str
    passed: bool
    score: float
    explanation: str = ""
    error: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise invalid_argument(f"Grade name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.passed, bool):
            raise invalid_argument(f"Grade passed must be a bool, got {self.passed!r}")
        score = self.score
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score) \
                or not 0.0 <= score <= 1.0:
            raise invalid_argument(f"Grade score must be a number in [0, 1], got {score!r}")
        object.__setattr__(self, "score", float(score))
        if not isinstance(self.explanation, str):
            object.__setattr__(self, "explanation", str(self.explanation))
        if self.error is not None and self.passed:
            raise invalid_argument("an errored Grade cannot pass")

    @property
    def errored(self) -> bool:
        """True when the grader failed rather than the case."""
        return self.error is not None

    @classmethod
    def failure(cls, name: str, error: str) -> Grade:
        """An errored grade: the grader could not judge (it raised, or its answer was unreadable)."""
        return cls(name=name, passed=False, score=0.0, explanation=error, error=error)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what reports store)."""
        return {"name": self.name, "passed": self.passed, "score": self.score, "explanation": self.explanation,
                "error": self.error}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Grade:
        """Rebuild from :meth:`to_dict` output."""
        return cls(name=data["name"], passed=data["passed"], score=data["score"],
                   explanation=data.get("explanation", ""), error=data.get("error"))


class Grader:
    """Base class of the built-in graders: a ``name`` and ``async __call__(case, result) -> Grade``.

    Subclass it (or use :func:`grader`) for checks of your own.
    """

    name: str = "grader"

    async def __call__(self, case: Case, result: CaseResult) -> Grade:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<grader {self.name}>"


def _from_value(name: str, value: Any, threshold: float) -> Grade:
    """A bool, a number or a Grade as a Grade; anything else raises ``TypeError``/``ValueError``."""
    if isinstance(value, Grade):
        return value
    if isinstance(value, bool):
        return Grade(name, value, 1.0 if value else 0.0, "true" if value else "false")
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"returned the score {value!r}, outside [0, 1]")
        passed = value >= threshold
        return Grade(name, passed, float(value), f"score {value:g} {'>=' if passed else '<'} threshold {threshold:g}")
    if value is None:
        raise TypeError("returned None; return a bool, a float in [0, 1] or an ev.Grade")
    raise TypeError(f"returned a {type(value).__name__}; return a bool, a float in [0, 1] or an ev.Grade")


class FunctionGrader(Grader):
    """A grader made from a function by :func:`grader`."""

    def __init__(self, fn: Callable[..., Any], *, threshold: float = 0.5, name: str | None = None) -> None:
        if not callable(fn):
            raise invalid_argument(f"@ev.grader decorates a function (case, result) -> bool | float | Grade, "
                                   f"got {type(fn).__name__}")
        _check_threshold(threshold)
        self.fn = fn
        self.threshold = float(threshold)
        self.name = name or getattr(fn, "__name__", None) or "grader"
        self.__doc__ = getattr(fn, "__doc__", None)

    async def __call__(self, case: Case, result: CaseResult) -> Grade:
        value = self.fn(case, result)
        if inspect.isawaitable(value):
            value = await value
        return _from_value(self.name, value, self.threshold)

    def __repr__(self) -> str:
        return f"<grader {self.name} threshold={self.threshold:g}>"


@overload
def grader(fn: Callable[..., Any], /) -> FunctionGrader: ...


@overload
def grader(*, threshold: float = 0.5, name: str | None = None) -> Callable[[Callable[..., Any]], FunctionGrader]: ...


def grader(fn: Callable[..., Any] | None = None, /, *, threshold: float = 0.5,
           name: str | None = None) -> FunctionGrader | Callable[[Callable[..., Any]], FunctionGrader]:
    """Turn ``fn(case, result)`` (sync or async) into a grader.

    ``fn`` returns a bool (passes when true, score 1 or 0), a float (the score; passes
    at or above ``threshold``) or a :class:`Grade`.

    Example:
        >>> @ev.grader
        ... def short_answer(case, result):
        ...     return len(result.final_text) < 200
        >>> @ev.grader(threshold=0.8)
        ... async def overlap(case, result):
        ...     return jaccard(result.final_text, case.metadata["reference"])
    """
    if fn is not None:
        return FunctionGrader(fn, threshold=threshold, name=name)
    _check_threshold(threshold)  # at the decorator line, not when the decorated function is defined
    return lambda inner: FunctionGrader(inner, threshold=threshold, name=name)


def _check_threshold(threshold: Any) -> None:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 <= threshold <= 1.0:
        raise invalid_argument(f"threshold must be a number in [0, 1], got {threshold!r}")


def grader_name(g: Any) -> str:
    """A grader's name, even for an object that forgot to set one."""
    name = getattr(g, "name", None)
    return name if isinstance(name, str) and name else type(g).__name__


async def grade_safely(g: Callable[..., Awaitable[Any]], case: Case, result: CaseResult) -> Grade:
    """Run one grader; its exception or wrong return becomes an errored grade with the text."""
    name = grader_name(g)
    try:
        value = g(case, result)
        if inspect.isawaitable(value):
            value = await value
        if not isinstance(value, Grade):
            # A hand-written grader object: accept the same values @ev.grader does.
            value = _from_value(name, value, 0.5)
        return value
    except Exception as exc:  # a grader bug must not stop the suite (DESIGN §11)
        return Grade.failure(name, f"{type(exc).__name__}: {exc}")
