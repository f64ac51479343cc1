"""The agent protocol every helper implements, and its usage record."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["Agent", "Usage"]


@dataclass
class Usage:
    """What an agent spent in one episode (model calls, tokens, wall time).

    ``parse_failures`` counts model answers that could not be turned into an action
    (answered with ``"none"``); ``tokens_estimated`` is True when some token count was an
    estimate rather than the server's or tokenizer's number.
    """

    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    decisions: int = 0
    fallbacks: int = 0
    parse_failures: int = 0
    tokens_estimated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class Agent(Protocol):
    """A robot helper: ``reset`` at the start of an episode, ``act`` once per window.

    ``act`` returns ``"none"`` or a program of script lines. Agents use only what the
    Gymnasium env exposes (observation, ``info``, the action grammar); the oracle is the one
    documented exception.
    """

    name: str
    usage: Usage

    def reset(self, *, seed: int | None = None) -> None: ...

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str: ...
