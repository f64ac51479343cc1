"""Model clients for model-backed agents, chosen by one spec string.

>>> from mindhelper_env.models import make_client
>>> client = make_client("openai:gpt-4o-mini@http://127.0.0.1:8000/v1")  # doctest: +SKIP
>>> client.complete([{"role": "user", "content": "hi"}], max_tokens=8).text  # doctest: +SKIP

Spec strings
------------
``openai:MODEL`` / ``openai:MODEL@http://host:port/v1``
    An OpenAI-compatible chat-completions server through the ``openai`` SDK (``api`` extra).
    Base URL: the ``@URL`` suffix, else ``base_url=``, else ``$OPENAI_BASE_URL``, else
    OpenAI. Key: ``api_key=`` or ``$OPENAI_API_KEY`` (any dummy value for local servers; with
    a base URL and no key a dummy is used). Options: ``timeout`` (60 s per attempt),
    ``max_retries`` (4; on 429, 5xx, connection errors, timeouts), ``backoff`` (0.5 s:
    retry *k* waits ``min(max_backoff, backoff * 2**k)`` times a deterministic jitter in
    [1, 1.5)), ``max_backoff`` (30 s), ``concurrency`` (max requests in flight to this
    endpoint across all processes sharing ``lock_dir``; default ``$MINDHELPER_MODEL_CONCURRENCY``
    or unlimited), ``lock_dir`` (default ``$MINDHELPER_LOCK_DIR`` or a folder in the temp dir),
    ``structured`` (structured output, never assumed: ``json_schema`` sends
    ``response_format`` with the answer's JSON schema, ``gbnf`` llama.cpp's ``grammar``,
    ``guided_json`` vLLM's ``guided_json`` / ``guided_choice``; see
    :mod:`.answers`), ``context_length`` (the model's context window: agents fit their
    prompts to it), ``chars_per_token`` (4; the token estimate when the server sends no
    ``usage``, replaced by the ratio measured on answers that had one).
``hf:NAME_OR_PATH`` / ``hf:FILE.gguf``
    Local ``transformers`` generation with the tokenizer's chat template (``local``
    extra: transformers and torch). A path ending in ``.gguf`` is loaded from that file (``gguf`` extra:
    ``gguf`` and ``accelerate``; no compiler needed). Options: ``device`` (cuda if
    available, else cpu), ``dtype`` (e.g. ``"bfloat16"``), ``download`` (False: local files
    / the local HF cache only), ``seed``, ``context_length`` (default: the model's
    ``max_position_embeddings``), ``shared`` (True: clients of the same weights in one
    process share one loaded model; False loads a private copy).
``replay:FILE``
    Answers only from a cassette; an unknown request raises
    :class:`ReplayMissError`. Option ``model`` if the cassette holds several models;
    ``context_length`` as recorded; live-client options (timeout, retries, ...) are ignored.
``record:FILE=SPEC``
    Records ``SPEC``'s answers into the cassette ``FILE`` (same as ``SPEC`` with
    ``record=FILE``).
``inspect:PROVIDER/MODEL``
    Any model of Inspect AI's model interface (``inspect`` extra), e.g.
    ``inspect:anthropic/claude-sonnet-4-0``, ``inspect:google/gemini-2.5-flash``,
    ``inspect:openai-api/NAME/MODEL`` (``$NAME_BASE_URL``, ``$NAME_API_KEY``); keys and
    base URLs as Inspect reads them; usage from Inspect's answer (:mod:`.inspect_client`).
    Options: ``concurrency`` (Inspect's ``max_connections``), ``timeout``, ``max_retries``,
    ``context_length``, ``base_url``, ``api_key``.
``dry:SPEC``
    Answers nothing and sends nothing, counting the tokens the calls would cost (the
    estimate before a run with a budget; :mod:`.dry`).

Any spec (except ``replay:``) also takes ``cache_dir=`` (default ``$MINDHELPER_MODEL_CACHE``):
an on-disk response cache. Keys, cassette format and cache layout: :mod:`.store`.

Token accounting: ``usage`` from the server when present; otherwise
:func:`estimate_tokens` (``ceil(chars / chars_per_token)`` + 85 per image, calibrated as
above) with ``Completion.tokens_estimated=True``. ``hf:`` counts are exact.

Failed calls raise :class:`ModelError` with a ``kind`` (``context_overflow``, ``http_404``,
``connection``, ``timeout``, ...); agents count them by kind (:mod:`.accounting`, :mod:`.report`).

Importing this package imports neither ``openai`` nor ``transformers`` nor ``torch`` nor
``inspect_ai``.
"""

from __future__ import annotations

import os
from typing import Any

