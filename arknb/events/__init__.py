"""Events: the envelope, the type constants, and the bus that carries them."""

from .bus import EventBus, Journal, Listener, RequestHandler
from .envelope import AgentEvent
from .types import EventTypes

__all__ = ["AgentEvent", "EventBus", "EventTypes", "Journal", "Listener", "RequestHandler"]
