"""Errors: one exception type, classified by layer, code and retryability.

Every failure a caller can see is an :class:`ArkError`. The ``code`` says what went
wrong, the ``layer`` says where (seed 003 §5.5), and ``retryability`` says whether
trying again can help. Codes that must exist, with their layers (seed 000 §11):

==================================  ===========  ==========================================
code                                layer        meaning
==================================  ===========  ==========================================
hook_abort                          security     a hook stopped the run
tool_denied                         security     a tool call was denied (synthetic result)
awaiting_approval                   security     the run paused for a human decision
pending_approval_blocks_input       security     new input while approvals are pending
loop_detected                       runtime      the same tool call repeated too often
cancelled                           cancelled    the user cancelled the run
state_save_failed                   storage      a save failed
not_resumable                       storage      the session was marked not resumable
state_corrupt                       storage      a saved file could not be read
state_version_unsupported           storage      a saved file is from a newer arknb
approval_host_missing               runtime      controller not bound (never retryable)
approval_not_found                  runtime      unknown or already consumed approval id
request_handler_missing             config       EventBus.request with no handler
request_handler_duplicate           config       a second request handler for one type
tool_not_found                      tool         the model called an unregistered tool
tool_arguments_invalid              tool         bad JSON or schema failure
tool_failed                         tool         the tool raised
run_already_active                  runtime      a second run while one is active
script_exhausted                    config       ScriptedModel has no turn left
invalid_argument                    config       a public call got a wrong type or value
secret_in_state                     security     a save would write a credential the lint cannot redact
max_turns                           runtime      the run reached max_turns
nothing_to_resume                   runtime      resume() with no suspended run
not_executed                        tool         (result code) a call answered without running it
tool_call_truncated                 tool         a reply cut at max_tokens inside a tool call: the call's arguments are incomplete, it is never run
model_retries_exhausted             runtime      after_model_call asked for more retries than allowed
internal_error                      runtime      an unexpected exception inside arknb (a bug)
session_not_found                   storage      restore() of a session that was never saved
no_running_loop                     runtime      start() outside a running asyncio loop
state_load_failed                   storage      a saved file could not be read (e.g. permissions)
provider_stream_incomplete          provider     the model stream ended before it completed
state_conflict                      storage      a save or decision based on a revision that is no longer current
approval_already_resolved           runtime      a decision repeated after its batch resolved (carries the decision)
state_save_timeout                  storage      a save did not finish within its time limit
pending_plan_review_blocks_input    security     new input while a plan review is pending
session_locked                      storage      another live owner holds the session's lease
lease_lost                          storage      a commit from an owner whose lease was taken over
bus_closed                          runtime      the invocation bus closed while a caller waited
reentrant_operation_wait            runtime      an operation awaited its own result
schema_unsupported                  config       no handler for a request's schema version
operation_not_found                 storage      no operation with that id
operation_not_in_doubt              storage      the operation is not waiting for a person
store_version_unsupported           storage      a store's layout is from a newer arknb
cassette_mismatch                   config       a request differs from the cassette's next record (arknb.eval)
cassette_corrupt                    storage      a cassette line could not be read (names file and line)
cassette_version_unsupported        storage      a cassette is from a newer arknb
cassette_exhausted                  config       a replay asked for more model calls than were recorded
trace_corrupt                       storage      a trace line could not be read (names file and line)
trace_version_unsupported           storage      a trace file is from a newer arknb
report_corrupt                      storage      a suite report line could not be read (names file and line)
report_version_unsupported          storage      a suite report is from a newer arknb
suite_invalid                       config       a suite file or case definition is unusable (names file and line)
case_timeout                        runtime      an eval case ran longer than its time limit
otel_unavailable                    config       ev.otel needs the optional extra arknb[otel]
eval_file_not_found                 storage      a cassette, trace, report or suite file does not exist
context_budget_exceeded             runtime      a request cannot fit max_tokens even compressed
context_summary_failed              runtime      the context summarizer failed or gave no text
subagent_not_found                  tool         delegate_task named an agent that does not exist
runtime_closed                      runtime      the runtime was closed (``aclose``); it runs and decides nothing more
agui_unavailable                    config       arknb.agui needs the optional extra arknb[agui]
agui_input_invalid                  decode       an AG-UI request that cannot be read or does not fit the thread
interrupt_not_found                 runtime      an AG-UI resume names an interrupt the thread never had
runtime_not_found                   config       a magic named a runtime the kernel does not have
graph_invalid                       config       a graph's nodes and edges do not make a runnable graph (names the node)
graph_route_invalid                 runtime      a route returned None or a name the graph does not have
graph_node_failed                   runtime      a graph node raised or returned an update the state refuses
graph_run_not_found                 storage      Graph.restore of a run that was never saved
human_answer_invalid                config       answer_human got a value the human node's type refuses
output_invalid                      runtime      a typed answer failed validation after max_output_retries more tries (names the fields)
output_schema_unsupported           config       a JSON-schema answer asked of a provider profile that does not support it
output_type_unavailable             config       a restored paused run asked for a typed answer this process cannot rebuild (names the type)
unsupported_content                 config       a part the model's profile cannot carry (refused before any request)
document_unreadable                 config       ContentPart.from_document_text could not read or extract a file
pdf_unavailable                     config       reading a PDF needs the optional extra arknb[pdf]
attachment_too_large                config       a file given to the chat is over its size cap (names both)
tool_name_conflict                  config       two tool sources offer a tool of one name (names both; use prefix=)
tool_source_failed                  transport    a tool source (an MCP server) cannot start or connect (names the
                                                 command or URL, the exit code and the last lines of its stderr)
mcp_unavailable                     config       ark.MCPServer needs the optional extra arknb[mcp]
tool_timeout                        tool         a tool source's call got no answer within its time limit
provider_*                          provider     mapped from HTTP status (seed 003 §5.5)
==================================  ===========  ==========================================

``approval_already_decided`` is deliberately not an error: deciding twice is an
idempotent success.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["ArkError", "ErrorCode", "ErrorInfo", "ErrorLayer", "Retryability", "invalid_argument"]


class ErrorLayer(StrEnum):
    """Where an error arose."""

    DECODE = "decode"
    CONFIG = "config"
    TRANSPORT = "transport"
    PROVIDER = "provider"
    TOOL = "tool"
    RUNTIME = "runtime"
    STORAGE = "storage"
    SECURITY = "security"
    CANCELLED = "cancelled"


class Retryability(StrEnum):
    """Whether trying the same thing again can succeed."""

    NEVER = "never"
    SAFE = "safe"
    CONDITIONAL = "conditional"


class ErrorCode(StrEnum):
    """The codes arknb itself raises. Provider codes (``provider_*``) are added by providers."""

    HOOK_ABORT = "hook_abort"
    TOOL_DENIED = "tool_denied"
    AWAITING_APPROVAL = "awaiting_approval"
    PENDING_APPROVAL_BLOCKS_INPUT = "pending_approval_blocks_input"
    LOOP_DETECTED = "loop_detected"
    CANCELLED = "cancelled"
    STATE_SAVE_FAILED = "state_save_failed"
    NOT_RESUMABLE = "not_resumable"
    STATE_CORRUPT = "state_corrupt"
    STATE_VERSION_UNSUPPORTED = "state_version_unsupported"
    APPROVAL_HOST_MISSING = "approval_host_missing"
    APPROVAL_NOT_FOUND = "approval_not_found"
    REQUEST_HANDLER_MISSING = "request_handler_missing"
    REQUEST_HANDLER_DUPLICATE = "request_handler_duplicate"
    TOOL_NOT_FOUND = "tool_not_found"
    TOOL_ARGUMENTS_INVALID = "tool_arguments_invalid"
    TOOL_FAILED = "tool_failed"
    RUN_ALREADY_ACTIVE = "run_already_active"
    SCRIPT_EXHAUSTED = "script_exhausted"
    INVALID_ARGUMENT = "invalid_argument"
    SECRET_IN_STATE = "secret_in_state"
    MAX_TURNS = "max_turns"
    NOTHING_TO_RESUME = "nothing_to_resume"
    NOT_EXECUTED = "not_executed"
    TOOL_CALL_TRUNCATED = "tool_call_truncated"
    MODEL_RETRIES_EXHAUSTED = "model_retries_exhausted"
    INTERNAL_ERROR = "internal_error"
    SESSION_NOT_FOUND = "session_not_found"
    NO_RUNNING_LOOP = "no_running_loop"
    STATE_LOAD_FAILED = "state_load_failed"
    PROVIDER_STREAM_INCOMPLETE = "provider_stream_incomplete"
    STATE_CONFLICT = "state_conflict"
    APPROVAL_ALREADY_RESOLVED = "approval_already_resolved"
    STATE_SAVE_TIMEOUT = "state_save_timeout"
    PENDING_PLAN_REVIEW_BLOCKS_INPUT = "pending_plan_review_blocks_input"
    SESSION_LOCKED = "session_locked"
    LEASE_LOST = "lease_lost"
    BUS_CLOSED = "bus_closed"
    REENTRANT_OPERATION_WAIT = "reentrant_operation_wait"
    SCHEMA_UNSUPPORTED = "schema_unsupported"
    OPERATION_NOT_FOUND = "operation_not_found"
    OPERATION_NOT_IN_DOUBT = "operation_not_in_doubt"
    STORE_VERSION_UNSUPPORTED = "store_version_unsupported"
    # arknb.eval (DESIGN §11)
    CASSETTE_MISMATCH = "cassette_mismatch"
    CASSETTE_CORRUPT = "cassette_corrupt"
    CASSETTE_VERSION_UNSUPPORTED = "cassette_version_unsupported"
    CASSETTE_EXHAUSTED = "cassette_exhausted"
    TRACE_CORRUPT = "trace_corrupt"
    TRACE_VERSION_UNSUPPORTED = "trace_version_unsupported"
    REPORT_CORRUPT = "report_corrupt"
    REPORT_VERSION_UNSUPPORTED = "report_version_unsupported"
    SUITE_INVALID = "suite_invalid"
    CASE_TIMEOUT = "case_timeout"
    OTEL_UNAVAILABLE = "otel_unavailable"
    EVAL_FILE_NOT_FOUND = "eval_file_not_found"
    CONTEXT_BUDGET_EXCEEDED = "context_budget_exceeded"
    CONTEXT_SUMMARY_FAILED = "context_summary_failed"
    SUBAGENT_NOT_FOUND = "subagent_not_found"
    RUNTIME_CLOSED = "runtime_closed"
    # arknb.agui and the IPython extension (DESIGN §18)
    AGUI_UNAVAILABLE = "agui_unavailable"
    AGUI_INPUT_INVALID = "agui_input_invalid"
    INTERRUPT_NOT_FOUND = "interrupt_not_found"
    RUNTIME_NOT_FOUND = "runtime_not_found"
    # arknb.graphs (DESIGN §16)
    GRAPH_INVALID = "graph_invalid"
    GRAPH_ROUTE_INVALID = "graph_route_invalid"
    GRAPH_NODE_FAILED = "graph_node_failed"
    GRAPH_RUN_NOT_FOUND = "graph_run_not_found"
    HUMAN_ANSWER_INVALID = "human_answer_invalid"
    OUTPUT_INVALID = "output_invalid"
    OUTPUT_SCHEMA_UNSUPPORTED = "output_schema_unsupported"
    OUTPUT_TYPE_UNAVAILABLE = "output_type_unavailable"
    # media (DESIGN §17)
    UNSUPPORTED_CONTENT = "unsupported_content"
    DOCUMENT_UNREADABLE = "document_unreadable"
    PDF_UNAVAILABLE = "pdf_unavailable"
    ATTACHMENT_TOO_LARGE = "attachment_too_large"
    TOOL_NAME_CONFLICT = "tool_name_conflict"
    TOOL_SOURCE_FAILED = "tool_source_failed"
    MCP_UNAVAILABLE = "mcp_unavailable"
    TOOL_TIMEOUT = "tool_timeout"


class ErrorInfo(BaseModel):
    """The serialisable form of an :class:`ArkError` (for state, events and results)."""

    model_config = ConfigDict(frozen=True)

    layer: ErrorLayer
    code: str
    message: str
    retryability: Retryability = Retryability.NEVER
    status_code: int | None = None
    provider_code: str | None = None

    def to_error(self) -> ArkError:
        """Rebuild the exception."""
        return ArkError(self.layer, self.code, self.message, self.retryability,
                        status_code=self.status_code, provider_code=self.provider_code)


class ArkError(Exception):
    """The one exception arknb raises.

    Example:
        >>> err = ArkError("security", "hook_abort", "blocked by policy")
        >>> err.layer == "security", err.code
        (True, 'hook_abort')
    """

    def __init__(
        self,
        layer: ErrorLayer | str,
        code: str,
        message: str,
        retryability: Retryability | str = Retryability.NEVER,
        *,
        status_code: int | None = None,
        provider_code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.layer = ErrorLayer(layer)
        self.code = str(code)
        self.message = message
        self.retryability = Retryability(retryability)
        self.status_code = status_code
        self.provider_code = provider_code

    @property
    def retryable(self) -> bool:
        """True unless the error is never retryable."""
        return self.retryability is not Retryability.NEVER

    def info(self) -> ErrorInfo:
        """The serialisable form of this error."""
        return ErrorInfo(layer=self.layer, code=self.code, message=self.message,
                         retryability=self.retryability, status_code=self.status_code,
                         provider_code=self.provider_code)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (used in event payloads)."""
        return self.info().model_dump(mode="json")

    def __str__(self) -> str:
        return f"[{self.layer.value}/{self.code}] {self.message}"

    def __repr__(self) -> str:
        return f"ArkError(layer={self.layer.value!r}, code={self.code!r}, message={self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.to_dict(),))


def _rebuild(data: dict[str, Any]) -> ArkError:
    return ErrorInfo.model_validate(data).to_error()


def invalid_argument(message: str) -> ArkError:
    """A config-layer error for a wrong type or impossible value given to a public call."""
    return ArkError(ErrorLayer.CONFIG, ErrorCode.INVALID_ARGUMENT, message)
