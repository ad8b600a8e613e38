"""A SuiteReport as JSONL: a header line, then one line per case with its runs and their events.

    {"arknb_report": 1, "created_at": ..., "arknb_version": ..., "cases": 3, "repeats": 1, "summary": "..."}
    {"name": "capital", "input": "...", "metadata": {...}, "row": {...},
     "runs": [{"repeat": 0, "status": "passed", "grades": [...], ..., "events": [...]}]}

Written through a temporary file (the old report stays until the new one is whole);
read line by line, each case's events going straight to the new report's spool, so
loading a large report keeps little in memory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..domain import ErrorCode, Usage
from ..domain.errors import ErrorInfo
from ._event_codec import event_from_dict
from ._files import FileKind, as_path, check_header, iter_jsonl, now_iso, too_deep, write_lines_atomically
from ._spool import EventSpool
from .grading import Grade
from .report import RunRecord, SuiteReport, build_row, new_case_data

__all__ = ["REPORT", "read_report", "write_report"]

REPORT_VERSION = 1

REPORT = FileKind("report", "arknb_report", REPORT_VERSION, ErrorCode.REPORT_CORRUPT,
                  ErrorCode.REPORT_VERSION_UNSUPPORTED)

_STATUSES = ("passed", "failed", "errored")


def _lines(report: SuiteReport):
    from ._version import arknb_version

    yield json.dumps({"arknb_report": REPORT_VERSION, "created_at": report.created_at or now_iso(),
                      "arknb_version": arknb_version(), "cases": len(report.rows), "repeats": report.repeats,
                      "summary": report.summary()}, ensure_ascii=False)
    for row in report.rows:
        runs = []
        for run in report.runs(row.name):
            # The events are spliced in as stored: never parsed, only copied.
            body = json.dumps(run.to_dict(), ensure_ascii=False, separators=(",", ":"))
            runs.append(f'{body[:-1]},"events":{report._events_json(row.name, run.repeat)}}}')
        head = json.dumps({"name": row.name, "input": report.case_input(row.name),
                           "metadata": dict(report.case_metadata(row.name)), "row": row.to_dict()},
                          ensure_ascii=False, separators=(",", ":"))
        yield f'{head[:-1]},"runs":[{",".join(runs)}]}}'


def write_report(report: SuiteReport, path: str | os.PathLike[str]) -> Path:
    """Save ``report`` to ``path`` (replaced whole, atomically)."""
    target = as_path(path, "report path")
    write_lines_atomically(target, _lines(report))
    return target


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be an integer >= 0, got {value!r}")
    return value


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{what} must be a number >= 0, got {value!r}")
    return float(value)


def _optional_str(value: Any, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{what} must be a string or null, got {value!r}")
    return value


def _grade(value: Any, what: str) -> Grade:
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be an object")
    try:
        return Grade.from_dict(value)
    except KeyError as exc:
        raise ValueError(f"{what} lacks {exc}") from None
    except Exception as exc:
        raise ValueError(f"{what}: {getattr(exc, 'message', exc)}") from None


def _run(value: Any, index: int, spool: EventSpool) -> RunRecord:
    where = f"runs[{index}]"
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be an object")
    status = value.get("status")
    if status not in _STATUSES:
        raise ValueError(f"{where}.status must be one of {list(_STATUSES)}, got {status!r}")
    grades = value.get("grades", [])
    if not isinstance(grades, list):
        raise ValueError(f"{where}.grades must be a list")
    usage = value.get("usage", {})
    try:
        usage = Usage.model_validate(usage)
    except ValueError:
        raise ValueError(f"{where}.usage is not a token usage object") from None
    run_error = value.get("run_error")
    if run_error is not None:
        try:
            ErrorInfo.model_validate(run_error)
        except ValueError:
            raise ValueError(f"{where}.run_error is not an arknb error object") from None
    events = value.get("events", [])
    if not isinstance(events, list):
        raise ValueError(f"{where}.events must be a list")
    for i, event in enumerate(events):
        try:
            event_from_dict(event)
        except ValueError as exc:
            raise ValueError(f"{where}.events[{i}]: {exc}") from None
    final_text = value.get("final_text", "")
    if not isinstance(final_text, str):
        raise ValueError(f"{where}.final_text must be a string")
    return RunRecord(repeat=_int(value.get("repeat", index), f"{where}.repeat"), status=status,
                     grades=tuple(_grade(g, f"{where}.grades[{i}]") for i, g in enumerate(grades)),
                     stop_reason=_optional_str(value.get("stop_reason"), f"{where}.stop_reason"),
                     final_text=final_text, turns=_int(value.get("turns", 0), f"{where}.turns"),
                     tool_calls=_int(value.get("tool_calls", 0), f"{where}.tool_calls"), usage=usage,
                     latency_s=_number(value.get("latency_s", 0.0), f"{where}.latency_s"),
                     error=_optional_str(value.get("error"), f"{where}.error"), run_error=run_error,
                     case_error=_optional_str(value.get("case_error"), f"{where}.case_error"),
                     events_ref=spool.put(events))


def read_report(path: str | os.PathLike[str]) -> SuiteReport:
    """Load a report written by :func:`write_report`; the file is never changed."""
    source = as_path(path, "report path")
    spool = EventSpool()
    header: dict[str, Any] | None = None
    cases = []
    names: set[str] = set()
    for number, value in iter_jsonl(source, REPORT):
        if header is None:
            header = check_header(source, REPORT, number, value)
            continue
        try:
            if not isinstance(value, dict):
                raise ValueError(f"must be a JSON object, got {type(value).__name__}")
            name = value.get("name")
            if not isinstance(name, str) or not name:
                raise ValueError("has no case name")
            if name in names:
                raise ValueError(f"repeats case {name!r}")
            runs = value.get("runs")
            if not isinstance(runs, list) or not runs:
                raise ValueError(f"case {name!r} has no runs")
            metadata = value.get("metadata", {})
            if not isinstance(metadata, dict):
                raise ValueError(f"case {name!r}: metadata must be an object")
            data = new_case_data(name, value.get("input"), metadata)
            data.runs = [_run(r, i, spool) for i, r in enumerate(runs)]
        except ValueError as exc:
            raise REPORT.error(source, number, str(exc)) from None
        except RecursionError:
            raise too_deep(source, REPORT, number) from None
        names.add(name)
        cases.append(data)
    if header is None:
        raise REPORT.error(source, 1, "the file is empty")
    repeats = header.get("repeats", 1)
    rows = [build_row(c.name, c.runs) for c in cases]
    declared = header.get("cases")
    if isinstance(declared, int) and declared != len(rows):
        raise REPORT.error(source, None, f"the header announces {declared} cases but the file holds "
                                         f"{len(rows)}: it was cut short")
    return SuiteReport(rows, cases, spool, created_at=str(header.get("created_at", "")),
                       repeats=repeats if isinstance(repeats, int) and repeats > 0 else 1)
