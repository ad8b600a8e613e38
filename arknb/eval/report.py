"""SuiteReport: what a suite run found, one row per case (DESIGN §11).

A report keeps, for every run of every case, the grades, how the run ended and its
events (in an anonymous temporary file, so a large suite does not fill memory). It
renders as a sortable HTML table in a notebook, as Markdown in a terminal, and saves
to / loads from JSONL; :func:`~arknb.eval.rescore` grades the saved runs again.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..domain import Usage, invalid_argument
from ..events import AgentEvent
from ._event_codec import event_from_dict
from ._spool import EventSpool, SpoolRef
from .case import CaseResult
from .grading import Grade

__all__ = ["CaseRow", "CaseStatus", "RunRecord", "SuiteReport"]

CaseStatus = Literal["passed", "failed", "errored"]


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run of one case as the report keeps it (its events are in the report's spool)."""

    repeat: int
    status: CaseStatus
    grades: tuple[Grade, ...]
    stop_reason: str | None
    final_text: str
    turns: int
    tool_calls: int
    usage: Usage
    latency_s: float
    error: str | None
    run_error: dict[str, Any] | None
    case_error: str | None = None
    """What escaped the case itself (make_runtime, a timeout, a bug); ``error`` may also name a grader."""
    events_ref: SpoolRef = (0, 0)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form (without the events)."""
        return {"repeat": self.repeat, "status": self.status, "grades": [g.to_dict() for g in self.grades],
                "stop_reason": self.stop_reason, "final_text": self.final_text, "turns": self.turns,
                "tool_calls": self.tool_calls, "usage": self.usage.model_dump(), "latency_s": self.latency_s, "error": self.error,
                "case_error": self.case_error, "run_error": self.run_error}


@dataclass(frozen=True, slots=True)
class CaseRow:
    """One case of a report.

    Attributes:
        name: the case's name.
        status: ``"passed"`` (every run passed), ``"errored"`` (a run raised, failed
            to run, or a grader errored) or ``"failed"``.
        grades: one per grader; with repeats, a grade passes when it passed in every
            run and its score is the mean.
        turns, tool_calls, tokens, latency_s: per run (the mean with repeats).
        stop_reason: how the (last) run ended.
        error: the first error, if any.
        passes: how many runs passed, out of ``runs``.
    """

    name: str
    status: CaseStatus
    grades: tuple[Grade, ...]
    turns: int
    tool_calls: int
    tokens: int | None
    """Tokens per run; None when a server sent no usage for some call (unknown, not 0)."""
    latency_s: float
    stop_reason: str | None
    error: str | None
    passes: int
    runs: int

    @property
    def flaky(self) -> bool:
        """Some runs passed and some did not."""
        return 0 < self.passes < self.runs

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form."""
        return {"name": self.name, "status": self.status, "grades": [g.to_dict() for g in self.grades],
                "turns": self.turns, "tool_calls": self.tool_calls, "tokens": self.tokens,
                "latency_s": self.latency_s, "stop_reason": self.stop_reason, "error": self.error,
                "passes": self.passes, "runs": self.runs}


def _aggregate_grades(runs: list[RunRecord]) -> tuple[Grade, ...]:
    # Every run of a case is graded by the same list of graders, so grades line up by
    # position, not by name: two graders may share a name (two ``contains`` of one text).
    by_position: list[list[Grade]] = []
    for run in runs:
        for i, grade in enumerate(run.grades):
            if i == len(by_position):
                by_position.append([])
            by_position[i].append(grade)
    out = []
    for grades in by_position:
        name = grades[0].name
        if len(runs) == 1:
            out.append(grades[0])
            continue
        errored = next((g for g in grades if g.error is not None), None)
        failing = next((g for g in grades if not g.passed), None)
        passed = failing is None and len(grades) == len(runs)
        explanation = (failing or grades[0]).explanation
        if len(runs) > 1:
            explanation = f"passed {sum(g.passed for g in grades)}/{len(runs)}: {explanation}"
        out.append(Grade(name, passed, statistics.fmean(g.score for g in grades), explanation,
                         errored.error if errored is not None else None))
    return tuple(out)


def build_row(name: str, runs: list[RunRecord]) -> CaseRow:
    """The row summarising a case's runs."""
    statuses = [r.status for r in runs]
    status: CaseStatus = "passed" if all(s == "passed" for s in statuses) else (
        "errored" if "errored" in statuses else "failed")
    n = len(runs)
    return CaseRow(name=name, status=status, grades=_aggregate_grades(runs),
                   turns=round(sum(r.turns for r in runs) / n), tool_calls=round(sum(r.tool_calls for r in runs) / n),
                   tokens=round(sum(r.usage.total_tokens for r in runs) / n)
                   if all(r.usage.reported for r in runs) else None,
                   latency_s=sum(r.latency_s for r in runs) / n, stop_reason=runs[-1].stop_reason,
                   error=next((r.error for r in runs if r.error), None),
                   passes=statuses.count("passed"), runs=n)


@dataclass
class _CaseData:
    name: str
    input: Any
    metadata: Mapping[str, Any]
    runs: list[RunRecord] = field(default_factory=list)


