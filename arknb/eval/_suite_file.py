"""Loading a suite file for the CLI: a Python file that defines ``cases`` and ``make_runtime``.

Whatever is wrong with the file (a syntax error, an exception while it runs, a
missing or mistyped name) becomes ``ArkError(config, suite_invalid)`` naming the file
and, where there is one, the line.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from ..domain import ArkError, ErrorCode, ErrorLayer
from ._files import FileKind, missing_file
from .case import Case

__all__ = ["SuiteFile", "load_suite"]

_SUITE = FileKind("suite file", "", 0, ErrorCode.SUITE_INVALID, ErrorCode.SUITE_INVALID)


def _invalid(path: Path, line: int | None, detail: str) -> ArkError:
    where = f"{path}, line {line}" if line else str(path)
    return ArkError(ErrorLayer.CONFIG, ErrorCode.SUITE_INVALID, f"suite file {where}: {detail}")


class SuiteFile:
    """What a suite file defines."""

    def __init__(self, path: Path, module: ModuleType, cases: list[Case], make_runtime: Any) -> None:
        self.path = path
        self.module = module
        self.cases = cases
        self.make_runtime = make_runtime


def _line_in(path: Path, tb: Any) -> int | None:
    """The last line of ``path`` in a traceback (where the suite file's own code failed)."""
    line = None
    for frame in traceback.extract_tb(tb):
        if Path(frame.filename).resolve() == path.resolve():
            line = frame.lineno
    return line


def load_suite(path: str | Path) -> SuiteFile:
    """Import the suite file at ``path`` and check its ``cases`` and ``make_runtime``."""
    path = Path(path)
    if not path.is_file():
        raise missing_file(path, _SUITE)
    name = f"arknb_suite_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise _invalid(path, None, "cannot be imported as Python (give a .py file)")
    module = importlib.util.module_from_spec(spec)
    # The suite's folder is importable while it loads, so it can import its neighbours.
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise _invalid(path, exc.lineno, f"syntax error: {exc.msg}") from None
    except ArkError as exc:
        raise _invalid(path, _line_in(path, exc.__traceback__), str(exc)) from None
    except Exception as exc:
        raise _invalid(path, _line_in(path, exc.__traceback__), f"{type(exc).__name__}: {exc}") from None
    finally:
        try:
            sys.path.remove(folder)
        except ValueError:
            pass
    cases = getattr(module, "cases", None)
    if cases is None:
        raise _invalid(path, None, "defines no `cases` (a list of ev.Case)")
    if callable(cases) and not isinstance(cases, (list, tuple)):
        cases = cases()
    if isinstance(cases, (str, bytes)) or not hasattr(cases, "__iter__"):
        raise _invalid(path, None, f"`cases` must be a list of ev.Case, got {type(cases).__name__}")
    cases = list(cases)
    for i, case in enumerate(cases):
        if not isinstance(case, Case):
            raise _invalid(path, None, f"cases[{i}] is a {type(case).__name__}, not an ev.Case")
    if not cases:
        raise _invalid(path, None, "`cases` is empty")
    make_runtime = getattr(module, "make_runtime", None)
    if not callable(make_runtime):
        raise _invalid(path, None, "defines no `make_runtime(case)` function returning an AgentRuntime")
    return SuiteFile(path, module, cases, make_runtime)
