"""A model that plays the user (DESIGN §11): multi-turn cases without scripting every reply.

The simulated user sees the conversation from the other side (the agent's answers as
the messages it replies to) under a persona prompt, and answers with its next
message, or with the stop marker when its goal is met.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..domain import AgentMessage, ArkError, ModelConfig, ModelRequest, Role, invalid_argument

__all__ = ["SimulatedUser", "simulated_user"]

_INSTRUCTIONS = (
    "You play a user talking to an AI assistant. Stay in the persona below. Write only your next message to "
    "the assistant, nothing else. When your goal is reached, or you have nothing more to say, reply with "
    "exactly {stop}.\n\nPersona:\n{persona}"
)


class SimulatedUser:
    """What :func:`simulated_user` returns; a :class:`~arknb.eval.Case` takes it as ``user=``."""

    def __init__(self, model: Any, persona: str, *, max_user_turns: int, stop: str,
                 config: ModelConfig | None) -> None:
        if not callable(getattr(model, "generate", None)):
            raise invalid_argument(f"simulated_user(model, persona): model must be an LLMClient "
                                   f"(e.g. ScriptedModel), got {type(model).__name__}")
        if not isinstance(persona, str) or not persona.strip():
            raise invalid_argument("simulated_user(model, persona): persona must be a non-empty string")
        if isinstance(max_user_turns, bool) or not isinstance(max_user_turns, int) or max_user_turns < 1:
            raise invalid_argument(f"max_user_turns must be an int >= 1, got {max_user_turns!r}")
        if not isinstance(stop, str) or not stop.strip():
            raise invalid_argument("stop must be a non-empty marker string")
        self.model = model
        self.persona = persona
        self.max_user_turns = max_user_turns
        self.stop = stop
        self.config = config or ModelConfig()

    def request(self, conversation: Iterable[AgentMessage]) -> ModelRequest:
        """The request asking for the next user message, roles seen from the user's side."""
        messages = [AgentMessage.system(_INSTRUCTIONS.format(stop=self.stop, persona=self.persona))]
        for message in conversation:
            text = message.text
            if not text:
                continue
            if message.role is Role.ASSISTANT:
                messages.append(AgentMessage.user(text))          # what the agent said, the user replies to
            elif message.role is Role.USER:
                messages.append(AgentMessage.assistant(text))     # what the user said before
        if len(messages) == 1:
            messages.append(AgentMessage.user("(The conversation starts: write your first message.)"))
        return ModelRequest(messages=tuple(messages), config=self.config)

    async def next_message(self, conversation: Iterable[AgentMessage]) -> str | None:
        """The user's next message, or None when it is done (stop marker or nothing to say)."""
        try:
            response = await self.model.generate(self.request(conversation))
        except ArkError as exc:
            raise ArkError(exc.layer, exc.code, f"the simulated user's model failed: {exc.message}",
                           exc.retryability) from None
        text = response.message.text.strip()
        if not text or self.stop in text:
            return None
        return text

    def __repr__(self) -> str:
        return f"SimulatedUser(max_user_turns={self.max_user_turns}, persona={self.persona[:40]!r})"


def simulated_user(model: Any, persona: str, *, max_user_turns: int = 3, stop: str = "[DONE]",
                   config: ModelConfig | None = None) -> SimulatedUser:
    """A model playing the user for up to ``max_user_turns`` messages after the case's own.

    Args:
        model: any LLMClient (a ``ScriptedModel`` offline).
        persona: who the user is and what they want.
        max_user_turns: most messages the simulated user sends.
        stop: the marker it answers with when it is done.

    Example:
        >>> user = ev.simulated_user(ark.ScriptedModel(["And in Oslo?", "[DONE]"]), "A traveller comparing cities.")
        >>> case = ev.Case("weather chat", "Weather in Paris?", user=user)
    """
    return SimulatedUser(model, persona, max_user_turns=max_user_turns, stop=stop, config=config)
