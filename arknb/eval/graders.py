"""The built-in graders (DESIGN §11): checks on the answer, the tool calls and how the run ended.

Each is a :class:`~arknb.eval.grading.Grader`: ``await g(case, result)`` returns a
:class:`~arknb.eval.grading.Grade` with a one-sentence explanation. Every grader takes
``name=`` to tell two of a kind apart in a report.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..domain import invalid_argument
from ..runtime import StopReason
from ._diff import short
from .grading import Grade, Grader

if TYPE_CHECKING:
    from .case import Case, CaseResult

__all__ = ["contains", "exact", "json_schema", "max_turns", "output_is", "regex", "stop_reason", "tool_called",
           "trajectory"]


def _check_text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise invalid_argument(f"{what} must be a string, got {type(value).__name__}")
    return value


def _label(kind: str, value: Any) -> str:
    return f"{kind}({short(value, 40)})"


class _Exact(Grader):
    def __init__(self, text: str, strip: bool, name: str | None) -> None:
        self.text = _check_text(text, "exact(text)")
        self.strip = bool(strip)
        self.name = name or _label("exact", text)

    async def __call__(self, case: Case, result: CaseResult) -> Grade:
        got = result.final_text.strip() if self.strip else result.final_text
        want = self.text.strip() if self.strip else self.text
        if got == want:
            return Grade(self.name, True, 1.0, "the answer is exactly the expected text")
        return Grade(self.name, False, 0.0, f"expected {short(want)}, got {short(got)}")


def exact(text: str, *, strip: bool = False, name: str | None = None) -> Grader:
    """Passes when the final answer is exactly ``text`` (``strip=True`` ignores surrounding whitespace)."""
    return _Exact(text, strip, name)


class _Contains(Grader):
    def __init__(self, text: str, case_sensitive: bool, name: str | None) -> None:
        self.text = _check_text(text, "contains(text)")
        if not text:
            raise invalid_argument("contains(text): text is empty, so every answer would pass")
        self.case_sensitive = bool(case_sensitive)
        self.name = name or _label("contains", text)

    async def __call__(self, case: Case, result: CaseResult) -> Grade:
        haystack, needle = result.final_text, self.text
        if not self.case_sensitive:
            haystack, needle = haystack.casefold(), needle.casefold()
        if needle in haystack:
            return Grade(self.name, True, 1.0, f"the answer contains {short(self.text)}")
        return Grade(self.name, False, 0.0, f"{short(self.text)} not found in the answer {short(result.final_text)}")


def contains(text: str, case_sensitive: bool = True, *, name: str | None = None) -> Grader:
    """Passes when the final answer contains ``text``."""
    return _Contains(text, case_sensitive, name)


class _Regex(Grader):
    def __init__(self, pattern: str | re.Pattern[str], flags: int, name: str | None) -> None:
        if isinstance(pattern, re.Pattern):
            self.pattern = pattern
        else:
            try:
                self.pattern = re.compile(_check_text(pattern, "regex(pattern)"), flags)
            except re.error as exc:
                raise invalid_argument(f"regex({pattern!r}) is not a valid regular expression: {exc}") from None
        self.name = name or _label("regex", self.pattern.pattern)

    async def __call__(self, case: Case, result: CaseResult) -> Grade:
        match = self.pattern.search(result.final_text)
        if match:
            return Grade(self.name, True, 1.0, f"matched {short(match.group(0))}")
        return Grade(self.name, False, 0.0, f"no match for /{self.pattern.pattern}/ in {short(result.final_text)}")


def regex(pattern: str | re.Pattern[str], flags: int = 0, *, name: str | None = None) -> Grader:
    """Passes when ``pattern`` is found in the final answer (``re.search``)."""
    return _Regex(pattern, flags, name)


_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n(.*)\n```\Z", re.DOTALL)


class _JsonSchema(Grader):
    def __init__(self, schema: Any, name: str | None) -> None:
        self.schema = schema
        self._model = None
        self._validator = None
        if isinstance(schema, type) and hasattr(schema, "model_validate"):
            self._model = schema  # a pydantic model class
        elif isinstance(schema, Mapping):
            import jsonschema

            try:
                cls = jsonschema.validators.validator_for(schema)
                cls.check_schema(schema)
            except jsonschema.SchemaError as exc:
                raise invalid_argument(f"json_schema(schema): the schema is not valid JSON Schema: {exc.message}") from None
            self._validator = cls(schema)
        else:
            raise invalid_argument(f"json_schema(schema) takes a JSON Schema dict or a pydantic model class, "
                                   f"got {type(schema).__name__}")
        self.name = name or "json_schema"

    async def __call__(self, case: Case, result: CaseResult) -> Grade:
        text = result.final_text.strip()
        fenced = _FENCE.match(text)
        if fenced:  # models often wrap JSON in a ```json fence
            text = fenced.group(1)
        try:
            value = json.loads(text)
        except ValueError as exc:
            return Grade(self.name, False, 0.0, f"the answer is not JSON ({exc}): {short(result.final_text)}")
        if self._model is not None:
            try:
                self._model.model_validate(value)
            except ValueError as exc:
                lines = str(exc).splitlines()
                return Grade(self.name, False, 0.0, "does not validate: " + "; ".join(lines[1:3]))
            return Grade(self.name, True, 1.0, f"valid {self._model.__name__}")
        errors = sorted(self._validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if not errors:
            return Grade(self.name, True, 1.0, "valid JSON matching the schema")
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(root)"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return Grade(self.name, False, 0.0, f"does not validate at {where}: {first.message}{more}")


def json_schema(schema: Mapping[str, Any] | type, *, name: str | None = None) -> Grader:
    """Passes when the final answer parses as JSON and validates against ``schema``.

    ``schema`` is a JSON Schema dict (checked with the ``jsonschema`` package) or a
    pydantic model class. A single Markdown code fence around the JSON is allowed.
    """
    return _JsonSchema(schema, name)


class _OutputIs(Grader):
    def __init__(self, expected: Any, partial: bool, name: str | None) -> None:
        from pydantic_core import to_jsonable_python

        if expected is None:
            raise invalid_argument("output_is(expected): expected is None; use stop_reason('completed') to check "
                                   "that a run ended, or give the typed answer you expect")
        self.expected = to_jsonable_python(expected)
        self.partial = bool(partial)
        self.name = name or _label("output_is", self.expected)

    async def __call__(self, case: Case, result: CaseResult) -> Grade:
        got = result.output
        if got is None:
            how = result.stop_reason.value if result.stop_reason is not None else "no run"
            return Grade(self.name, False, 0.0, f"the run gave no typed answer (it ended {how}; text "
                                                f"{short(result.final_text)})")
        if (_subset(self.expected, got) if self.partial else got == self.expected):
            return Grade(self.name, True, 1.0, "the typed answer is " + ("as expected where given" if self.partial
                                                                         else "the expected value"))
        return Grade(self.name, False, 0.0, f"expected {short(self.expected)}, got {short(got)}")


def output_is(expected: Any, *, partial: bool = False, name: str | None = None) -> Grader:
    """Passes when the run's typed answer (``output_type=``, DESIGN §17) equals ``expected``
    (a pydantic model, dataclass, dict, list, str...; compared as JSON). With
    ``partial=True`` only the keys ``expected`` gives must match (nested dicts too)."""
    return _OutputIs(expected, partial, name)


def _subset(want: Any, got: Any) -> bool:
    """``want`` is contained in ``got``: every key of a dict (recursively), equal otherwise."""
    if isinstance(want, Mapping):
        return isinstance(got, Mapping) and all(k in got and _subset(v, got[k]) for k, v in want.items())
    return want == got


class _ToolCalled(Grader):
    def __init__(self, tool: str, arguments: Mapping[str, Any] | None, name: str | None) -> None:
        self.tool = _check_text(tool, "tool_called(name)")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise invalid_argument(f"tool_called(arguments=...) must be a dict, got {type(arguments).__name__}")
        self.arguments = dict(arguments) if arguments is not None else None
        label = tool if arguments is None else f"{tool}, {json.dumps(self.arguments, ensure_ascii=False)}"
        self.name = name or f"tool_called({label if len(label) <= 60 else label[:57] + '...'})"

    async def __call__(self, case: Case, result: CaseResult) -> Grade:
        calls = [c for c in result.tool_calls if c.name == self.tool]
        if not calls:
            made = [c.name for c in result.tool_calls]
            return Grade(self.name, False, 0.0, f"{self.tool} was never called (calls: {made or 'none'})")
        if self.arguments is None:
            return Grade(self.name, True, 1.0, f"{self.tool} was called {len(calls)} time(s)")
        seen = []
        for call in calls:
            try:
                args = call.arguments
            except Exception:
                args = call.arguments_json
            if _subset(self.arguments, args):
                return Grade(self.name, True, 1.0, f"{self.tool} was called with {short(args)}")
            seen.append(args)
        return Grade(self.name, False, 0.0, f"{self.tool} was called {len(calls)} time(s), never with "
                                            f"{short(self.arguments)}: got {short(seen)}")


def tool_called(name: str, arguments: Mapping[str, Any] | None = None, *, grader_name: str | None = None) -> Grader:
    """Passes when the model called tool ``name``; with ``arguments``, at least one call's
    arguments contain them (a subset match: extra arguments are fine, nested dicts too)."""
    return _ToolCalled(name, arguments, grader_name)


_TRAJECTORY_MODES = ("exact", "in_order", "any_order")


class _Trajectory(Grader):
    def __init__(self, names: Iterable[str], mode: str, name: str | None) -> None:
        if isinstance(names, str) or not isinstance(names, Iterable):
            raise invalid_argument("trajectory(names) takes a list of tool names, e.g. ['search', 'summarise']")
        self.names = tuple(_check_text(n, "trajectory names") for n in names)
        if mode not in _TRAJECTORY_MODES:
            raise invalid_argument(f"trajectory mode must be 'exact', 'in_order' or 'any_order', got {mode!r}")
        self.mode = mode
        self.name = name or f"trajectory({self.mode}: {', '.join(self.names) or 'no tools'})"

    async def __call__(self, case: Case, result: CaseResult) -> Grade:
        made = [c.name for c in result.tool_calls]
        want = list(self.names)
        if self.mode == "exact":
            ok = made == want
            why = "the tool calls are exactly" if ok else "expected exactly"
        elif self.mode == "in_order":
            it = iter(made)
            ok = all(any(m == w for m in it) for w in want)  # a subsequence, other calls in between allowed
            why = "the calls include, in order," if ok else "expected, in order,"
        else:
            ok = not (Counter(want) - Counter(made))
            why = "the calls include" if ok else "expected (any order)"
        explanation = f"{why} {want}" + ("" if ok else f"; got {made}")
        return Grade(self.name, ok, 1.0 if ok else 0.0, explanation)


def trajectory(names: Iterable[str], mode: str = "exact", *, name: str | None = None) -> Grader:
    """Passes when the sequence of tool names called matches ``names``.

    ``mode="exact"``: the same calls in the same order, nothing else; ``"in_order"``:
    these calls in this order, others may come between; ``"any_order"``: each of these
    calls (as many times as listed) in any order.
    """
    return _Trajectory(names, mode, name)


class _MaxTurns(Grader):
    def __init__(self, n: int, name: str | None) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise invalid_argument(f"max_turns(n) takes an int >= 0, got {n!r}")
        self.n = n
        self.name = name or f"max_turns({n})"

    async def __call__(self, case: Case, result: CaseResult) -> Grade:
        turns = result.turns
        ok = turns <= self.n
        return Grade(self.name, ok, 1.0 if ok else 0.0, f"{turns} model call(s), limit {self.n}")


def max_turns(n: int, *, name: str | None = None) -> Grader:
    """Passes when the case took at most ``n`` model calls (over all its runs)."""
    return _MaxTurns(n, name)


class _StopReason(Grader):
    def __init__(self, reason: str, name: str | None) -> None:
        try:
            self.reason = StopReason(reason)
        except ValueError:
            raise invalid_argument(f"stop_reason({reason!r}): not a stop reason; one of "
                                   f"{[r.value for r in StopReason]}") from None
        self.name = name or f"stop_reason({self.reason.value})"

    async def __call__(self, case: Case, result: CaseResult) -> Grade:
        got = result.stop_reason
        ok = got == self.reason
        return Grade(self.name, ok, 1.0 if ok else 0.0,
                     f"the run ended {got.value if got else 'without finishing'}"
                     + ("" if ok else f", expected {self.reason.value}"))


def stop_reason(reason: str, *, name: str | None = None) -> Grader:
    """Passes when the (last) run ended with ``reason`` (``"completed"``, ``"max_turns"``, ...)."""
    return _StopReason(reason, name)
