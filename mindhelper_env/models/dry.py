"""``dry:SPEC``: a model that answers nothing, for estimating what a run will cost.

:class:`DryClient` sends no request: every call returns an empty answer whose prompt tokens
are :func:`~mindhelper_env.models.base.estimate_prompt_tokens` of the prompt (4 characters a
token, images by the ``image_tokens`` rule of :mod:`~mindhelper_env.models.images`) and whose completion tokens are the call's ``max_tokens`` (an upper bound).
An empty answer is no usable decision, so an agent keeps asking in every window: the calls
and tokens of a dry episode bound those of a real one from above. It takes the wrapped
spec's options and ignores all but ``context_length`` (prompts are fitted as in the real
run), ``chars_per_token`` and ``image_tokens``.
"""

from __future__ import annotations

from typing import Any

from mindhelper_env.models.base import Completion, estimate_prompt_tokens
from mindhelper_env.models.images import check_image_rule

__all__ = ["DryClient"]


class DryClient:
    """See the module docstring."""

    thread_safe = True
    structured = None

    def __init__(self, spec: str, *, context_length: int | None = None,
                 chars_per_token: float = 4.0, image_tokens: str | int | None = None,
                 **_ignored: Any) -> None:
        self.spec = spec
        self.model_id = f"dry:{spec}"
        self.context_length = int(context_length) if context_length is not None else None
        self.chars_per_token = float(chars_per_token)
        self.image_tokens = check_image_rule(image_tokens)
        self.calls = 0

    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int = 256,
                 temperature: float = 0.0) -> Completion:
        self.calls += 1
        return Completion("", estimate_prompt_tokens(messages,
                                                     chars_per_token=self.chars_per_token,
                                                     image_rule=self.image_tokens),
                          int(max_tokens), 0.0, tokens_estimated=True)