class SuiteReport:
    """The outcome of :func:`~arknb.eval.run_suite` (or of :meth:`from_jsonl`).

    Attributes:
        rows: one :class:`CaseRow` per case, in the suite's order.
        created_at: when the suite ran (ISO 8601, UTC).
    """

    def __init__(self, rows: list[CaseRow], cases: list[_CaseData], spool: EventSpool, *, created_at: str,
                 repeats: int = 1) -> None:
        self.rows = rows
        self._cases = {c.name: c for c in cases}
        self._spool = spool
        self.created_at = created_at
        self.repeats = repeats

    # -- summaries ----------------------------------------------------------------------

    @property
    def passed(self) -> list[CaseRow]:
        """The rows whose every run passed."""
        return [r for r in self.rows if r.status == "passed"]

    @property
    def failed(self) -> list[CaseRow]:
        """The rows with a failing grade (and no error)."""
        return [r for r in self.rows if r.status == "failed"]

    @property
    def errored(self) -> list[CaseRow]:
        """The rows where a run or a grader errored."""
        return [r for r in self.rows if r.status == "errored"]

    @property
    def flaky(self) -> list[CaseRow]:
        """Rows with some passing and some failing runs (with ``repeats > 1``)."""
        return [r for r in self.rows if r.flaky]

    @property
    def pass_rate(self) -> float:
        """The share of runs that passed, in [0, 1] (with one run per case: passed cases / cases)."""
        runs = sum(r.runs for r in self.rows)
        return sum(r.passes for r in self.rows) / runs if runs else 0.0

    def row(self, name: str) -> CaseRow:
        """The row of case ``name``."""
        for row in self.rows:
            if row.name == name:
                return row
        raise invalid_argument(f"no case named {name!r} in this report (cases: {[r.name for r in self.rows]})")

    def case_input(self, name: str) -> Any:
        """The input the case was run with (a string or a list of turns)."""
        self.row(name)
        return self._cases[name].input

    def case_metadata(self, name: str) -> Mapping[str, Any]:
        """The case's metadata."""
        self.row(name)
        return self._cases[name].metadata

    def runs(self, name: str) -> list[RunRecord]:
        """Every run of case ``name`` (one per repeat)."""
        self.row(name)
        return list(self._cases[name].runs)

    def events(self, name: str, repeat: int = 0) -> list[AgentEvent]:
        """The events of one run of case ``name`` (read back from the report's storage)."""
        runs = self.runs(name)
        if not isinstance(repeat, int) or not 0 <= repeat < len(runs):
            raise invalid_argument(f"case {name!r} has {len(runs)} run(s); repeat={repeat!r} is out of range")
        return [event_from_dict(e) for e in self._spool.get(runs[repeat].events_ref)]

    def result(self, name: str, repeat: int = 0) -> CaseResult:
        """One saved run of case ``name`` as the :class:`CaseResult` a grader sees."""
        events = self.events(name, repeat)
        r = self._cases[name].runs[repeat]
        return CaseResult.saved(stop_reason=r.stop_reason, final_text=r.final_text, turns=r.turns, usage=r.usage,
                                latency_s=r.latency_s, error=r.case_error, run_error=r.run_error, events=events,
                                repeat=r.repeat)

    def results(self, name: str) -> list[CaseResult]:
        """Every saved run of case ``name`` as :class:`CaseResult` values."""
        return [self.result(name, i) for i in range(len(self.runs(name)))]

    def _events_json(self, name: str, repeat: int) -> str:
        return self._spool.get_json(self._cases[name].runs[repeat].events_ref)

    # -- output ---------------------------------------------------------------------------

    def summary(self) -> str:
        """One line: counts and pass rate."""
        flaky = f", {len(self.flaky)} flaky" if self.flaky else ""
        return (f"{len(self.rows)} case(s): {len(self.passed)} passed, {len(self.failed)} failed, "
                f"{len(self.errored)} errored{flaky}; pass rate {self.pass_rate:.0%}")

    def to_markdown(self) -> str:
        """The table as GitHub-flavoured Markdown (what the CLI prints)."""
        from ._render import report_markdown

        return report_markdown(self)

    def _repr_html_(self) -> str:
        from ._render import report_html

        return report_html(self)

    def to_jsonl(self, path: str | os.PathLike[str]) -> Path:
        """Save the report (rows, every run's grades and events) as JSONL; returns the path.

        The file is written whole through a temporary file, so an existing report is
        replaced only once the new one is complete.
        """
        from ._report_file import write_report

        return write_report(self, path)

    @classmethod
    def from_jsonl(cls, path: str | os.PathLike[str]) -> SuiteReport:
        """Load a report saved by :meth:`to_jsonl` (``report_corrupt`` names file and line)."""
        from ._report_file import read_report

        return read_report(path)

    def __repr__(self) -> str:
        return f"SuiteReport({self.summary()})"

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)


def new_case_data(name: str, input: Any, metadata: Mapping[str, Any]) -> _CaseData:
    """The report's record of one case (filled with runs as they finish)."""
    return _CaseData(name=name, input=list(input) if isinstance(input, tuple) else input, metadata=dict(metadata))


def rows_for(cases: Iterable[_CaseData]) -> list[CaseRow]:
    """The rows of finished cases, in order."""
    return [build_row(c.name, c.runs) for c in cases]
