"""arknb.eval: record/replay, graders, suites, reports, traces and OpenTelemetry (DESIGN §11).

``import arknb.eval as ev``. This module depends on the core one way: nothing in
``arknb`` imports it (seed 003 §2), and it needs nothing beyond the core's
dependencies except the optional ``arknb[otel]`` extra for :mod:`arknb.eval.otel`.

Example:
    >>> import arknb.eval as ev
    >>> case = ev.Case("capital", "What is the capital of France?", graders=[ev.contains("Paris")])
    >>> report = await ev.run_suite([case], make_runtime)   # doctest: +SKIP
"""

from . import trace
from .case import Case, CaseResult
from .cassettes import ForkedModel, Recorder, ReplayModel, fork
from .compare import CaseChange, Comparison, compare
from .divergence import Divergence, first_divergence
from .graders import contains, exact, json_schema, max_turns, output_is, regex, stop_reason, tool_called, trajectory
from .grading import Grade, Grader, grader
from .judge import llm_judge
from .report import CaseRow, RunRecord, SuiteReport
from .simulated_user import SimulatedUser, simulated_user
from .suite import rescore, run_suite


def __getattr__(name: str):
    # ev.otel imports OpenTelemetry (the optional extra); load it only when asked for.
    if name == "otel":
        import importlib

        return importlib.import_module(".otel", __name__)
    raise AttributeError(f"module 'arknb.eval' has no attribute {name!r}")


__all__ = [
    # record and replay
    "ForkedModel", "Recorder", "ReplayModel", "fork", "Divergence", "first_divergence",
    # graders
    "Grade", "Grader", "grader", "contains", "exact", "json_schema", "llm_judge", "output_is", "max_turns", "regex",
    "stop_reason", "tool_called", "trajectory",
    # suites and reports
    "Case", "CaseResult", "SimulatedUser", "simulated_user", "run_suite", "rescore", "CaseRow", "RunRecord",
    "SuiteReport", "CaseChange", "Comparison", "compare",
    # traces
    "trace", "otel",
]