from mindhelper_env.models.base import (
    IMAGE_TOKEN_ESTIMATE,
    Completion,
    ModelClient,
    ModelError,
    ReplayMissError,
    canonical_request,
    estimate_tokens,
    normalize_messages,
    request_key,
)

__all__ = [
    "Completion",
    "ModelClient",
    "ModelError",
    "ReplayMissError",
    "IMAGE_TOKEN_ESTIMATE",
    "make_client",
    "parse_spec",
    "canonical_request",
    "request_key",
    "estimate_tokens",
    "normalize_messages",
]

_KINDS = ("openai", "hf", "replay", "record", "inspect", "dry")


def parse_spec(spec: str) -> tuple[str, str, dict[str, str]]:
    """Split a spec into ``(kind, target, implied_options)``; ValueError naming the spec.

    ``"openai:m@http://h:1/v1"`` -> ``("openai", "m", {"base_url": "http://h:1/v1"})``;
    ``"record:c.jsonl=openai:m"`` -> ``("record", "openai:m", {"record": "c.jsonl"})``.
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"model spec {spec!r} must look like 'openai:MODEL[@URL]', "
                         f"'hf:NAME_OR_PATH', 'inspect:PROVIDER/MODEL', 'replay:FILE' or "
                         f"'record:FILE=SPEC'")
    kind, _, target = spec.partition(":")
    kind = kind.strip().lower()
    if kind not in _KINDS:
        raise ValueError(f"model spec {spec!r}: unknown kind {kind!r}; expected one of {_KINDS}")
    if not target.strip():
        raise ValueError(f"model spec {spec!r}: nothing after '{kind}:'")
    if kind == "openai":
        for scheme in ("@http://", "@https://"):
            at = target.find(scheme)
            if at >= 0:
                model, url = target[:at], target[at + 1:]
                if not model:
                    raise ValueError(f"model spec {spec!r}: no model name before '@'")
                return kind, model, {"base_url": url}
        return kind, target, {}
    if kind == "dry":
        inner = target.strip()
        if inner.split(":", 1)[0].strip().lower() in ("record", "replay", "dry"):
            raise ValueError(f"model spec {spec!r}: a dry run of a {inner.split(':')[0]} spec "
                             "makes no sense")
        parse_spec(inner)
        return kind, inner, {}
    if kind == "inspect":
        model = target.strip()
        if "/" not in model or model.startswith("/") or model.endswith("/"):
            raise ValueError(f"model spec {spec!r}: expected 'inspect:PROVIDER/MODEL', e.g. "
                             "'inspect:anthropic/claude-sonnet-4-0'")
        return kind, model, {}
    if kind == "record":
        path, eq, inner = target.partition("=")
        if not eq or not path or not inner:
            raise ValueError(f"model spec {spec!r}: expected 'record:FILE=SPEC', e.g. "
                             f"'record:run.jsonl=openai:gpt-4o-mini'")
        if inner.split(":", 1)[0].strip().lower() in ("record", "replay"):
            raise ValueError(f"model spec {spec!r}: cannot record a {inner.split(':')[0]} spec")
        return kind, inner, {"record": path}
    return kind, target, {}


def make_client(spec: str, **opts: Any) -> ModelClient:
    """Build the model client a spec string names (see the module docstring)."""
    kind, target, implied = parse_spec(spec)
    if kind == "record":
        return make_client(target, **{**opts, **implied})
    options = {**opts, **implied}
    record = options.pop("record", None)
    cache_dir = options.pop("cache_dir", None) or os.environ.get("MINDHELPER_MODEL_CACHE")
    client: ModelClient
    try:
        if kind == "openai":
            from mindhelper_env.models.openai_client import OpenAIClient

            if "concurrency" not in options and os.environ.get("MINDHELPER_MODEL_CONCURRENCY"):
                options["concurrency"] = int(os.environ["MINDHELPER_MODEL_CONCURRENCY"])
            client = OpenAIClient(target, **options)
        elif kind == "hf":
            from mindhelper_env.models.hf_client import HFClient

            client = HFClient(target, **options)
        elif kind == "inspect":
            from mindhelper_env.models.inspect_client import InspectClient

            client = InspectClient(target, **options)
        elif kind == "dry":
            from mindhelper_env.models.dry import DryClient

            return DryClient(target, **options)
        else:
            from mindhelper_env.models.store import ReplayClient

            if record is not None:
                raise ValueError("cannot record a replay")
            return ReplayClient(target, **options)
    except TypeError as err:
        raise ValueError(f"model spec {spec!r}: bad option ({err})") from None
    except ValueError as err:
        if spec in str(err):
            raise
        raise ValueError(f"model spec {spec!r}: {err}") from None
    from mindhelper_env.models.store import CachedClient, RecordClient

    if cache_dir:
        client = CachedClient(client, cache_dir)
    if record:
        client = RecordClient(client, record)
    return client
