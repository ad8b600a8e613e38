"""HTTP status and provider error envelopes → :class:`ArkError` (seed 003 §5.5).

===========================  ===========  ============  ==================================
status / condition            layer        retryability  code
===========================  ===========  ============  ==================================
400, 422                      provider     never         provider_bad_request
401                           provider     never         provider_unauthorized
402                           provider     never         provider_payment_required
403                           provider     never         provider_forbidden
404                           provider     never         provider_not_found
408                           provider     safe          provider_request_timeout
413                           provider     never         provider_request_too_large
429                           provider     conditional   provider_rate_limited
429 with a quota code         provider     never         provider_quota_exceeded
500, 502, 503, 504            provider     safe          provider_unavailable
other 4xx / 5xx               provider     never         provider_http_error
3xx                           security     never         provider_redirect_refused
connect / read failure        transport    safe          provider_connection_error
first-output / idle timeout   transport    safe          provider_timeout
total timeout                 transport    never         provider_timeout
error object in the stream    provider     (by code)     provider_stream_error
stream ends before [DONE]     provider     safe          provider_stream_incomplete
interrupted finish reason     provider     safe          provider_interrupted
===========================  ===========  ============  ==================================

The envelope's ``error.code`` (or ``error.type``) becomes ``provider_code``; its
message is kept, shortened and passed through the key redactor.
"""

from __future__ import annotations

import json
import time
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Mapping

from ...domain import ArkError, ErrorLayer, Retryability
from ...domain.json_decode import decode_json

__all__ = ["error_from_envelope", "error_from_status", "parse_envelope", "retry_after_seconds"]

_MAX_MESSAGE = 500
_QUOTA_CODES = frozenset({"insufficient_quota", "1113", "billing_hard_limit_reached"})
_SAFE_TYPES = frozenset({"server_error", "overloaded_error", "internal_error", "service_unavailable",
                         "api_error"})

_STATUS: dict[int, tuple[str, Retryability]] = {
    400: ("provider_bad_request", Retryability.NEVER),
    401: ("provider_unauthorized", Retryability.NEVER),
    402: ("provider_payment_required", Retryability.NEVER),
    403: ("provider_forbidden", Retryability.NEVER),
    404: ("provider_not_found", Retryability.NEVER),
    408: ("provider_request_timeout", Retryability.SAFE),
    413: ("provider_request_too_large", Retryability.NEVER),
    422: ("provider_bad_request", Retryability.NEVER),
    429: ("provider_rate_limited", Retryability.CONDITIONAL),
    500: ("provider_unavailable", Retryability.SAFE),
    502: ("provider_unavailable", Retryability.SAFE),
    503: ("provider_unavailable", Retryability.SAFE),
    504: ("provider_unavailable", Retryability.SAFE),
}


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "…"


def parse_envelope(payload: Any) -> tuple[str | None, str | None]:
    """``(provider_code, message)`` from an error body in any of the usual shapes:
    ``{"error": {"code", "type", "message"}}``, ``{"error": "text"}``,
    ``{"object": "error", "message", "code"}`` (vLLM) or ``{"detail": ...}``."""
    if not isinstance(payload, dict):
        return None, None
    error = payload.get("error", payload if ("message" in payload or "detail" in payload) else None)
    if isinstance(error, str):
        return None, error
    if not isinstance(error, dict):
        return None, None
    code = error.get("code")
    if code is None or code == "":
        code = error.get("type")
    message = error.get("message", error.get("detail"))
    if message is not None and not isinstance(message, str):
        message = json.dumps(message, ensure_ascii=False)
    return (None if code is None else str(code)), message


def error_from_status(status: int, body: bytes, *, provider: str,
                      redact: Callable[[str], str] = lambda s: s) -> ArkError:
    """The error for a non-2xx response (its body already read, possibly empty)."""
    text = body.decode("utf-8", "replace") if body else ""
    try:
        payload = decode_json(text) if text else None
    except ValueError:  # not JSON, or nested too deeply (JSONTooDeepError): the body is shown as text
        payload = None
    provider_code, message = parse_envelope(payload)
    if provider_code is not None:
        provider_code = redact(provider_code)
    if message is None:
        message = text if payload is None else ""
    if 300 <= status < 400:
        return ArkError(ErrorLayer.SECURITY, "provider_redirect_refused",
                        f"{provider} answered with redirect {status}; redirects are never followed "
                        "(check base_url)", status_code=status)
    code, retryability = _STATUS.get(status, ("provider_http_error", Retryability.NEVER))
    if status == 429 and provider_code in _QUOTA_CODES:
        code, retryability = "provider_quota_exceeded", Retryability.NEVER
    detail = _shorten(redact(message)) if message else "no error message in the response body"
    return ArkError(ErrorLayer.PROVIDER, code, f"{provider} returned HTTP {status}: {detail}",
                    retryability, status_code=status, provider_code=provider_code)


def error_from_envelope(payload: dict[str, Any], *, provider: str,
                        redact: Callable[[str], str] = lambda s: s) -> ArkError:
    """The error for an error object sent inside the stream (or with a 200 JSON body)."""
    provider_code, message = parse_envelope(payload)
    if provider_code is not None:
        provider_code = redact(provider_code)
    retryability = Retryability.NEVER
    error = payload.get("error")
    status = None
    if isinstance(error, dict):
        for key in ("status", "http_code", "code"):
            value = error.get(key)
            if isinstance(value, int) or (isinstance(value, str) and value.isdigit() and len(value) == 3):
                status = int(value)
                break
        if error.get("type") in _SAFE_TYPES:
            retryability = Retryability.SAFE
    if status is not None and status in _STATUS:
        retryability = _STATUS[status][1]
    detail = _shorten(redact(message)) if message else "no error message"
    return ArkError(ErrorLayer.PROVIDER, "provider_stream_error",
                    f"{provider} sent an error in the stream: {detail}", retryability,
                    status_code=status, provider_code=provider_code)


def retry_after_seconds(headers: Mapping[str, str], *, now: Callable[[], float] = time.time) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, or ``Retry-After`` as
    seconds or an HTTP date. ``None`` when absent or unreadable."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - now())
    except (TypeError, ValueError, IndexError):
        return None
