"""MCP servers as tool sources (DESIGN §15; the extra ``arknb[mcp]``, on the official ``mcp`` SDK).

Nothing in arknb's core imports this package: ``ark.MCPServer`` loads it when first used.
"""

from arknb.domain import ArkError, ErrorCode, ErrorLayer

try:
    import mcp  # noqa: F401
except ImportError:  # pragma: no cover - exercised only without the extra
    raise ArkError(ErrorLayer.CONFIG, ErrorCode.MCP_UNAVAILABLE,
                   "ark.MCPServer needs the optional extra: pip install 'arknb[mcp]'") from None

from .server import IDEMPOTENCY_META_KEY, MCPServer

__all__ = ["IDEMPOTENCY_META_KEY", "MCPServer"]
