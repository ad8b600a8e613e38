"""``ev.llm_judge``: a model grades the answer against a rubric, with a strictly parsed verdict.

The judge is asked to answer ``PASS: <reason>`` or ``FAIL: <reason>``. Anything else
(a hedge, lower case, no verdict, a verdict after some preamble) is an *errored*
grade: an unreadable verdict never counts as a pass.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..domain import AgentMessage, ArkError, ModelConfig, ModelRequest, invalid_argument
from ._diff import short
from .grading import Grade, Grader

if TYPE_CHECKING:
    from .case import Case, CaseResult

__all__ = ["JUDGE_INSTRUCTIONS", "llm_judge", "parse_verdict"]

JUDGE_INSTRUCTIONS = (
    "You grade an AI assistant's work against a rubric. Read the rubric, the user's input, the tools the "
    "assistant called and its final answer. Reply with exactly one line that starts with the verdict in "
    "capitals, then a colon and a short reason: 'PASS: <reason>' if the answer meets the rubric, "
    "'FAIL: <reason>' if it does not. Write nothing before the verdict."
)
"""The judge's system prompt."""

_VERDICT = re.compile(r"\A(PASS|FAIL)(?::[ \t]*(.*)|[ \t]*)\Z", re.DOTALL)


def parse_verdict(text: str) -> tuple[bool, str]:
    """``(passed, reason)`` from a judge's reply; ``ValueError`` when it is not ``PASS: ...`` / ``FAIL: ...``.

    Example:
        >>> parse_verdict("PASS: names Paris")
        (True, 'names Paris')
    """
    match = _VERDICT.match(text.strip())
    if match is None:
        raise ValueError(f"unparsable verdict: the judge must answer 'PASS: <reason>' or 'FAIL: <reason>', "
                         f"it answered {short(text.strip(), 120)}")
    return match.group(1) == "PASS", (match.group(2) or "").strip()


class _LLMJudge(Grader):
    def __init__(self, rubric: str, model: Any, name: str | None, config: ModelConfig | None) -> None:
        if not isinstance(rubric, str) or not rubric.strip():
            raise invalid_argument("llm_judge(rubric, model): the rubric must be a non-empty string")
        if not callable(getattr(model, "generate", None)) and not callable(getattr(model, "stream", None)):
            raise invalid_argument(f"llm_judge(rubric, model): model must be an LLMClient (e.g. a ScriptedModel "
                                   f"or OpenAICompatibleClient), got {type(model).__name__}")
        if config is not None and not isinstance(config, ModelConfig):
            raise invalid_argument(f"llm_judge config must be a ModelConfig, got {type(config).__name__}")
        self.rubric = rubric
        self.model = model
        self.config = config or ModelConfig()
        self.name = name or "llm_judge"

    def request(self, case: Case, result: CaseResult) -> ModelRequest:
        """The request the judge gets for one case."""
        turns = "\n".join(f"- {t}" for t in case.turns) or "(the conversation was opened by a simulated user)"
        calls = "\n".join(f"- {c.name}({c.arguments_json})" for c in result.tool_calls) or "(none)"
        prompt = (f"Rubric:\n{self.rubric}\n\nUser input:\n{turns}\n\nTool calls:\n{calls}\n\n"
                  f"Final answer:\n{result.final_text or '(no answer)'}")
        return ModelRequest(messages=(AgentMessage.system(JUDGE_INSTRUCTIONS), AgentMessage.user(prompt)),
                            config=self.config)

    async def __call__(self, case: Case, result: CaseResult) -> Grade:
        request = self.request(case, result)
        try:
            if callable(getattr(self.model, "generate", None)):
                response = await self.model.generate(request)
            else:
                response = None
                async for event in self.model.stream(request):
                    if event.type == "model_complete":
                        response = event.response
                if response is None:
                    return Grade.failure(self.name, "the judge model's stream ended without an answer")
        except ArkError as exc:
            return Grade.failure(self.name, f"the judge model failed: {exc}")
        try:
            passed, reason = parse_verdict(response.message.text)
        except ValueError as exc:
            return Grade.failure(self.name, str(exc))
        return Grade(self.name, passed, 1.0 if passed else 0.0, reason or "(the judge gave no reason)")


def llm_judge(rubric: str, model: Any, *, name: str | None = None, config: ModelConfig | None = None) -> Grader:
    """A grader that asks ``model`` (any LLMClient) whether the answer meets ``rubric``.

    The verdict is parsed strictly: ``PASS: <reason>`` passes, ``FAIL: <reason>``
    fails, anything else is an errored grade (so the case is ``errored``, not passed).

    Example:
        >>> judge = ark.ScriptedModel(["PASS: it names Paris"])
        >>> ev.llm_judge("The answer names the capital of France.", judge)
        <grader llm_judge>
    """
    return _LLMJudge(rubric, model, name, config)
