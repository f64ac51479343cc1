"""Chat completions from any OpenAI-compatible server, through the official ``openai`` SDK.

The SDK's own retries are switched off; this client retries itself on HTTP 429 and 5xx,
connection errors and timeouts (exponential back-off with deterministic jitter, see
:func:`~mindhelper_env.models.limits.backoff_delay`, but at least the server's
``Retry-After`` seconds, capped by ``max_backoff``), and raises
:class:`~mindhelper_env.models.base.ModelError` once they are used up or for any other
error (4xx, a response that is not a chat completion).

Requests in flight: every client of one endpoint in a process shares an
:class:`~mindhelper_env.models.limits.AdaptiveLimit` (ceiling: the ``concurrency`` option),
so episodes played in parallel threads wait for a slot together; a rate-limit answer (429,
or 503 with ``Retry-After``) cuts the limit and pauses the endpoint for ``Retry-After``
seconds, successes raise it back. Rate-limit answers are retried up to
``rate_limit_retries`` times (default 16), apart from ``max_retries`` (the other errors):
a 429 storm slows a run down instead of turning answers into fallbacks. With
``concurrency`` set, a :class:`~mindhelper_env.models.limits.FileSemaphore` also holds the
ceiling across processes.
"""

from __future__ import annotations

import base64
import io
import logging
import os
import time
from typing import Any

import numpy as np

from mindhelper_env.models.base import (
    Completion,
    ModelError,
    canonical_request,
    estimate_prompt_tokens,
    estimate_tokens,
    normalize_messages,
    prompt_size,
    request_key,
)
from mindhelper_env.models.ledger import note_rate_limited
from mindhelper_env.models.limits import (
    FileSemaphore,
    RunCancelled,
    backoff_delay,
    cancellable_sleep,
    check_cancelled,
    shared_limit,
)

__all__ = ["OpenAIClient", "png_data_url"]

logger = logging.getLogger(__name__)

_INSTALL_HINT = "pip install 'mindhelper-env[api]'"


