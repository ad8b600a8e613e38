"""``ev.compare``: what changed between a baseline report and a candidate (DESIGN §11).

Cases are matched by name. A *regression* is a case that passed in the baseline and
does not pass now; an *improvement* one that passes now and did not before; every
other case in both is *unchanged* (its statuses are in the :class:`CaseChange`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..domain import invalid_argument
from .report import SuiteReport

__all__ = ["CaseChange", "Comparison", "compare"]


@dataclass(frozen=True, slots=True)
class CaseChange:
    """A case present in both reports, with its status in each."""

    name: str
    baseline_status: str
    candidate_status: str


@dataclass(frozen=True)
class Comparison:
    """The difference between two reports.

    Attributes:
        regressions: passed in the baseline, not now.
        improvements: passes now, did not in the baseline.
        unchanged: every other case present in both.
        added: names of cases only in the candidate.
        removed: names of cases only in the baseline.
    """

    baseline: SuiteReport
    candidate: SuiteReport
    regressions: list[CaseChange]
    improvements: list[CaseChange]
    unchanged: list[CaseChange]
    added: list[str]
    removed: list[str]

    @property
    def has_regressions(self) -> bool:
        """True when some case that passed no longer does."""
        return bool(self.regressions)

    @property
    def pass_rate_delta(self) -> float:
        """Candidate pass rate minus baseline pass rate."""
        return self.candidate.pass_rate - self.baseline.pass_rate

    def summary(self) -> str:
        """One line: the counts and the pass-rate change."""
        return (f"{len(self.regressions)} regression(s), {len(self.improvements)} improvement(s), "
                f"{len(self.unchanged)} unchanged, {len(self.added)} added, {len(self.removed)} removed; "
                f"pass rate {self.baseline.pass_rate:.0%} -> {self.candidate.pass_rate:.0%}")

    def to_markdown(self) -> str:
        """The summary and the changed cases as Markdown."""
        from ._render import comparison_markdown

        return comparison_markdown(self)

    def _repr_html_(self) -> str:
        from ._render import comparison_html

        return comparison_html(self)

    def __repr__(self) -> str:
        return f"Comparison({self.summary()})"


def compare(baseline: SuiteReport, candidate: SuiteReport) -> Comparison:
    """Compare two reports case by case.

    Example:
        >>> before = ev.SuiteReport.from_jsonl("baseline.jsonl")   # doctest: +SKIP
        >>> ev.compare(before, report).has_regressions              # doctest: +SKIP
        False
    """
    for what, report in (("baseline", baseline), ("candidate", candidate)):
        if not isinstance(report, SuiteReport):
            raise invalid_argument(f"compare({what}=...) takes a SuiteReport (from run_suite or "
                                   f"SuiteReport.from_jsonl), got {type(report).__name__}")
    before = {r.name: r for r in baseline.rows}
    after = {r.name: r for r in candidate.rows}
    regressions, improvements, unchanged = [], [], []
    for name, row in after.items():
        old = before.get(name)
        if old is None:
            continue
        change = CaseChange(name, old.status, row.status)
        if old.status == "passed" and row.status != "passed":
            regressions.append(change)
        elif old.status != "passed" and row.status == "passed":
            improvements.append(change)
        else:
            unchanged.append(change)
    return Comparison(baseline=baseline, candidate=candidate, regressions=regressions, improvements=improvements,
                      unchanged=unchanged, added=[n for n in after if n not in before],
                      removed=[n for n in before if n not in after])
