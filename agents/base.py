"""The agent protocol every helper implements, and its usage record."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["Agent", "Usage"]


@dataclass
class Usage:
    """What an agent spent in one episode (model calls, tokens, wall time).

    ``parse_failures`` counts model answers that could not be turned into an action
    (answered with ``"none"``); ``tokens_estimated`` is True when some token count was an
    estimate rather than the server's or tokenizer's number.

    Model-backed agents also fill ``sources`` (decisions by who made them: ``model``,
    ``skill``, ``symbolic``, ``fallback`` (the symbolic result after an unusable answer,
    only with ``fallback="symbolic"``) or ``failed`` (an unusable answer or a failed call:
    the module's "nothing")), ``errors`` (failed calls by kind, e.g. ``context_overflow``,
    ``http_404``, ``connection``), ``error_messages`` (the first message of each kind),
    ``prompts`` (module -> prompt template version) and ``prompts_fitted`` (prompts cut to
    fit the model's context length).

    ``images`` counts the frames sent to the model and ``image_tokens`` what they cost by
    the client's image-token rule (:mod:`mindhelper_env.models.images`); the image tokens are
    part of ``prompt_tokens`` (which is the server's count when it sends one).
    """

    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    decisions: int = 0
    fallbacks: int = 0
    parse_failures: int = 0
    tokens_estimated: bool = False
    sources: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    error_messages: dict[str, str] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)
    prompts_fitted: int = 0
    images: int = 0
    image_tokens: int = 0

    def count_source(self, source: str, n: int = 1) -> None:
        self.sources[source] = self.sources.get(source, 0) + n

    def count_error(self, kind: str, message: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1
        self.error_messages.setdefault(kind, message[:300])

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
