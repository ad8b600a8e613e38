"""Running a suite of cases concurrently on the running loop, and grading saved runs again (DESIGN §11).

``report = await ev.run_suite(cases, make_runtime)`` runs each case on a fresh
runtime, ``concurrency`` at a time, as tasks of the loop it is awaited on (a notebook
cell's loop: nothing here calls ``asyncio.run``). A case that raises, times out or
whose grader raises is ``errored``; it never stops the others. Each finished run's
events go to the report's spool, so memory holds only the cases in flight.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..domain import ArkError, ErrorCode, ErrorLayer, invalid_argument
from ..runtime import StopReason
from ._files import now_iso
from ._progress import make_progress
from ._spool import EventSpool
from .case import Case, CaseResult
from .grading import Grade, grade_safely
from .report import RunRecord, SuiteReport, new_case_data, rows_for

__all__ = ["rescore", "run_suite"]

_CONTINUE = (StopReason.COMPLETED, StopReason.STOPPED)
"""After these a multi-turn case sends its next user turn; any other ending ends the conversation."""


def _check_positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise invalid_argument(f"{what} must be an int >= 1, got {value!r}")
    return value


def _check_cases(cases: Any) -> list[Case]:
    if isinstance(cases, (str, bytes, Case)) or not isinstance(cases, Iterable):
        raise invalid_argument(f"cases must be a list of ev.Case, got {type(cases).__name__}")
    cases = list(cases)
    seen: set[str] = set()
    for i, case in enumerate(cases):
        if not isinstance(case, Case):
            raise invalid_argument(f"cases[{i}] must be an ev.Case, got {type(case).__name__}")
        if case.name in seen:
            raise invalid_argument(f"two cases are named {case.name!r}: reports match cases by name, "
                                   "so names must be unique")
        seen.add(case.name)
    return cases


def _status(result: CaseResult, grades: tuple[Grade, ...]) -> tuple[str, str | None]:
    """(status, error text) of one run."""
    if result.error is not None:
        return "errored", result.error
    errored = next((g for g in grades if g.error is not None), None)
    if errored is not None:
        return "errored", f"grader {errored.name!r}: {errored.error}"
    run = result.run
    if run is not None and run.stop_reason is StopReason.FAILED:
        # The model, a cassette or the storage failed: the run says nothing about the agent.
        return "errored", str(run.error) if run.error is not None else "the run failed"
    if not all(g.passed for g in grades):
        return "failed", None
    return "passed", None


def _describe(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, ArkError) else f"{type(exc).__name__}: {exc}"


async def _close(runtime: Any) -> None:
    aclose = getattr(runtime, "aclose", None)
    if callable(aclose):
        try:
            await aclose()
        except Exception:
            pass  # closing a finished case's runtime must not turn a result into an error


async def _converse(case: Case, runtime: Any, runs: list) -> None:
    for text in case.turns:
        result = await runtime.run(text)
        runs.append(result)
        if result.stop_reason not in _CONTINUE:
            return
    user = case.user
    if user is None:
        return
    for _ in range(user.max_user_turns):
        message = await user.next_message(runtime.history)
        if message is None:
            return
        result = await runtime.run(message)
        runs.append(result)
        if result.stop_reason not in _CONTINUE:
            return


async def _run_once(case: Case, repeat: int, make_runtime: Callable[..., Any], timeout: float | None,
                    spool: EventSpool) -> RunRecord:
    events: list = []
    runs: list = []
    error: str | None = None
    started: float | None = None
    latency = 0.0
    runtime = None
    unsubscribe = None
    try:
        async with asyncio.timeout(timeout):
            try:
                runtime = make_runtime(case)
                if inspect.isawaitable(runtime):
                    runtime = await runtime
            except Exception as exc:
                raise _SetupError(exc) from None
            if not callable(getattr(runtime, "run", None)) or getattr(runtime, "bus", None) is None:
                raise invalid_argument(f"make_runtime must return an AgentRuntime, got {type(runtime).__name__}")
            unsubscribe = runtime.bus.subscribe("*", events.append)
            started = time.perf_counter()
            await _converse(case, runtime, runs)
    except TimeoutError:
        error = str(ArkError(ErrorLayer.RUNTIME, ErrorCode.CASE_TIMEOUT,
                             f"case {case.name!r} ran longer than timeout={timeout:g}s"))
    except _SetupError as exc:
        error = f"make_runtime raised {_describe(exc.cause)}"
    except Exception as exc:  # one case failing must never stop the suite
        error = _describe(exc)
    finally:
        if started is not None:
            latency = time.perf_counter() - started
        if unsubscribe is not None:
            unsubscribe()
        if runtime is not None:
            await _close(runtime)
    result = CaseResult.build(runs, events, latency, error, repeat)
    grades: tuple[Grade, ...] = ()
    if runs:
        grades = tuple(await asyncio.gather(*(grade_safely(g, case, result) for g in case.graders)))
    return _record(result, grades, repeat, spool.put([e.to_dict() for e in events]))


class _SetupError(Exception):
    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _record(result: CaseResult, grades: tuple[Grade, ...], repeat: int, events_ref: tuple[int, int]) -> RunRecord:
    status, error = _status(result, grades)
    run = result.run
    return RunRecord(repeat=repeat, status=status, grades=grades,
                     stop_reason=run.stop_reason.value if run is not None else None, final_text=result.final_text,
                     turns=result.turns, tool_calls=len(result.tool_calls), usage=result.usage,
                     latency_s=result.latency_s, error=error, case_error=result.error,
                     run_error=run.error.to_dict() if run is not None and run.error is not None else None,
                     events_ref=events_ref)


async def _pool(jobs: list, work: Callable[[Any], Any], concurrency: int) -> None:
    """Run ``work(job)`` for every job, at most ``concurrency`` at a time, on this loop."""
    pending = iter(jobs)

    async def worker() -> None:
        for job in pending:  # the shared iterator hands each job to exactly one worker
            await work(job)

    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, len(jobs))):
            group.create_task(worker())


async def run_suite(cases: Iterable[Case], make_runtime: Callable[[Case], Any], *, concurrency: int = 4,
                    repeats: int = 1, progress: bool = True, timeout: float | None = None) -> SuiteReport:
    """Run every case (``repeats`` times each) and grade it; returns the :class:`SuiteReport`.

    Args:
        cases: the :class:`Case` values (names unique).
        make_runtime: ``make_runtime(case)`` (sync or async) returns a fresh
            ``AgentRuntime`` for one run of a case (e.g. on ``ev.ReplayModel(path)``).
        concurrency: how many runs at once (tasks on the running loop).
        repeats: runs per case; the report counts passes out of ``repeats`` and flags
            flaky cases (some passed, some failed).
        progress: show a progress bar (a widget in a notebook, text in a terminal).
        timeout: seconds one run of a case may take; past it the case is errored
            (``case_timeout``) and its run is cancelled.

    Example:
        >>> report = await ev.run_suite(cases, lambda case: ark.AgentRuntime(ev.ReplayModel(path)))  # doctest: +SKIP
        >>> report.pass_rate                                                                         # doctest: +SKIP
        1.0
    """
    cases = _check_cases(cases)
    if not callable(make_runtime):
        raise invalid_argument(f"make_runtime must be a function case -> AgentRuntime, got {type(make_runtime).__name__}")
    concurrency = _check_positive_int(concurrency, "concurrency")
    repeats = _check_positive_int(repeats, "repeats")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise invalid_argument(f"timeout must be a number of seconds > 0 or None, got {timeout!r}")
    created = now_iso()
    spool = EventSpool()
    data = [new_case_data(c.name, c.input, c.metadata) for c in cases]
    slots: list[list[RunRecord | None]] = [[None] * repeats for _ in cases]
    bar = make_progress(progress, len(cases) * repeats)

    async def work(job: tuple[int, int]) -> None:
        index, repeat = job
        record = await _run_once(cases[index], repeat, make_runtime, timeout, spool)
        slots[index][repeat] = record
        bar.advance(record.status)

    try:
        await _pool([(i, r) for i in range(len(cases)) for r in range(repeats)], work, concurrency)
    finally:
        bar.close()
    for case_data, records in zip(data, slots):
        case_data.runs = [r for r in records if r is not None]
    return SuiteReport(rows_for(data), data, spool, created_at=created, repeats=repeats)


def _graders_for(graders: Any, name: str) -> tuple[Any, ...]:
    if isinstance(graders, Mapping):
        chosen = graders.get(name, ())
    else:
        chosen = graders
    if callable(chosen) and not isinstance(chosen, (list, tuple)):
        chosen = (chosen,)
    return tuple(chosen)


async def rescore(report: SuiteReport, graders: Iterable[Any] | Mapping[str, Iterable[Any]], *,
                  concurrency: int = 4) -> SuiteReport:
    """Grade a report's saved runs again, without running anything; returns a new report.

    Args:
        report: from :func:`run_suite` or :meth:`SuiteReport.from_jsonl`.
        graders: a list applied to every case, or ``{case name: [graders]}``.
        concurrency: how many runs are graded at once (an ``llm_judge`` calls a model).

    Example:
        >>> stricter = await ev.rescore(report, [ev.contains("Paris"), ev.max_turns(2)])  # doctest: +SKIP
    """
    if not isinstance(report, SuiteReport):
        raise invalid_argument(f"rescore(report, graders) takes a SuiteReport, got {type(report).__name__}")
    if isinstance(graders, (str, bytes)) or not (isinstance(graders, (Iterable, Mapping)) or callable(graders)):
        raise invalid_argument(f"graders must be a list of graders or a dict of case name -> graders, "
                               f"got {type(graders).__name__}")
    concurrency = _check_positive_int(concurrency, "concurrency")
    for where, chosen in (graders.items() if isinstance(graders, Mapping) else (("every case", graders),)):
        for i, g in enumerate(_graders_for({where: chosen}, where)):
            if not callable(g):
                raise invalid_argument(f"graders for {where}: [{i}] is not a grader, got {type(g).__name__}")
    data = [new_case_data(row.name, report.case_input(row.name), report.case_metadata(row.name))
            for row in report.rows]
    slots = {d.name: list(report.runs(d.name)) for d in data}

    async def work(job: tuple[str, int]) -> None:
        name, index = job
        old = slots[name][index]
        case = Case._saved(name, report.case_input(name), report.case_metadata(name))
        result = report.result(name, old.repeat)
        grades: tuple[Grade, ...] = ()
        if result.run is not None:
            grades = tuple(await asyncio.gather(*(grade_safely(g, case, result)
                                                  for g in _graders_for(graders, name))))
        slots[name][index] = _record(result, grades, old.repeat, old.events_ref)

    await _pool([(d.name, i) for d in data for i in range(len(slots[d.name]))], work, concurrency)
    for case_data in data:
        case_data.runs = slots[case_data.name]
    return SuiteReport(rows_for(data), data, report._spool, created_at=now_iso(), repeats=report.repeats)
