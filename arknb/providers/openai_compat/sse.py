"""SSE framing of a Chat Completions response, on top of ``httpx-sse``.

``httpx-sse`` does the framing (CR, LF and CRLF line ends, ``:`` comments, multi-line
``data:`` joined with ``\\n``, a line end split across reads). This module adds what
is specific to the wire format: UTF-8 decoding that survives a character split across
reads and drops a leading BOM, the ``[DONE]`` sentinel, JSON decoding of each event,
and ``event: error``.
"""

from __future__ import annotations

from typing import Any, AsyncIterator

import httpx
from httpx_sse import EventSource

from ...domain import ArkError, ErrorLayer
from ...domain.json_decode import MAX_JSON_DEPTH, JSONTooDeepError, decode_json

__all__ = ["DONE", "iter_chunks"]

DONE = object()
"""Yielded once for ``data: [DONE]``; whatever follows is read and ignored."""


async def iter_chunks(response: httpx.Response) -> AsyncIterator[Any]:
    """Decoded chunk objects of an SSE response, then :data:`DONE` if the server sent it.

    An ``event: error`` event is yielded as ``{"error": ...}`` so the caller handles it
    like an error object in the data. A data field that is not JSON, or nests more than
    ``MAX_JSON_DEPTH`` levels, is a ``decode`` error (``provider_decode_error``).
    """
    # SSE is always UTF-8 (WHATWG §9.2.5); the incremental codec keeps a character
    # split across reads whole, and "-sig" drops a leading byte order mark.
    response.encoding = "utf-8-sig"
    source = EventSource(response).aiter_sse()
    try:
        async for event in source:
            data = event.data
            if not data:
                continue
            if len(data) < 16 and data.strip() == "[DONE]":
                yield DONE
                # Read the rest (normally just the end of the body) so the
                # connection can go back to the pool instead of being dropped.
                async for _ in source:
                    pass
                return
            try:
                chunk = decode_json(data)
            except JSONTooDeepError:
                raise ArkError(ErrorLayer.DECODE, "provider_decode_error",
                               f"the server sent an SSE data field nested more than {MAX_JSON_DEPTH} levels deep "
                               f"({len(data)} chars)") from None
            except ValueError:
                raise ArkError(ErrorLayer.DECODE, "provider_decode_error",
                               f"the server sent an SSE data field that is not JSON ({len(data)} chars)") from None
            if event.event == "error" and not (isinstance(chunk, dict) and "error" in chunk):
                chunk = {"error": chunk}
            yield chunk
    finally:
        await source.aclose()
