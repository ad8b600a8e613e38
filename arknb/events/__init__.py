"""Events: the envelope, the type constants, and the bus that carries them."""

from .bus import EventBus, Listener, RequestHandler
from .envelope import AgentEvent
from .types import EventTypes

__all__ = ["AgentEvent", "EventBus", "EventTypes", "Listener", "RequestHandler"]
