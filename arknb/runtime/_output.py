"""Output phase: how a run asks for its answer and settles it (DESIGN §17, STYLE §2).

Every run has one :class:`OutputPhase`. Without an output type it is the plain text
phase: requests go out unchanged and the final message is the answer. With one, the
phase shapes each request (native ``response_format`` json_schema, or a ``final_result``
tool whose arguments are the answer), recognises the answering turn and validates it.
A wrong answer goes back to the model with the validation errors (in tool mode as the
``final_result`` call's error result, natively as a user message) at most
``max_retries`` more times; then the run fails with ``output_invalid`` naming the fields.

The loop asks the phase two things and never tests which kind it has: whether a
model message is the answer (:meth:`OutputPhase.answers`), and what the answer leads
to (:meth:`OutputPhase.settle`: a final step with the typed value, another turn, or a
stop).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..domain import AgentMessage, ArkError, ErrorCode, ErrorLayer, MessageOutput, ModelRequest, Role, ToolCall, \
    ToolDefinition, ToolResult, invalid_argument
from ..events import EventTypes
from ..state import SavedOutputType
from ..events.envelope import flat_items, flat_payload
from ._tool_batch import tool_message
from .output import FINAL_RESULT_TOOL, OutputErrors, OutputSpec
from .result import NextStep, StopReason

if TYPE_CHECKING:
    from ._context import RunContext
    from .runtime import AgentRuntime

__all__ = ["OutputPhase", "output_phase", "restored_phase"]

_ACCEPTED = "Final answer accepted."
_NOT_RUN = "not executed: the final answer was given in the same turn"


class OutputPhase:
    """The plain text answer: requests unchanged, the final message is the answer."""

    __slots__ = ()
    mode: str | None = None
    spec: OutputSpec | None = None

    def shape(self, request: ModelRequest) -> ModelRequest:
        """The request as this phase sends it."""
        return request

    def answers(self, message: AgentMessage) -> bool:
        """True if ``message`` (with tool calls) is the run's answer rather than tool work."""
        return False

    async def settle(self, rt: AgentRuntime, ctx: RunContext, message: AgentMessage) -> NextStep:
        """What the answering ``message`` leads to."""
        return NextStep.final(message)

    def check_tools(self, names: Any) -> None:
        """Refuse a configuration the phase cannot work with (a tool name it needs)."""

    def saved(self) -> SavedOutputType | None:
        """What the state keeps of this phase, so a restored paused run asks for the same."""
        return None

    def unavailable(self) -> ArkError | None:
        """Why a restored paused run cannot go on with this phase (None: it can)."""
        return None


