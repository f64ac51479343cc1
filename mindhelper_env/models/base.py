"""The model-client protocol, the completion record, messages and request keys.

A *message* is ``{"role": "system" | "user" | "assistant", "content": ...}`` where
``content`` is a string or a list of parts. A part is a string, a ``numpy`` ``uint8``
``H x W x 3`` frame, ``{"type": "text", "text": str}`` or ``{"type": "image", "image":
frame}``. :func:`normalize_messages` turns all of these into one canonical form:
``{"role": str, "content": [("text", str) | ("image", ndarray), ...]}``.

:func:`request_key` is the sha256 of the canonical JSON of ``(model, messages, params)``
with every frame replaced by the sha256 of its raw bytes plus its shape, so the key does
not depend on how (or whether) images are PNG-encoded. Cassettes and the response cache
use it.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "first_json_object",
    "Completion",
    "ModelClient",
    "ModelError",
    "ReplayMissError",
    "normalize_messages",
    "canonical_request",
    "request_key",
    "estimate_tokens",
    "estimate_prompt_tokens",
    "IMAGE_TOKEN_ESTIMATE",
]

#: Tokens per image of :func:`estimate_tokens` when no image-token count is given (the
#: request estimates use the client's rule instead: :func:`estimate_prompt_tokens`).
IMAGE_TOKEN_ESTIMATE = 85


class ModelError(RuntimeError):
    """A model call failed for good (after retries): timeout, HTTP error, bad response.

    ``kind`` names the failure for the run's error counts: ``timeout``, ``connection``,
    ``http_<status>`` (``http_400`` ...), ``context_overflow`` (a 400 whose message says the
    prompt is too long for the model's context), ``bad_response``, ``replay_miss`` or
    ``error``.
    """

    def __init__(self, message: str = "", kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind


class ReplayMissError(ModelError):
    """A replayed cassette has no answer for this request."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message, "replay_miss")


def error_kind(err: BaseException) -> str:
    """The ``kind`` of a :class:`ModelError`, else ``"error"``."""
    return str(getattr(err, "kind", "error") or "error")


@dataclass(frozen=True)
class Completion:
    """One model answer and what it cost.

    ``prompt_tokens``/``completion_tokens`` come from the server's ``usage`` (or the
    tokenizer for local models); ``tokens_estimated`` is True when they are the estimate of
    :func:`estimate_tokens`. ``seconds`` is the wall time of the call that produced the
    answer (for a cached or replayed answer: the recorded time of the original call, so
    efficiency figures re-run identically); ``cached`` marks answers from a cache or
    cassette.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    tokens_estimated: bool = False
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, cached: bool | None = None) -> Completion:
        try:
            out = cls(
                text=str(data["text"]),
                prompt_tokens=int(data.get("prompt_tokens", 0)),
                completion_tokens=int(data.get("completion_tokens", 0)),
                seconds=float(data.get("seconds", 0.0)),
                tokens_estimated=bool(data.get("tokens_estimated", False)),
                cached=bool(data.get("cached", False)),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ModelError(f"malformed stored completion: {err!r}") from None
        if cached is not None:
            out = cls(**{**out.to_dict(), "cached": cached})
        return out


@runtime_checkable
class ModelClient(Protocol):
    """Anything that answers chat messages.

    ``model_id`` names the model in request keys (e.g. ``"openai:gpt-4o"``; never the
    server address, so a cassette recorded against one server replays against none).
    """

    model_id: str

    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int = 256,
                 temperature: float = 0.0) -> Completion: ...


def call_client(client: Any, messages: list[dict[str, Any]], *, max_tokens: int,
                temperature: float, constraint: Any = None) -> Completion:
    """``client.complete(...)``, passing ``constraint`` only to a client that enforces
    structured output (its ``structured`` attribute is set), so plain clients keep the
    two-keyword protocol."""
    if constraint is not None and getattr(client, "structured", None):
        return client.complete(messages, max_tokens=max_tokens, temperature=temperature,
                               constraint=constraint)
    return client.complete(messages, max_tokens=max_tokens, temperature=temperature)


def request_params(max_tokens: int, temperature: float, constraint: Any = None,
                   mode: str | None = None) -> dict[str, Any]:
    """The ``params`` of a request key: ``max_tokens``, ``temperature`` and, when a
    constraint is enforced, what it adds (so keys without one are unchanged)."""
    params: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature}
    if constraint is not None and mode:
        params.update(constraint.key(mode))
    return params


def _check_frame(frame: Any) -> np.ndarray:
    arr = np.asarray(frame)
    if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] != 3:
        raise ValueError(f"an image must be a uint8 H x W x 3 array, got dtype {arr.dtype} "
                         f"and shape {arr.shape}")
    return arr


def normalize_messages(messages: Any) -> list[dict[str, Any]]:
    """Canonical messages (see the module docstring); ValueError for anything else."""
    if not isinstance(messages, (list, tuple)) or not messages:
        raise ValueError("messages must be a non-empty list of {'role', 'content'} dicts")
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str):
            raise ValueError(f"message {i} must be a dict with a string 'role'")
        content = msg.get("content")
        raw = [content] if isinstance(content, (str, np.ndarray)) else content
        if not isinstance(raw, (list, tuple)):
            raise ValueError(f"message {i}: content must be a string or a list of parts")
        parts: list[tuple[str, Any]] = []
        for part in raw:
            if isinstance(part, str):
                parts.append(("text", part))
            elif isinstance(part, np.ndarray):
                parts.append(("image", _check_frame(part)))
            elif isinstance(part, tuple) and len(part) == 2 and part[0] in ("text", "image"):
                # already canonical
                parts.append((part[0], str(part[1]) if part[0] == "text"
                              else _check_frame(part[1])))
            elif isinstance(part, dict) and part.get("type") == "text":
                parts.append(("text", str(part.get("text", ""))))
            elif isinstance(part, dict) and part.get("type") == "image":
                parts.append(("image", _check_frame(part.get("image"))))
            else:
                raise ValueError(f"message {i}: unsupported content part {type(part).__name__}")
        out.append({"role": msg["role"], "content": parts})
    return out


def canonical_request(model_id: str, messages: list[dict[str, Any]],
                      params: dict[str, Any]) -> dict[str, Any]:
    """A JSON-able description of a request; frames become ``{"sha256", "shape"}``."""
    msgs = []
    for msg in normalize_messages(messages):
        parts: list[Any] = []
        for kind, value in msg["content"]:
            if kind == "text":
                parts.append({"text": value})
            else:
                arr = np.ascontiguousarray(value)
                parts.append({"image": {"sha256": hashlib.sha256(arr.tobytes()).hexdigest(),
                                        "shape": list(arr.shape)}})
        msgs.append({"role": msg["role"], "content": parts})
    return {"model": model_id, "messages": msgs, "params": dict(sorted(params.items()))}


def request_key(canonical: dict[str, Any]) -> str:
    """sha256 (hex) of the canonical request's compact, key-sorted JSON."""
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def estimate_tokens(text_chars: int, images: int = 0, chars_per_token: float = 4.0,
                    image_tokens: int | None = None) -> int:
    """The token estimate used when no exact count is known: ``ceil(chars /
    chars_per_token)`` (4 by default; clients calibrate it, see
    :class:`~mindhelper_env.models.openai_client.OpenAIClient`) plus ``image_tokens`` (the
    images' count by a rule, :mod:`.images`), or :data:`IMAGE_TOKEN_ESTIMATE` per image
    when it is not given."""
    cpt = float(chars_per_token) if chars_per_token and chars_per_token > 0 else 4.0
    pictures = IMAGE_TOKEN_ESTIMATE * max(0, images) if image_tokens is None \
        else max(0, int(image_tokens))
    return math.ceil(max(0, text_chars) / cpt) + pictures


def estimate_prompt_tokens(messages: list[dict[str, Any]], *, chars_per_token: float = 4.0,
                           image_rule: str | None = None) -> int:
    """The estimated prompt tokens of a request: ``ceil(chars / chars_per_token)`` of its
    text (roles included) plus its images by ``image_rule``
    (:func:`~mindhelper_env.models.images.message_image_tokens`). What a request is assumed
    to cost before it is sent (a budget's reservation, the dry pass) and when the server
    sends no ``usage``; ``messages`` may be raw or canonical."""
    from mindhelper_env.models.images import message_image_tokens

    msgs = normalize_messages(messages)
    chars, _ = prompt_size(msgs)
    images, pictures = message_image_tokens(msgs, image_rule)
    return estimate_tokens(chars, images, chars_per_token, pictures)


def prompt_size(messages: list[dict[str, Any]]) -> tuple[int, int]:
    """(text characters, images) of canonical messages, roles included."""
    chars = images = 0
    for msg in messages:
        chars += len(msg["role"])
        for kind, value in msg["content"]:
            if kind == "text":
                chars += len(value)
            else:
                images += 1
    return chars, images


def first_json_object(text: str | None) -> dict[str, Any] | None:
    """The answer object of a model's reply, or None: the first JSON object at the top level
    (prose and code fences around it are fine; never an object nested in another bracket).
    See :func:`mindhelper_env.models.answers.find_json_object`."""
    from mindhelper_env.models.answers import find_json_object

    return find_json_object(text)


#: Characters per token assumed when fitting prompts to a context length: on the safe side
#: for small-vocabulary tokenizers (SmolLM2's averages 2.7 on these prompts).
FIT_CHARS_PER_TOKEN = 2.5


def prompt_tokens_estimate(client: Any, messages: list[dict[str, Any]]) -> int:
    """The token count assumed for ``messages`` when fitting them to a context length:
    ``ceil(chars / FIT_CHARS_PER_TOKEN)`` + the images by the client's image-token rule
    (:mod:`.images`) + 8 per message. It depends on the prompt and the client's options
    only (never on its state), so a replayed run fits its prompts exactly as the recorded
    run did."""
    from mindhelper_env.models.images import image_rule_of

    msgs = normalize_messages(messages)
    return estimate_prompt_tokens(msgs, chars_per_token=FIT_CHARS_PER_TOKEN,
                                  image_rule=image_rule_of(client)) + 8 * len(msgs)
