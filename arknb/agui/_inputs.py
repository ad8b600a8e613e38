"""What one AG-UI input does to its thread: checked first, then acted on (DESIGN §18).

:func:`check` reads a ``RunAgentInput`` against the thread's runtime and returns the
:class:`Plan` (the resume entries to decide, the client tool results to hand over, the
new messages to run), or raises the refusal (an ``ArkError`` whose code the server sends
as ``RUN_ERROR``) before anything is changed. :func:`act` carries the plan out through
the runtime's public API (the controller decides, ``runtime.start`` runs).
:func:`terminal` is the one ``RUN_FINISHED`` / ``RUN_ERROR`` a stream ends with.
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import (
    BaseEvent, ResumeEntry, RunAgentInput, RunErrorEvent, RunFinishedCancelledOutcome, RunFinishedEvent,
    RunFinishedInterruptOutcome, RunFinishedSuccessOutcome, TokenUsage,
)

from arknb.domain import AgentMessage, ArkError, ErrorCode, ErrorLayer
from arknb.runtime import AgentRunResult, AgentRuntime, RunHandle, StopReason
from arknb.state import PendingApprovalItem

from .client_tools import CLIENT_TOOL_KIND, ClientTool
from .events import now_ms
from .input_log import input_log
from .interrupts import ELICITATION, decide, to_interrupt, validate_payload
from .messages import new_messages, to_result, to_user_message

__all__ = ["Plan", "act", "check", "terminal"]

_SUCCESS = (StopReason.COMPLETED, StopReason.STOPPED, StopReason.SUSPENDED)


def _refusal(code: str, message: str, layer: ErrorLayer = ErrorLayer.DECODE) -> ArkError:
    return ArkError(layer, code, message)


class Plan:
    """What a checked request will do (built before anything is changed)."""

    def __init__(self) -> None:
        self.decisions: list[tuple[PendingApprovalItem, ResumeEntry]] = []
        self.client_results: list[tuple[ClientTool, str, Any]] = []
        self.user_messages: list[AgentMessage] = []
        self.user_ids: list[str] = []
        self.tools: list[Any] = []


def check(runtime: AgentRuntime, run_input: RunAgentInput, taken: set[str] | frozenset[str] = frozenset()) -> Plan:
    """What the request will do; raises the refusal if it does not fit the thread.

    ``taken``: ids of user messages this thread already ran; a client that sends the same
    input again (a retry after a lost connection) does not run it twice.
    """
    thread = run_input.thread_id
    pending = runtime.controller.list_pending_approvals()
    # A run paused mid-call on a server's question (elicitation) is resumed by answering it.
    if runtime.is_running and not (run_input.resume and any(item.kind == ELICITATION for item in pending)):
        raise _refusal(ErrorCode.RUN_ALREADY_ACTIVE, f"thread {thread!r} has a run in progress; wait for its "
                       "RUN_FINISHED before sending the next input", ErrorLayer.RUNTIME)
    for_person = [item for item in pending if item.kind != CLIENT_TOOL_KIND]
    for_client = {item.tool_call.id: item for item in pending if item.kind == CLIENT_TOOL_KIND}
    fresh = [m for m in new_messages(run_input.messages) if not (m.role == "user" and m.id in taken)]
    plan = Plan()
    plan.user_messages = [to_user_message(m) for m in fresh if m.role == "user"]
    plan.user_ids = [m.id for m in fresh if m.role == "user"]
    if run_input.resume and plan.user_messages:
        raise _refusal(ErrorCode.AGUI_INPUT_INVALID, "an input carries either resume entries or a new message, "
                       "not both: answer the interrupts first, then send the message")
    plan.decisions = _decisions(runtime, thread, run_input.resume or [], pending, for_person)
    plan.client_results = _client_results(runtime, thread, fresh, for_client)
    if plan.user_messages and for_person:
        raise _refusal(ErrorCode.PENDING_APPROVAL_BLOCKS_INPUT, f"thread {thread!r} waits for a person: resume "
                       f"its interrupts ({_ids(for_person)}) before sending a new message", ErrorLayer.SECURITY)
    answered = [call_id for _, call_id, _ in plan.client_results]
    if plan.user_messages and for_client:
        waiting = sorted(set(for_client) - set(answered)) or answered
        raise _refusal(ErrorCode.PENDING_APPROVAL_BLOCKS_INPUT, f"thread {thread!r} waits for the results of "
                       f"client tool calls {', '.join(map(repr, waiting))}: send them as tool messages "
                       "first, then the new message", ErrorLayer.SECURITY)
    plan.tools = _client_tools(runtime, run_input)
    return plan


def _ids(items: list[PendingApprovalItem]) -> str:
    return ", ".join(repr(item.approval_id) for item in items)


def _decisions(runtime: AgentRuntime, thread: str, resume: list[ResumeEntry], pending: list[PendingApprovalItem],
               for_person: list[PendingApprovalItem]) -> list[tuple[PendingApprovalItem, ResumeEntry]]:
    """The resume entries paired with the items they decide (their payloads checked)."""
    by_id = {item.approval_id: item for item in pending}
    recorded = {r.approval_id: r for r in runtime.state.resolved_approvals}
    decisions, already, seen = [], [], set()
    for entry in resume:
        if entry.interrupt_id in seen:
            raise _refusal(ErrorCode.AGUI_INPUT_INVALID, f"interrupt {entry.interrupt_id!r} is answered twice "
                           "in one input")
        seen.add(entry.interrupt_id)
        item = by_id.get(entry.interrupt_id)
        if item is not None and item.kind != CLIENT_TOOL_KIND:
            validate_payload(item, entry)
            decisions.append((item, entry))
        elif item is not None:
            raise _refusal(ErrorCode.AGUI_INPUT_INVALID, f"{entry.interrupt_id!r} is the client's own tool call "
                           f"{item.tool_call.name}: answer it with a tool message (toolCallId "
                           f"{item.tool_call.id!r}), not a resume entry")
        elif entry.interrupt_id in recorded:
            already.append(recorded[entry.interrupt_id])
        elif not for_person:
            raise _refusal(ErrorCode.NOTHING_TO_RESUME, f"thread {thread!r} has nothing pending, so interrupt "
                           f"{entry.interrupt_id!r} cannot be resumed; send a new message instead",
                           ErrorLayer.RUNTIME)
        else:
            raise _refusal(ErrorCode.INTERRUPT_NOT_FOUND, f"thread {thread!r} has no interrupt "
                           f"{entry.interrupt_id!r}; its open interrupts are {_ids(for_person)}", ErrorLayer.RUNTIME)
    if already and not decisions:
        # The same answer as the controller's for a repeated decision (DESIGN §7): the one on record.
        record = already[0]
        raise _refusal(ErrorCode.APPROVAL_ALREADY_RESOLVED, f"interrupt {record.approval_id!r} "
                       f"({record.tool_name}) was already decided {record.decision.value}; its batch has "
                       "resolved, nothing was changed and nothing runs again", ErrorLayer.RUNTIME)
    return decisions


def _client_results(runtime: AgentRuntime, thread: str, fresh: list[Any],
                    for_client: dict[str, PendingApprovalItem]) -> list[tuple[ClientTool, str, Any]]:
    """The new tool messages as results for the client tool calls they answer."""
    results = []
    for message in fresh:
        if message.role != "tool":
            continue
        item = for_client.get(message.tool_call_id)
        if item is None:
            if _known_call(runtime, message.tool_call_id):
                continue  # a result the client echoes back (from TOOL_CALL_RESULT): already known here
            raise _refusal(ErrorCode.AGUI_INPUT_INVALID, f"tool message {message.id!r} answers call "
                           f"{message.tool_call_id!r}, which no client tool of thread {thread!r} waits for")
        tool = runtime.tools.get(item.tool_call.name)
        if not isinstance(tool, ClientTool):
            raise _refusal(ErrorCode.AGUI_INPUT_INVALID, f"call {message.tool_call_id!r} was made to client tool "
                           f"{item.tool_call.name!r}, which this server no longer has")
        results.append((tool, message.tool_call_id, to_result(message)))
    return results


def _client_tools(runtime: AgentRuntime, run_input: RunAgentInput) -> list[Any]:
    """The tools the client declares (refused if one would shadow a tool of the agent)."""
    found = []
    for declared in run_input.tools or ():
        existing = runtime.tools.get(declared.name)
        if existing is not None and not isinstance(existing, ClientTool):
            raise _refusal(ErrorCode.INVALID_ARGUMENT, f"the client declares a tool {declared.name!r}, but the "
                           "agent already has a tool of that name; rename the client's tool", ErrorLayer.CONFIG)
        found.append(declared)
    return found


async def act(runtime: AgentRuntime, plan: Plan) -> RunHandle | None:
    """Carry out a checked plan; the handle of the run it starts or continues (None: no run)."""
    for declared in plan.tools:
        existing = runtime.tools.get(declared.name)
        if existing is None or not existing.same_as(declared.description, declared.parameters):
            runtime.tools.register(ClientTool(declared.name, declared.description, declared.parameters),
                                   replace=True)
    for item, entry in plan.decisions:
        decided = await decide(runtime.controller, item, entry)
        if not decided.ok and decided.error is not None and \
                decided.error.code != ErrorCode.APPROVAL_ALREADY_RESOLVED:
            raise decided.error.to_error()
    for tool, call_id, result in plan.client_results:
        tool.give_result(call_id, result)
    for item in runtime.controller.list_pending_approvals():
        if item.kind == CLIENT_TOOL_KIND and any(call_id == item.tool_call.id
                                                 for _, call_id, _ in plan.client_results):
            decided = await runtime.controller.approve(item.approval_id)
            if not decided.ok and decided.error is not None:
                raise decided.error.to_error()
    if plan.user_messages:
        log = input_log(runtime)
        before = log.remember(plan.user_ids)  # saved by the run's first save, with the message
        try:
            return runtime.start(plan.user_messages)
        except BaseException:
            log.restore(before)
            raise
    return runtime.current_run


def terminal(runtime: AgentRuntime, run_input: RunAgentInput, handle: RunHandle | None) -> BaseEvent:
    """The one RUN_FINISHED / RUN_ERROR that ends the stream, from how the run ended."""
    thread_id, run_id = run_input.thread_id, run_input.run_id
    result: AgentRunResult | None = None
    if handle is not None and not handle.task.done():  # still running: it waits for a server's question
        waiting = [to_interrupt(item, None) for item in runtime.controller.list_pending_approvals()
                   if item.kind == ELICITATION]
        return RunFinishedEvent(thread_id=thread_id, run_id=run_id, timestamp=now_ms(),
                                outcome=RunFinishedInterruptOutcome(interrupts=waiting))
    if handle is not None:
        task = handle.task
        if task.cancelled():
            return RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=RunFinishedCancelledOutcome(),
                                    timestamp=now_ms())
        error = task.exception()
        if error is not None:
            code = error.code if isinstance(error, ArkError) else ErrorCode.INTERNAL_ERROR.value
            return RunErrorEvent(message=getattr(error, "message", str(error)), code=code, timestamp=now_ms())
        result = task.result()
    usage = _usage(result)
    stop = result.stop_reason if result is not None else None
    if result is not None and stop not in _SUCCESS and stop not in (StopReason.AWAITING_APPROVAL,
                                                                      StopReason.CANCELLED):
        error = result.error
        return RunErrorEvent(message=error.message if error else f"the run ended {stop.value}",
                             code=error.code if error else stop.value, usage=usage, timestamp=now_ms())
    if stop is StopReason.CANCELLED:
        return RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=RunFinishedCancelledOutcome(),
                                usage=usage, timestamp=now_ms())
    pending = runtime.controller.list_pending_approvals()
    for_person = [item for item in pending if item.kind != CLIENT_TOOL_KIND]
    batch = runtime.controller.pending_batch()
    if for_person:
        interrupts = [to_interrupt(item, batch.batch_id if batch else None) for item in for_person]
        return RunFinishedEvent(thread_id=thread_id, run_id=run_id, usage=usage, timestamp=now_ms(),
                                outcome=RunFinishedInterruptOutcome(interrupts=interrupts))
    waiting = [item.tool_call.id for item in pending if item.kind == CLIENT_TOOL_KIND]
    outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=waiting or None)
    summary = {"stopReason": stop.value, "text": result.text} if result is not None else None
    return RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=outcome, result=summary, usage=usage,
                            timestamp=now_ms())



def _known_call(runtime: AgentRuntime, call_id: str) -> bool:
    batch = runtime.controller.pending_batch()
    messages = list(runtime.history) + ([batch.model_message] if batch is not None else [])
    return any(call.id == call_id for message in messages for call in message.tool_calls)


def _usage(result: AgentRunResult | None) -> list[TokenUsage] | None:
    if result is None or not (result.usage.input_tokens or result.usage.output_tokens):
        return None
    u = result.usage
    return [TokenUsage(input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                       total_tokens=u.input_tokens + u.output_tokens, reasoning_tokens=u.reasoning_tokens or None)]