class _TypedOutput(OutputPhase):
    """An answer of ``spec``'s type, asked for in ``mode`` ("native" or "tool")."""

    __slots__ = ("spec", "mode", "max_retries", "retries", "_tool")

    def __init__(self, spec: OutputSpec, mode: str, max_retries: int) -> None:
        self.spec = spec
        self.mode = mode
        self.max_retries = max_retries
        self.retries = 0
        self._tool = ToolDefinition(
            name=FINAL_RESULT_TOOL, parameters=spec.json_schema, read_only=True,
            description=f"Give your final answer ({spec.name}) as this tool's arguments. Call it alone, once "
                        "the answer is complete.") if mode == "tool" else None

    def check_tools(self, names: Any) -> None:
        if self.mode == "tool" and FINAL_RESULT_TOOL in names:
            raise invalid_argument(f"a tool is named {FINAL_RESULT_TOOL!r}, the name a typed answer uses when the "
                                   "model has no native JSON-schema output; rename the tool, or use "
                                   "output_mode='native' with a model that supports it")

    def saved(self) -> SavedOutputType | None:
        t = self.spec.output_type
        module, qualname = getattr(t, "__module__", None), getattr(t, "__qualname__", None)
        path = f"{module}:{qualname}" if isinstance(module, str) and isinstance(qualname, str) \
            and "<locals>" not in qualname and isinstance(t, type) else ""
        return SavedOutputType(name=self.spec.name, schema_text=_canonical(self.spec.json_schema), type_path=path,
                               mode=self.mode)

    def shape(self, request: ModelRequest) -> ModelRequest:
        if self.spec.is_text:
            return request
        if self._tool is not None:
            return request.model_copy(update={"tools": request.tools + (self._tool,)})
        return request.model_copy(update={"output": self.spec.schema()})

    def answers(self, message: AgentMessage) -> bool:
        return self._tool is not None and any(c.name == FINAL_RESULT_TOOL for c in message.tool_calls)

    async def settle(self, rt: AgentRuntime, ctx: RunContext, message: AgentMessage) -> NextStep:
        # The answer as history holds it (secrets redacted on the way in), not as streamed.
        message = next((m for m in reversed(rt.state.history) if m.role is Role.ASSISTANT), message)
        call = next((c for c in message.tool_calls if c.name == FINAL_RESULT_TOOL), None)
        try:
            value = self._validate(message, call)
        except OutputErrors as errors:
            return self._retry(rt, ctx, message, call, errors)
        if call is not None:
            self._answer_calls(rt, message, call, ToolResult.from_text(_ACCEPTED))
        if self.spec.is_text:  # a plain text answer: nothing was validated, nothing to show apart
            return NextStep.final(message, output=value)
        payload_value = self.spec.to_json(value)
        # Saved with its message: a restored chat shows the table, a restored graph the value.
        message = rt._note_message(message, output=MessageOutput(
            name=self.spec.name, json_text=json.dumps(payload_value, ensure_ascii=False)))
        rt._emit(EventTypes.OUTPUT_VALIDATED, lambda: flat_payload(
            turn=ctx.turn, mode=self.mode, name=self.spec.name, retries=self.retries,
            output=_frozen_json(payload_value)))
        return NextStep.final(message, output=value)

    def _validate(self, message: AgentMessage, call: ToolCall | None) -> Any:
        if call is not None:
            try:
                arguments = json.loads(call.arguments_json or "{}")
            except ValueError as exc:
                raise OutputErrors(({"loc": "(answer)", "msg": f"the arguments are not valid JSON ({exc})",
                                     "type": "json_invalid"},)) from None
            return self.spec.validate_python(arguments)
        text = message.text
        if not text.strip():
            how = f"call the {FINAL_RESULT_TOOL} tool" if self._tool is not None else "answer with JSON"
            raise OutputErrors(({"loc": "(answer)", "msg": f"the answer is empty: {how}", "type": "missing"},))
        try:
            return self.spec.validate_json(text)
        except OutputErrors as errors:
            if self._tool is None:
                raise
            raise OutputErrors(errors.errors + ({"loc": "(answer)", "msg": f"give the answer by calling the "
                                                 f"{FINAL_RESULT_TOOL} tool", "type": "tool_expected"},)) from None

    def _retry(self, rt: AgentRuntime, ctx: RunContext, message: AgentMessage, call: ToolCall | None,
               errors: OutputErrors) -> NextStep:
        if ctx.truncated:  # a cut answer is rarely valid JSON: say why, to the model and to the user
            errors = OutputErrors(errors.errors + ({"loc": "(answer)", "msg": "the answer was cut at max_tokens "
                                                    "(finish reason length): give a shorter answer",
                                                    "type": "truncated"},))
        self.retries += 1
        retrying = self.retries <= self.max_retries
        rt._emit(EventTypes.OUTPUT_RETRY, lambda: flat_payload(
            turn=ctx.turn, attempt=self.retries, mode=self.mode, name=self.spec.name, retrying=retrying,
            fields=flat_items(errors.fields), errors=errors.summary()))
        feedback = (f"Your answer is not a valid {self.spec.name}: {errors.summary()}. Fix these and answer "
                    + (f"again by calling {FINAL_RESULT_TOOL}." if self._tool is not None
                       else "again with only the JSON object."))
        if call is not None:
            self._answer_calls(rt, message, call, ToolResult.from_text(
                feedback, is_error=True, error_code=ErrorCode.OUTPUT_INVALID.value))
        elif retrying:
            rt._append_history((AgentMessage.user(feedback),))
        if retrying:
            return NextStep.run_again()
        fields = ", ".join(errors.fields)
        return NextStep.stop(StopReason.FAILED, message=message, error=ArkError(
            ErrorLayer.RUNTIME, ErrorCode.OUTPUT_INVALID,
            f"the model's answer is not a valid {self.spec.name} after {self.max_retries} more tr"
            f"{'y' if self.max_retries == 1 else 'ies'} (fields: {fields}): {errors.summary()}. "
            + ("Raise ModelConfig.max_tokens, " if ctx.truncated else "Raise max_output_retries, ")
            + "simplify the output type, or use a stronger model"))

    @staticmethod
    def _answer_calls(rt: AgentRuntime, message: AgentMessage, call: ToolCall, result: ToolResult) -> None:
        # Every call of the answering message is paired (seed 003 §4.3): the answer's own,
        # and the others as not run (the answer ends the turn, as pydantic-ai's "early").
        answers = [tool_message(call, result)]
        for other in message.tool_calls:
            if other.id != call.id:
                answers.append(tool_message(other, ToolResult.from_text(
                    _NOT_RUN, is_error=True, error_code=ErrorCode.NOT_EXECUTED.value)))
        rt._append_history(answers)