def png_data_url(frame: np.ndarray) -> str:
    """``data:image/png;base64,...`` of a uint8 H x W x 3 frame (needs Pillow)."""
    try:
        from PIL import Image
    except ImportError as err:  # pragma: no cover - frames come from the video extra's renderer
        raise ImportError("sending images needs Pillow: pip install "
                          "'mindhelper-env[video]'") from err
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(frame)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Canonical messages in the chat-completions wire format (images as data URLs)."""
    out = []
    for msg in messages:
        parts = msg["content"]
        if all(kind == "text" for kind, _ in parts):
            out.append({"role": msg["role"], "content": "".join(v for _, v in parts)})
            continue
        wire = []
        for kind, value in parts:
            if kind == "text":
                wire.append({"type": "text", "text": value})
            else:
                wire.append({"type": "image_url", "image_url": {"url": png_data_url(value)}})
        out.append({"role": msg["role"], "content": wire})
    return out


def _retry_after(err: Exception, cap: float) -> float:
    """Seconds a 429/503 response asks us to wait (``Retry-After``), capped; else 0."""
    response = getattr(err, "response", None)
    headers = getattr(response, "headers", None)
    try:
        value = float(headers.get("retry-after", 0)) if headers is not None else 0.0
    except (TypeError, ValueError):  # an HTTP date: fall back to the back-off
        return 0.0
    return min(max(value, 0.0), cap)


#: Values of the ``structured`` option (see :mod:`mindhelper_env.models.answers`).
STRUCTURED_MODES = ("json_schema", "gbnf", "guided_json")

_OVERFLOW_WORDS = ("context", "too long", "maximum", "exceed", "n_ctx")


def _error_kind(openai: Any, err: Exception) -> str:
    if isinstance(err, openai.APITimeoutError):
        return "timeout"
    if isinstance(err, openai.APIConnectionError):
        return "connection"
    if isinstance(err, openai.APIStatusError):
        msg = str(err).lower()
        if err.status_code == 400 and any(w in msg for w in _OVERFLOW_WORDS):
            return "context_overflow"
        return f"http_{err.status_code}"
    return "error"


class OpenAIClient:
    """``openai:MODEL`` — see :func:`mindhelper_env.models.make_client` for the options."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 60.0, max_retries: int = 4, backoff: float = 0.5,
                 max_backoff: float = 30.0, concurrency: int | None = None,
                 lock_dir: str | os.PathLike[str] | None = None,
                 structured: str | None = None, context_length: int | None = None,
                 chars_per_token: float = 4.0, rate_limit_retries: int = 16,
                 image_tokens: str | int | None = None) -> None:
        try:
            import openai
        except ImportError as err:
            raise ImportError(f"the 'openai:' model client needs the openai SDK: "
                              f"{_INSTALL_HINT}") from err
        if not model:
            raise ValueError("openai: needs a model name, e.g. 'openai:gpt-4o-mini'")
        if float(timeout) <= 0 or int(max_retries) < 0 or float(backoff) < 0 \
                or int(rate_limit_retries) < 0:
            raise ValueError("timeout must be > 0, max_retries, rate_limit_retries and "
                             "backoff >= 0")
        if concurrency is not None and (isinstance(concurrency, bool)
                                        or int(concurrency) < 1):
            raise ValueError(f"concurrency must be a positive int, got {concurrency!r}")
        if structured in ("", "none", "off"):
            structured = None
        if structured is not None and structured not in STRUCTURED_MODES:
            raise ValueError(f"structured must be one of {STRUCTURED_MODES}, got {structured!r}")
        if context_length is not None and int(context_length) < 256:
            raise ValueError(f"context_length must be at least 256, got {context_length!r}")
        if float(chars_per_token) <= 0:
            raise ValueError("chars_per_token must be > 0")
        self._openai = openai
        self.model = model
        self.model_id = f"openai:{model}"
        self.structured = structured
        self.context_length = int(context_length) if context_length is not None else None
        self.chars_per_token = float(chars_per_token)
        from mindhelper_env.models.images import check_image_rule

        #: the image-token rule (:mod:`mindhelper_env.models.images`)
        self.image_tokens = check_image_rule(image_tokens)
        # calibration of the estimate from answers that carried usage (chars, tokens)
        self._calib = [0, 0]
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if self.base_url is None:
                raise ValueError(f"openai:{model}: set OPENAI_API_KEY (or pass api_key=)")
            key = "sk-local"  # local OpenAI-compatible servers accept any key
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.rate_limit_retries = int(rate_limit_retries)
        self._client = openai.OpenAI(api_key=key, base_url=self.base_url, timeout=self.timeout,
                                     max_retries=0)
        endpoint = str(self._client.base_url)
        self.semaphore = (FileSemaphore(int(concurrency), endpoint, lock_dir)
                          if concurrency else None)
        self.limit = shared_limit(endpoint, int(concurrency) if concurrency else None)

    #: Episodes may be played in parallel threads, each with its own client.
    thread_safe = True

    @property
    def calibrated_chars_per_token(self) -> float:
        """Characters per prompt token: measured from answers with ``usage`` once there are
        some, else the ``chars_per_token`` option."""
        chars, tokens = self._calib
        return chars / tokens if tokens >= 64 else self.chars_per_token

    def _retryable(self, err: Exception) -> bool:
        o = self._openai
        if isinstance(err, (o.APITimeoutError, o.APIConnectionError, o.RateLimitError)):
            return True
        return isinstance(err, o.APIStatusError) and err.status_code >= 500

    def _rate_limited(self, err: Exception) -> bool:
        """A 429, or a 503 that says when to come back: the endpoint is full, not broken."""
        o = self._openai
        if isinstance(err, o.RateLimitError):
            return True
        return (isinstance(err, o.APIStatusError) and err.status_code == 503
                and _retry_after(err, self.max_backoff) > 0)

    def _create(self, wire: list[dict[str, Any]], max_tokens: int, temperature: float,
                extra: dict[str, Any]) -> Any:
        started = self.limit.acquire()
        ok = limited = False
        wait = 0.0
        try:
            if self.semaphore is None:
                resp = self._client.chat.completions.create(
                    model=self.model, messages=wire, max_tokens=max_tokens,
                    temperature=temperature, **extra)
            else:
                with self.semaphore.hold():
                    resp = self._client.chat.completions.create(
                        model=self.model, messages=wire, max_tokens=max_tokens,
                        temperature=temperature, **extra)
            ok = True
            return resp
        except self._openai.OpenAIError as err:
            limited = self._rate_limited(err)
            wait = _retry_after(err, self.max_backoff) if limited else 0.0
            raise
        finally:
            self.limit.release(started, ok=ok, rate_limited=limited, retry_after=wait)

    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int = 256,
                 temperature: float = 0.0, constraint: Any = None) -> Completion:
        msgs = normalize_messages(messages)
        wire = _wire_messages(msgs)
        extra: dict[str, Any] = {}
        if constraint is not None and self.structured and constraint.usable(self.structured):
            extra = constraint.request_fields(self.structured)
        seed = request_key(canonical_request(
            self.model_id, msgs, {"max_tokens": max_tokens, "temperature": temperature}))
        check_cancelled()
        t0 = time.perf_counter()
        attempt = limited = 0
        while True:
            try:
                resp = self._create(wire, max_tokens, temperature, extra)
                break
            except self._openai.OpenAIError as err:
                rate = self._rate_limited(err)
                used, budget = (limited, self.rate_limit_retries) if rate \
                    else (attempt, self.max_retries)
                if not self._retryable(err) or used >= budget:
                    raise ModelError(f"{self.model_id}: {type(err).__name__}: {err}",
                                     _error_kind(self._openai, err)) from err
                delay = max(backoff_delay(min(used, 6), base=self.backoff,
                                          cap=self.max_backoff, seed=seed),
                            _retry_after(err, self.max_backoff))
                logger.info("%s: %s, retry %d/%d in %.2f s", self.model_id,
                            type(err).__name__, used + 1, budget, delay)
                cancellable_sleep(delay)
                if rate:
                    limited += 1
                    note_rate_limited()
                else:
                    attempt += 1
            except RunCancelled:
                raise
            except Exception as err:  # e.g. a body that is not JSON
                raise ModelError(f"{self.model_id}: bad response: {type(err).__name__}: "
                                 f"{err}", "bad_response") from err
        seconds = time.perf_counter() - t0
        try:
            text = resp.choices[0].message.content or ""
        except (AttributeError, IndexError, TypeError) as err:
            raise ModelError(f"{self.model_id}: response has no message: {err!r}",
                             "bad_response") from None
        if not isinstance(text, str):
            raise ModelError(f"{self.model_id}: response message is not text", "bad_response")
        usage = getattr(resp, "usage", None)
        pt = getattr(usage, "prompt_tokens", None)
        ct = getattr(usage, "completion_tokens", None)
        chars, images = prompt_size(msgs)
        if isinstance(pt, int) and isinstance(ct, int):
            if not images and pt > 0:
                self._calib[0] += chars
                self._calib[1] += pt
            return Completion(text, pt, ct, seconds, tokens_estimated=False)
        cpt = self.calibrated_chars_per_token
        return Completion(text, estimate_prompt_tokens(msgs, chars_per_token=cpt,
                                                       image_rule=self.image_tokens),
                          estimate_tokens(len(text), 0, cpt), seconds, tokens_estimated=True)
