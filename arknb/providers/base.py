"""The LLM client protocol every model implementation follows (seed 003 §5.3)."""

from __future__ import annotations

from typing import AsyncIterator, Protocol, runtime_checkable

from ..domain import CancellationToken, ModelRequest, ModelResponse, StreamingEvent

__all__ = ["LLMClient"]


@runtime_checkable
class LLMClient(Protocol):
    """A model the runtime can call.

    ``stream`` yields :data:`StreamingEvent` values: ``model_start`` first, then deltas,
    then exactly one ``model_complete`` carrying the whole :class:`ModelResponse`, or
    it raises :class:`ArkError` (it never ends silently). When ``cancel`` fires, the
    implementation stops promptly and releases its connection. ``generate`` returns
    the complete response of a non-streamed call.

    Optional: a client that holds credentials reports them so the runtime can redact
    them (DESIGN §9). ``secret_values() -> Iterable[str | SecretStr]`` lists the keys
    known up front; ``observe_secrets(observer) -> stop`` calls ``observer(SecretStr)``
    for every key known now and for each new one it resolves, before the request that
    uses it is sent; ``async resolve_secrets()`` resolves a key that was not resolved yet
    (the runtime calls it as each run starts, so a run continued after a restore, whose
    tools run before its first request, knows the key too). ``OpenAICompatibleClient``
    has all three. A wrapper client (a recorder, a router) should forward them. Clients
    without them keep working.

    Optional too: ``check_input(messages) -> None`` raises ``ArkError`` for a message
    part the model cannot take (``unsupported_content``: an image for a text-only
    model). The runtime asks before it starts a run, so a refused message never enters
    the session's history and no request is made.
    """

    def stream(self, request: ModelRequest, *,
               cancel: CancellationToken | None = None) -> AsyncIterator[StreamingEvent]: ...

    async def generate(self, request: ModelRequest, *,
                       cancel: CancellationToken | None = None) -> ModelResponse: ...
