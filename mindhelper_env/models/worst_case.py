"""What one model request, and one episode, can cost at worst: learned from what the server
billed, with the package's own rules as the prior and the floor.

A request's *shape* (:class:`Shape`, from :func:`request_shape`) is what the package knows
of it before it is sent: its text (UTF-8 bytes, and the package's estimate: 4 characters a
token plus 4 a message), its images (how many; their tokens by the client's image rule,
:mod:`~mindhelper_env.models.images`, and by :func:`image_tokens_bound`, the most any common vision API
bills) and its ``max_tokens``.

What it can cost at worst (:func:`worst_tokens`) depends on what the run has learned
(:func:`fresh_rates`: a small JSON-able dict kept on the run's ledger, so every worker
shares it):

* before the run's first answer, the text at the package's hard bound: its UTF-8 bytes plus
  8 tokens a message (every token of a byte-level BPE or byte-fallback tokenizer covers at
  least a byte);
* from then on, the text at the package's estimate times the largest ratio of billed to
  estimated prompt tokens seen on a request without images (at least 1), plus
  :data:`MARGIN`;
* before the first answer to a request with images, each image at
  :func:`image_tokens_bound` (the most any common vision API bills for its size); from
  then on at the largest number of tokens a server billed for one image (the billed prompt
  tokens of a request with images, less its text at that estimate, over its images), never
  below the client's image rule (:mod:`~mindhelper_env.models.images`: the floor), plus
  :data:`MARGIN`;
* the completion at ``max_tokens`` times the largest ratio of billed completion tokens to
  ``max_tokens`` seen (at least 1: a server that bills past ``max_tokens``, reasoning tokens
  say, is learned too).

So the run's first episodes are held at the hard bounds, and from the first answer on a
server that bills images at three times the package's rule is reserved at three times the
rule, and a server that bills text as the package estimates is not reserved at four times
that.

An episode's worst case is the most model calls an episode of the agent made (the dry pass's
episodes, then every episode played) times the worst case of a call as large, field by field,
as the largest the agent sent (:func:`episode_worst`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import astuple, dataclass
from typing import Any

__all__ = ["Shape", "request_shape", "image_tokens_bound", "MESSAGE_OVERHEAD", "worst_tokens",
           "learn", "fresh_rates", "max_shape", "episode_worst", "MARGIN", "CHARS_PER_TOKEN",
           "TOKENS_PER_MESSAGE"]

#: Tokens counted per message for the chat template in the hard bound (role markers,
#: separators).
MESSAGE_OVERHEAD = 8
#: The learned prompt counts this much more (tokenizers do not bill two prompts alike).
MARGIN = 0.10
#: The package's text estimate: characters a token ...
CHARS_PER_TOKEN = 4
#: ... plus tokens a message (a chat template's role markers).
TOKENS_PER_MESSAGE = 4


def image_tokens_bound(height: int, width: int, rule: str | None = None) -> int:
    """Most tokens one ``height x width`` image is billed for by the common vision APIs:
    OpenAI's high detail (:func:`~mindhelper_env.models.images.image_tokens`' ``openai``
    rule), Anthropic's ``w * h / 750``, Gemini's 258 per 768-pixel tile and Qwen-VL's
    28-pixel patches, and the client's own image rule ``rule`` where one is given (e.g.
    ``fixed:N`` for a model that bills images at a larger count, such as gpt-4o-mini),
    whichever is largest."""
    from mindhelper_env.models.images import image_tokens

    h, w = max(1, int(height)), max(1, int(width))
    anthropic = math.ceil(h * w / 750)
    gemini = 258 * math.ceil(h / 768) * math.ceil(w / 768)
    qwen = math.ceil(h / 28) * math.ceil(w / 28) + 2
    own = image_tokens(h, w, rule) if rule is not None else 0
    return max(image_tokens(h, w, "openai"), anthropic, gemini, qwen, own)


@dataclass(frozen=True)
class Shape:
    """What is known of a request before it is sent (see the module docstring)."""

    text_bound: int
    text_estimate: int
    images: int
    image_bound: int
    image_rule: int
    max_tokens: int

    def to_list(self) -> list[int]:
        return [int(x) for x in astuple(self)]

    @classmethod
    def from_list(cls, values: Any) -> Shape:
        return cls(*(int(x) for x in values))


def request_shape(messages: list[dict[str, Any]], max_tokens: int,
                  image_rule: str | None = None) -> Shape:
    """The :class:`Shape` of a request (messages in any form
    :func:`~mindhelper_env.models.base.normalize_messages` takes)."""
    from mindhelper_env.models.base import normalize_messages
    from mindhelper_env.models.images import image_tokens

    text_bytes = chars = images = bound = rule = 0
    msgs = normalize_messages(messages)
    for msg in msgs:
        text_bytes += MESSAGE_OVERHEAD + len(msg["role"].encode("utf-8"))
        chars += len(msg["role"])
        for kind, value in msg["content"]:
            if kind == "text":
                text_bytes += len(value.encode("utf-8"))
                chars += len(value)
            else:
                h, w = int(value.shape[0]), int(value.shape[1])
                images += 1
                bound += image_tokens_bound(h, w, image_rule)
                rule += image_tokens(h, w, image_rule)
    estimate = math.ceil(chars / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE * len(msgs)
    return Shape(text_bytes, estimate, images, bound, rule, int(max_tokens))


def fresh_rates() -> dict[str, Any]:
    """Rates before any answer: ``text`` (billed / estimated prompt tokens of requests
    without images), ``image`` (billed tokens an image), ``completion`` (billed completion
    / ``max_tokens``); None where nothing was seen; ``answers`` counted."""
    return {"text": None, "image": None, "completion": None, "answers": 0}


def learn(rates: dict[str, Any], shape: Shape, prompt_tokens: int,
          completion_tokens: int) -> None:
    """Update ``rates`` (in place) with one answer's billed usage."""
    prompt, completion = max(0, int(prompt_tokens)), max(0, int(completion_tokens))
    if shape.images == 0:
        if shape.text_estimate > 0:
            ratio = prompt / shape.text_estimate
            rates["text"] = max(ratio, rates.get("text") or 0.0)
    else:
        text = shape.text_estimate * max(1.0, rates.get("text") or 1.0)
        per_image = max(0.0, prompt - text) / shape.images
        rates["image"] = max(per_image, rates.get("image") or 0.0)
    if shape.max_tokens > 0:
        rates["completion"] = max(completion / shape.max_tokens,
                                  rates.get("completion") or 0.0)
    rates["answers"] = int(rates.get("answers", 0)) + 1


