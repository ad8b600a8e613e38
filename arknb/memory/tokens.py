"""Token estimates: what the context compressor counts when no tokenizer is given.

arknb ships no tokenizer: ``tiktoken`` downloads its BPE tables from the network the
first time an encoding is used, which fails offline (checked: ``get_encoding``
raises a connection error with only the package installed), and a notebook workshop
must work with no network. So the default is an estimate, documented here and
deliberately on the high side for budgets:

* ASCII text: one token per 4 characters, rounded up (OpenAI's rule of thumb for
  English and code);
* every other character (CJK, accented letters, emoji): one token each (CJK text is
  about one token per character in common BPE vocabularies; others are fewer, so
  this over-counts, which is the safe direction for a budget);
* each message: 4 tokens of framing (role and separators), each tool call its name and
  arguments as text plus 4, each image 765 (a 1024x1024 high-detail image in OpenAI's
  table), a base64 document its length / 4;
* reasoning is not counted: most providers are not sent it back (see the profile's
  ``send_reasoning``).

Give ``ContextCompressor(count_tokens=...)`` a function ``AgentMessage -> int`` to use
a real tokenizer (``len(enc.encode(message.text))`` with a cached tiktoken encoding,
a Hugging Face tokenizer, ...).
"""

from __future__ import annotations

import json
from typing import Iterable

from ..domain import AgentMessage, ContentKind, ToolDefinition

__all__ = ["IMAGE_TOKENS", "MESSAGE_OVERHEAD", "estimate_message_tokens", "estimate_text_tokens",
           "estimate_tools_tokens"]

MESSAGE_OVERHEAD = 4
"""Tokens of framing counted per message (role, separators)."""

IMAGE_TOKENS = 765
"""Tokens counted per image part."""


def estimate_text_tokens(text: str) -> int:
    """The estimate for one text: ASCII characters / 4 (rounded up) plus one per other character.

    Example:
        >>> estimate_text_tokens("hello world!"), estimate_text_tokens("你好")
        (3, 2)
    """
    if not text:
        return 0
    ascii_chars = len(text.encode("ascii", "ignore"))  # C speed: no per-character loop in Python
    return (ascii_chars + 3) // 4 + (len(text) - ascii_chars)


def estimate_message_tokens(message: AgentMessage) -> int:
    """The default ``count_tokens``: the estimate for one message (see the module docstring)."""
    total = MESSAGE_OVERHEAD
    for part in message.contents:
        kind = part.kind
        if kind is ContentKind.TEXT:
            total += estimate_text_tokens(part.text or "")
        elif kind is ContentKind.IMAGE:
            total += IMAGE_TOKENS
        else:
            total += (len(part.data) // 4) if part.data else estimate_text_tokens(part.url or "")
    for call in message.tool_calls:
        total += MESSAGE_OVERHEAD + estimate_text_tokens(call.name) + estimate_text_tokens(call.arguments_json)
    return total


def estimate_tools_tokens(definitions: Iterable[ToolDefinition]) -> int:
    """The estimate for the tool definitions sent with a request (name, description, schema)."""
    total = 0
    for definition in definitions:
        total += MESSAGE_OVERHEAD + estimate_text_tokens(definition.name) + estimate_text_tokens(
            definition.description) + estimate_text_tokens(json.dumps(definition.parameters, separators=(",", ":")))
    return total