def _frozen_json(value: Any) -> Any:
    from ..domain.frozen import freeze
    return freeze(value, "an event payload is read-only") if isinstance(value, (dict, list)) else value


class _UnknownOutput(OutputPhase):
    """A restored paused run's output type that this process cannot rebuild: the run is not
    continued (decisions and resume are refused, nothing saved) until it is given."""

    __slots__ = ("record",)

    def __init__(self, record: SavedOutputType) -> None:
        self.record = record

    def saved(self) -> SavedOutputType | None:
        return self.record

    def unavailable(self) -> ArkError | None:
        where = f" (defined as {self.record.type_path})" if self.record.type_path else ""
        return ArkError(ErrorLayer.CONFIG, ErrorCode.OUTPUT_TYPE_UNAVAILABLE,
                        f"the paused run asked for a typed answer of type {self.record.name}{where}, which this "
                        f"process cannot rebuild: define it, then set runtime.output_type = {self.record.name} (or "
                        f"restore with output_type={self.record.name}) before deciding or resuming; nothing was "
                        "changed")

    def shape(self, request: ModelRequest) -> ModelRequest:
        raise self.unavailable()


def _canonical(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def _import_type(path: str) -> Any:
    """The type at ``module:qualname`` if its module is loaded (never imports anything)."""
    import sys
    module_name, _, qualname = path.partition(":")
    target: Any = sys.modules.get(module_name)
    for part in qualname.split(".") if target is not None and qualname else ():
        target = getattr(target, part, None)
        if target is None:
            return None
    return target if target is not sys.modules.get(module_name) else None


def restored_phase(record: SavedOutputType | None, own: OutputPhase, *, model: Any,
                   max_retries: int) -> OutputPhase:
    """The output phase a restored paused run goes on with.

    The run asked for ``record`` when it started: the runtime's own output type if it has
    the same schema, else the type found where it was defined (a class defined in a
    module this process has loaded, or in the notebook's ``__main__`` once its cell ran
    again), else a phase that refuses to continue, saying which type to give.
    """
    if record is None:  # (a state saved before arknb kept it: the runtime's own, as then)
        return own
    if own.spec is not None and _canonical(own.spec.json_schema) == record.schema_text:
        return own
    found = _import_type(record.type_path) if record.type_path else None
    if found is not None:
        try:
            spec = OutputSpec.of(found)
        except ArkError:
            spec = None
        if spec is not None and _canonical(spec.json_schema) == record.schema_text:
            return _TypedOutput(spec, record.mode if record.mode in ("native", "tool") else "text", max_retries)
    return _UnknownOutput(record)


TEXT = OutputPhase()


def output_phase(output_type: Any, *, mode: str, model: Any, max_retries: int) -> OutputPhase:
    """The phase of a run with ``output_type`` (None: plain text).

    ``mode`` "auto" asks natively when the model's ``capabilities.json_schema_output`` says
    it can, else through the ``final_result`` tool.
    """
    if output_type is None:
        return TEXT
    spec = OutputSpec.of(output_type)
    if spec.is_text:
        mode = "text"  # str: the plain answer, nothing to ask for
    elif mode == "auto":
        capabilities = getattr(model, "capabilities", None)
        mode = "native" if getattr(capabilities, "json_schema_output", False) else "tool"
    return _TypedOutput(spec, mode, max_retries)
