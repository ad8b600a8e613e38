"""Provider profiles: what differs between OpenAI-compatible services (seed 003 §7.2, §7.3).

A profile is a plain frozen value. It declares the endpoint, default headers,
capabilities and which ``ModelConfig.extensions`` it consumes. The wire mapping is
shared (``wire.py``); a profile only switches its documented variations on or off.

Example:
    >>> p = deepseek()
    >>> p.provider_id, p.chat_url
    ('deepseek', 'https://api.deepseek.com/chat/completions')
    >>> "thinking" in p.extensions
    True
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Mapping
from urllib.parse import urlsplit

from ...domain import ArkError, ErrorLayer

__all__ = [
    "Capabilities", "ProviderProfile", "deepseek", "is_loopback_host", "local", "openai", "zhipu",
]

# Sampling options most OpenAI-compatible servers accept; each profile lists what it
# consumes explicitly, so an option a service would reject never leaves silently.
_COMMON = frozenset({"top_p", "stop", "seed", "presence_penalty", "frequency_penalty",
                     "response_format", "user", "parallel_tool_calls", "logit_bias", "n"})


@dataclass(frozen=True)
class Capabilities:
    """What a service can do.

    Attributes:
        reasoning: the service can stream reasoning (``reasoning_content`` or tags).
        images: user messages may carry image parts.
        files: user messages may carry document parts (OpenAI ``file`` parts, inline data).
        streaming_tool_calls: tool-call arguments arrive over several deltas.
        json_schema_output: the service follows ``response_format`` of type
            ``json_schema``, so a typed answer (``output_type=``) is asked for natively;
            otherwise the runtime offers a ``final_result`` tool (DESIGN §17).
    """

    reasoning: bool = False
    images: bool = False
    files: bool = False
    streaming_tool_calls: bool = True
    json_schema_output: bool = False


def _thinking(value: Any) -> Any:
    # Convenience: ``extensions={"thinking": True}`` means ``{"type": "enabled"}``.
    if isinstance(value, bool):
        return {"type": "enabled" if value else "disabled"}
    return value


_NORMALISERS = MappingProxyType({"thinking": _thinking})


@dataclass(frozen=True)
class ProviderProfile:
    """How to talk to one OpenAI-compatible service.

    Build one with :func:`openai`, :func:`deepseek`, :func:`zhipu` or :func:`local`,
    and adjust it with :meth:`replace` or :meth:`with_extensions`.

    Attributes:
        provider_id: a short unique name (``"deepseek"``).
        base_url: the API root, ``https://`` unless the host is loopback.
        chat_path: appended to ``base_url`` (``/chat/completions``).
        default_headers: sent with every request (never the key: that is the client's).
        capabilities: see :class:`Capabilities`.
        extensions: ``ModelConfig.extensions`` names this profile puts into the body;
            any other name is a ``config`` error before a request is made.
        api_key_env: environment variable read when the client gets no ``api_key``.
        requires_api_key: False for local servers that ignore the key.
        max_tokens_field: body field for ``ModelConfig.max_tokens``.
        stream_usage: send ``stream_options.include_usage``.
        think_tags: split ``<think>…</think>`` at the start of the content into reasoning.
        send_reasoning: send assistant reasoning back as ``reasoning_content``.
        allow_insecure_http: permit plain ``http://`` to a non-loopback host (the key
            then travels in clear text; only for a trusted LAN server).
    """

    provider_id: str
    base_url: str
    chat_path: str = "/chat/completions"
    default_headers: Mapping[str, str] = field(default_factory=dict)
    capabilities: Capabilities = field(default_factory=Capabilities)
    extensions: frozenset[str] = frozenset()
    api_key_env: str | None = None
    requires_api_key: bool = True
    max_tokens_field: str = "max_tokens"
    stream_usage: bool = True
    think_tags: bool = False
    send_reasoning: bool = False
    allow_insecure_http: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "default_headers", MappingProxyType(dict(self.default_headers)))
        object.__setattr__(self, "extensions", frozenset(self.extensions))
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))
        check_url(self.chat_url, allow_insecure_http=self.allow_insecure_http)

    @property
    def chat_url(self) -> str:
        """The full chat completions URL."""
        return self.base_url + "/" + self.chat_path.lstrip("/")

    def replace(self, **changes: Any) -> ProviderProfile:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def with_extensions(self, *names: str) -> ProviderProfile:
        """A copy that also consumes the given extension names (passed into the body as is)."""
        return self.replace(extensions=self.extensions | frozenset(names))

    def extension_body(self, extensions: Mapping[str, Any]) -> dict[str, Any]:
        """The body fields for ``extensions``; raises ``ArkError(config)`` for one not consumed.

        seed 003 §7.2: an unconsumed extension is a config error, never sent silently.
        """
        unknown = sorted(set(extensions) - self.extensions)
        if unknown:
            raise ArkError(
                ErrorLayer.CONFIG, "extension_not_supported",
                f"profile {self.provider_id!r} does not consume extension(s) {unknown}; it consumes "
                f"{sorted(self.extensions) or 'none'} (use profile.with_extensions(...) to pass one through)")
        body = {}
        for name, value in extensions.items():
            normalise = _NORMALISERS.get(name)
            body[name] = normalise(value) if normalise else value
        return body


def is_loopback_host(host: str | None) -> bool:
    """True for ``localhost`` and loopback IP addresses (127.0.0.0/8, ::1)."""
    if not host:
        return False
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str, *, allow_insecure_http: bool = False) -> None:
    """Refuse anything but ``https://``, or ``http://`` to a loopback host."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "https" and parts.hostname:
        return
    if scheme == "http" and parts.hostname and (allow_insecure_http or is_loopback_host(parts.hostname)):
        return
    raise ArkError(ErrorLayer.SECURITY, "insecure_base_url",
                   f"refusing {scheme or 'relative'}:// URL for host {parts.hostname!r}: "
                   "only https, or http to a loopback host, may carry an API key")