def worst_tokens(shape: Shape, rates: Mapping[str, Any] | None) -> tuple[int, int]:
    """``(prompt, completion)`` tokens the request can be billed at worst (see the module
    docstring)."""
    rates = rates or {}
    if not rates.get("answers"):
        text = float(shape.text_bound)
    else:
        text = shape.text_estimate * max(1.0, rates.get("text") or 1.0) * (1.0 + MARGIN)
    if not shape.images:
        pictures = 0.0
    elif rates.get("image") is None:
        pictures = float(shape.image_bound)
    else:
        pictures = max(float(shape.image_rule),
                       shape.images * float(rates["image"])) * (1.0 + MARGIN)
    completion = math.ceil(shape.max_tokens * max(1.0, rates.get("completion") or 1.0))
    return int(math.ceil(text + pictures)), int(completion)


def max_shape(a: Shape | None, b: Shape) -> Shape:
    """The field-by-field largest of two shapes (``a`` may be None)."""
    if a is None:
        return b
    return Shape(*(max(x, y) for x, y in zip(astuple(a), astuple(b), strict=True)))


def episode_worst(calls: int, shape: Shape | None, rates: Mapping[str, Any] | None,
                  price: tuple[float, float]) -> tuple[int, int] | None:
    """``(pico US dollars, tokens)`` of ``calls`` requests of ``shape`` at worst; None when
    the agent's episodes are not known yet (no call seen)."""
    if shape is None or calls <= 0:
        return None
    prompt, completion = worst_tokens(shape, rates)
    pico = math.ceil((price[0] * prompt + price[1] * completion) * 1e6)
    return calls * pico, calls * (prompt + completion)
