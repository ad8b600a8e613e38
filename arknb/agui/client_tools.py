"""Tools the AG-UI client declares (``RunAgentInput.tools``): front-end tools (DESIGN §18).

The model is offered them like any tool. When it calls one, the call cannot run here:
the tool hands it to the client with ``ctx.defer`` (kind :data:`CLIENT_TOOL_KIND`), so
the batch pauses exactly as for an approval (saved first; the other calls of the batch
keep their results), and the server ends the run successfully with the call unanswered
(``RUN_FINISHED`` outcome ``success``, ``pendingToolCallIds``). The client's result comes
as a tool message in the next input: the server keeps it for the call and approves the
item, so the call runs again here and answers with that result.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

import jsonschema

from arknb.domain import ArkError, ErrorCode, ToolDefinition, ToolResult, ToolRisk
from arknb.tools import Tool, ToolContext

__all__ = ["CLIENT_TOOL_KIND", "ClientTool"]

CLIENT_TOOL_KIND = "agui.client_tool"
"""The kind of the pending item a client tool's call becomes while the client runs it."""


class ClientTool(Tool):
    """A tool the AG-UI client runs; its arguments are checked against the client's schema.

    Args:
        name: the tool's name.
        description: what the model is told it does.
        parameters: the client's JSON Schema of its arguments (None: any object).
    """

    def __init__(self, name: str, description: str, parameters: Mapping[str, Any] | None) -> None:
        async def client_tool(ctx: ToolContext) -> ToolResult:
            return self._answer(ctx)

        super().__init__(client_tool, name=name, description=description or f"the client's {name} tool")
        schema = dict(parameters) if parameters else {"type": "object", "properties": {}}
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ArkError("decode", ErrorCode.AGUI_INPUT_INVALID,
                           f"the client's tool {name!r} has an invalid parameters schema: {exc.message}") from None
        self._schema_validator = jsonschema.validators.validator_for(schema)(schema)
        self._client_definition = ToolDefinition(name=name, description=self.description, parameters=schema,
                                                 risk=ToolRisk.SAFE)
        self._results: dict[str, ToolResult] = {}

    @property
    def definition(self) -> ToolDefinition:
        """The definition sent to the model, with the client's schema."""
        return self._client_definition

    @property
    def parameters(self) -> dict[str, Any]:
        """The client's JSON Schema of the arguments."""
        return self._client_definition.parameters

    def same_as(self, description: str, parameters: Mapping[str, Any] | None) -> bool:
        """True if the client declares this tool unchanged."""
        schema = dict(parameters) if parameters else {"type": "object", "properties": {}}
        return description == self.description and schema == self.parameters

    def give_result(self, call_id: str, result: ToolResult) -> None:
        """Keep the client's ``result`` for ``call_id``; the call answers with it when it runs again."""
        self._results[call_id] = result

    async def invoke_json(self, arguments_json: str, ctx: ToolContext) -> ToolResult:
        """Check the arguments against the client's schema, then defer the call to the client
        (or answer with the result the client gave for it)."""
        try:
            arguments = json.loads(arguments_json or "{}")
        except ValueError as exc:
            return ToolResult.from_text(f"invalid arguments for tool {self.name!r}: not valid JSON ({exc})",
                                        is_error=True, error_code=ErrorCode.TOOL_ARGUMENTS_INVALID)
        return await self.invoke(arguments, ctx)

    async def invoke(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        """Check parsed arguments against the client's schema (an error result to the model if
        they do not fit), then defer the call to the client or answer with its result."""
        problems = [f"{'.'.join(map(str, e.path)) or 'arguments'}: {e.message}"
                    for e in self._schema_validator.iter_errors(arguments)]
        if problems:
            return ToolResult.from_text(f"invalid arguments for tool {self.name!r}: " + "; ".join(problems),
                                        is_error=True, error_code=ErrorCode.TOOL_ARGUMENTS_INVALID)
        return self._answer(ctx)

    def _answer(self, ctx: ToolContext) -> ToolResult:
        result = self._results.pop(ctx.call_id, None)
        if result is not None:
            return result
        return ctx.defer(f"the client runs {self.name}", kind=CLIENT_TOOL_KIND, detail={"tool": self.name})

    def __repr__(self) -> str:
        return f"ClientTool(name={self.name!r})"