_OPENAI_URL = "https://api.openai.com/v1"


def openai(base_url: str | None = None, *, extensions: Iterable[str] = ()) -> ProviderProfile:
    """OpenAI (``OPENAI_API_KEY``). Consumes the common sampling options and
    ``reasoning_effort``, ``max_completion_tokens``, ``service_tier``, ``store``, ``metadata``.

    Without ``base_url`` the ``OPENAI_BASE_URL`` environment variable is honoured, as the
    openai SDK honours it (a proxy or gateway), else ``https://api.openai.com/v1``. A
    profile whose URL is not OpenAI's own is named ``openai@host`` in errors, so a
    failure says which server answered.
    """
    if base_url is None:
        base_url = os.environ.get("OPENAI_BASE_URL", "").strip() or _OPENAI_URL
    host = urlsplit(base_url).hostname or ""
    provider_id = "openai" if host in ("", "api.openai.com") else f"openai@{host}"
    return ProviderProfile(
        provider_id=provider_id, base_url=base_url,
        capabilities=Capabilities(reasoning=False, images=True, files=True, streaming_tool_calls=True,
                                  json_schema_output=True),
        extensions=_COMMON | {"reasoning_effort", "service_tier", "store", "metadata", "verbosity"}
        | frozenset(extensions),
        api_key_env="OPENAI_API_KEY", max_tokens_field="max_completion_tokens")


def deepseek(base_url: str = "https://api.deepseek.com", *, extensions: Iterable[str] = ()) -> ProviderProfile:
    """DeepSeek (``DEEPSEEK_API_KEY``): ``reasoning_content`` streamed as reasoning;
    consumes ``thinking`` (``True`` means ``{"type": "enabled"}``) and ``reasoning_effort``."""
    return ProviderProfile(
        provider_id="deepseek", base_url=base_url,
        capabilities=Capabilities(reasoning=True, images=False, streaming_tool_calls=True),
        extensions=_COMMON | {"thinking", "reasoning_effort"} | frozenset(extensions),
        api_key_env="DEEPSEEK_API_KEY")


def zhipu(base_url: str = "https://open.bigmodel.cn/api/paas/v4", *,
          extensions: Iterable[str] = ()) -> ProviderProfile:
    """Zhipu GLM (``ZHIPUAI_API_KEY``): consumes ``thinking``, ``tool_stream``, ``do_sample``,
    ``request_id``, ``user_id`` and the common options; images with vision models."""
    return ProviderProfile(
        provider_id="zhipu", base_url=base_url,
        # Without tool_stream Zhipu sends each tool call whole, in one delta.
        capabilities=Capabilities(reasoning=True, images=True, streaming_tool_calls=False),
        extensions=_COMMON | {"thinking", "tool_stream", "do_sample", "request_id", "user_id"}
        | frozenset(extensions),
        api_key_env="ZHIPUAI_API_KEY")


def local(base_url: str = "http://localhost:11434/v1", *, provider_id: str = "local",
          images: bool = False, files: bool = False, think_tags: bool = True, stream_usage: bool = True,
          extensions: Iterable[str] = (), allow_insecure_http: bool = False) -> ProviderProfile:
    """A local server: Ollama (default URL), vLLM (``http://localhost:8000/v1``) or
    llama.cpp (``http://localhost:8080/v1``). No key needed; ``<think>`` tags become
    reasoning. Consumes the common options plus ``top_k``, ``min_p``,
    ``repetition_penalty``, ``reasoning_effort``, ``keep_alive`` and ``options``.
    ``images=True`` for a vision model, ``files=True`` for a server that takes ``file`` parts.
    All three follow ``response_format`` json_schema, so typed answers are asked for natively
    (``profile.replace(capabilities=...)`` for a server that does not)."""
    return ProviderProfile(
        provider_id=provider_id, base_url=base_url,
        capabilities=Capabilities(reasoning=True, images=images, files=files, streaming_tool_calls=True,
                                  json_schema_output=True),
        extensions=_COMMON | {"top_k", "min_p", "repetition_penalty", "reasoning_effort",
                              "keep_alive", "options"} | frozenset(extensions),
        requires_api_key=False, stream_usage=stream_usage, think_tags=think_tags,
        allow_insecure_http=allow_insecure_http)
