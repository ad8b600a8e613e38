"""AG-UI: serve a notebook's agent to a web page (DESIGN §18; extra ``arknb[agui]``).

``ark.agui.app(runtime_factory)`` is an ASGI app speaking AG-UI 1.0 (the official
``ag-ui-protocol`` types and encoder); ``await ark.agui.serve(runtime_factory)`` runs it
on the kernel's loop. The core never imports this package.
"""

from __future__ import annotations

try:
    import ag_ui.core  # noqa: F401
    import starlette  # noqa: F401
except ImportError as _missing:  # pragma: no cover - exercised without the extra
    from arknb.domain import ArkError, ErrorCode, ErrorLayer

    raise ArkError(ErrorLayer.CONFIG, ErrorCode.AGUI_UNAVAILABLE,
                   f"arknb.agui needs the optional extra: pip install 'arknb[agui]' ({_missing.name} is missing)"
                   ) from None

from .client_tools import CLIENT_TOOL_KIND, ClientTool
from .events import EventMapper
from .interrupts import InterruptKind, register_interrupt_kind, to_interrupt
from .server import AguiApp, AguiServer, app, serve

__all__ = ["CLIENT_TOOL_KIND", "AguiApp", "AguiServer", "ClientTool", "EventMapper", "InterruptKind", "app",
           "register_interrupt_kind", "serve", "to_interrupt"]
