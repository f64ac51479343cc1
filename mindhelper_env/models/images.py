"""What the images of a request cost in prompt tokens: one documented, configurable rule.

Servers count image tokens their own way and report only the total ``prompt_tokens``, so
the package counts them by a rule chosen per model (client option ``image_tokens=RULE``,
default :data:`DEFAULT_IMAGE_RULE`). The rule gives :func:`image_tokens` of one frame from
its size alone; :func:`message_image_tokens` adds them up over a request's image parts.
The same count is used everywhere an image's cost matters:

* ``usage.images`` / ``usage.image_tokens`` of a model-backed agent
  (:func:`mindhelper_env.models.accounting.accounted_call`): how many frames were sent and
  what they cost by the rule (a part of ``prompt_tokens``, which stays the server's count
  when it sends one);
* the token estimate when a server sends no ``usage``, the dry pass of a budgeted run
  (:class:`~mindhelper_env.models.dry.DryClient`) and prompt fitting
  (:func:`~mindhelper_env.models.base.estimate_prompt_tokens`).

Rules (strings):

``openai`` (default; also ``openai-high``)
    OpenAI's high-detail tiling for GPT-4o-class models: the image is scaled down to fit
    2048 x 2048, then down so its shorter side is at most 768; it costs 85 tokens plus 170
    per 512 x 512 tile that covers it (a 256 px frame: 1 tile, 255 tokens; 512 px: 255;
    768 px: 4 tiles, 765).
``openai-low``
    85 tokens an image, whatever its size (OpenAI's ``detail: low``).
``patches:P``
    One token per ``P x P`` patch, ``ceil(H / P) * ceil(W / P)`` (Qwen2-VL / Qwen2.5-VL:
    ``patches:28``, 14 px patches merged 2 x 2; a 256 px frame: 100 tokens).
``fixed:N`` (or an int ``N``)
    ``N`` tokens an image.

These are estimates of what a provider bills; give the rule of the model you pay for.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

__all__ = ["DEFAULT_IMAGE_RULE", "IMAGE_RULES", "check_image_rule", "image_tokens",
           "message_image_tokens", "image_rule_of"]

#: The rule used when a client sets none.
DEFAULT_IMAGE_RULE = "openai"
#: The rule names (``patches:P`` and ``fixed:N`` take a number).
IMAGE_RULES = ("openai", "openai-high", "openai-low", "patches:P", "fixed:N")


def check_image_rule(rule: Any) -> str:
    """The rule as a canonical string; ValueError naming the choices for anything else."""
    if rule is None:
        return DEFAULT_IMAGE_RULE
    if isinstance(rule, int) and not isinstance(rule, bool):
        rule = f"fixed:{rule}"
    if isinstance(rule, str):
        text = rule.strip().lower()
        if text in ("openai", "openai-high", "openai-low"):
            return "openai" if text == "openai-high" else text
        name, _, number = text.partition(":")
        if name in ("patches", "fixed") and number.strip().isdigit():
            n = int(number)
            if (name == "patches" and n >= 1) or name == "fixed":
                return f"{name}:{n}"
    raise ValueError(f"image_tokens must be one of {', '.join(IMAGE_RULES)} (P >= 1, N >= 0), "
                     f"got {rule!r}")


def image_tokens(height: int, width: int, rule: str | None = None) -> int:
    """Prompt tokens of one ``height x width`` image by ``rule`` (see the module docstring)."""
    rule = check_image_rule(rule)
    h, w = max(1, int(height)), max(1, int(width))
    if rule == "openai-low":
        return 85
    if rule == "openai":
        scale = min(1.0, 2048 / max(h, w))
        h2, w2 = h * scale, w * scale
        scale = min(1.0, 768 / min(h2, w2))
        h2, w2 = h2 * scale, w2 * scale
        return 85 + 170 * math.ceil(h2 / 512) * math.ceil(w2 / 512)
    name, _, number = rule.partition(":")
    n = int(number)
    if name == "patches":
        return math.ceil(h / n) * math.ceil(w / n)
    return n


def message_image_tokens(messages: Iterable[dict[str, Any]],
                         rule: str | None = None) -> tuple[int, int]:
    """``(images, tokens)`` of canonical messages
    (:func:`~mindhelper_env.models.base.normalize_messages`): every image part counted by
    ``rule``."""
    images = tokens = 0
    for msg in messages:
        for kind, value in msg["content"]:
            if kind == "image":
                images += 1
                tokens += image_tokens(value.shape[0], value.shape[1], rule)
    return images, tokens


def image_rule_of(client: Any) -> str:
    """The image-token rule a client counts with (its ``image_tokens`` attribute, else the
    default)."""
    return check_image_rule(getattr(client, "image_tokens", None))
