"""``inspect:PROVIDER/MODEL``: any model of Inspect AI's model interface (``inspect`` extra).

The agents' requests go through :meth:`inspect_ai.model.Model.generate`, so every provider
Inspect supports works with ``direct-vlm`` and MindClaw: ``inspect:anthropic/...``,
``inspect:google/...``, ``inspect:vllm/...``, ``inspect:ollama/...``,
``inspect:openai-api/NAME/MODEL`` (an OpenAI-compatible server at ``$NAME_BASE_URL`` with
``$NAME_API_KEY``) and the rest. Keys and base URLs are read by Inspect as it documents them
(``$ANTHROPIC_API_KEY`` ...); ``base_url`` and ``api_key`` options override them. Token
counts are Inspect's (``ModelOutput.usage``); an answer without usage is estimated as for
``openai:`` (``tokens_estimated``).

Inspect is asynchronous and the agents are not: every call is run on one event loop, either
the loop of the Inspect task that plays the episode (:func:`bridged_client`, used by
:mod:`mindhelper_env.inspect_task`, so the calls show in the sample's transcript and count
in its usage) or a loop on a background thread shared by every ``inspect:`` client of the
process (so Inspect's connection limit, ``concurrency`` = ``max_connections``, holds across
the episodes played in parallel threads). Inspect retries rate limits and server errors
itself (``max_retries``, ``timeout``); a call that still fails raises
:class:`~mindhelper_env.models.base.ModelError` (``http_<status>``, ``timeout``,
``connection`` or ``error``), which the agents count as fallbacks.

:func:`check_inspect_spec` builds the model once without calling it: a provider that is not
installed, a missing key or an unknown provider is a ``ValueError`` of one line (the
``evaluate`` command turns it into exit code 2 before ``--out`` is touched). An unknown
model name is only known when the provider answers (a counted ``http_404``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import re
import threading
import time
from typing import Any

from mindhelper_env.models.base import (
    Completion,
    ModelError,
    estimate_prompt_tokens,
    estimate_tokens,
    normalize_messages,
)
from mindhelper_env.models.limits import check_cancelled, current_cancel_event

__all__ = ["InspectClient", "bridged_client", "check_inspect_spec", "INSTALL_HINT"]

INSTALL_HINT = "pip install 'mindhelper-env[inspect]'"

_MARKUP = re.compile(r"\[/?[a-z ]+\]")


def _one_line(err: BaseException) -> str:
    """An Inspect error message without its rich markup, on one line."""
    text = _MARKUP.sub("", str(err)).replace("ERROR:", " ")
    return " ".join(text.split()) or type(err).__name__


def _import_inspect() -> Any:
    try:
        import inspect_ai.model as inspect_model
    except ImportError as err:
        raise ImportError(f"the 'inspect:' model client needs Inspect AI: {INSTALL_HINT}"
                          ) from err
    return inspect_model


def _get_model(name: str, *, concurrency: int | None, timeout: float | None,
               max_retries: int | None, base_url: str | None, api_key: str | None,
               model_args: dict[str, Any] | None) -> Any:
    im = _import_inspect()
    config = im.GenerateConfig(
        max_connections=int(concurrency) if concurrency else None,
        timeout=int(timeout) if timeout else None,
        max_retries=int(max_retries) if max_retries is not None else None)
    try:
        return im.get_model(name, config=config, base_url=base_url, api_key=api_key,
                            **(model_args or {}))
    except Exception as err:  # PrerequisiteError (package, key), ValueError (provider)
        raise ValueError(f"inspect:{name}: {_one_line(err)}") from None


def check_inspect_spec(spec: str, **options: Any) -> None:
    """Build the model of an ``inspect:`` spec without calling it; ``ImportError`` without
    Inspect, ``ValueError`` (one line) for a provider that is not installed, a missing key
    or an unknown provider."""
    if spec.startswith("record:"):
        spec = spec.partition("=")[2]
    kind, _, target = spec.partition(":")
    if kind.strip().lower() != "inspect":
        return
    target = target.strip()
    if "/" not in target or target.startswith("/") or target.endswith("/"):
        raise ValueError(f"model spec {spec!r}: expected 'inspect:PROVIDER/MODEL', e.g. "
                         "'inspect:anthropic/claude-sonnet-4-0'")
    _get_model(target, concurrency=options.get("concurrency"), timeout=options.get("timeout"),
               max_retries=options.get("max_retries"), base_url=options.get("base_url"),
               api_key=options.get("api_key"), model_args=options.get("model_args"))


class _BackgroundLoop:
    """One event loop on a daemon thread, for the ``inspect:`` clients of this process."""

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None or cls._loop.is_closed():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="mindhelper-inspect-loop",
                                 daemon=True).start()
                cls._loop = loop
            return cls._loop


def _error_kind(err: BaseException) -> str:
    status = getattr(err, "status_code", None) or getattr(
        getattr(err, "response", None), "status_code", None)
    if isinstance(status, int):
        return f"http_{status}"
    name = type(err).__name__.lower()
    if "timeout" in name or isinstance(err, (TimeoutError, asyncio.TimeoutError)):
        return "timeout"
    if "connect" in name:
        return "connection"
    return "error"


class InspectClient:
    """``inspect:PROVIDER/MODEL`` (see the module docstring)."""

    thread_safe = True
    structured = None

    def __init__(self, model: str, *, concurrency: int | None = None,
                 timeout: float | None = None, max_retries: int | None = None,
                 context_length: int | None = None, base_url: str | None = None,
                 api_key: str | None = None, model_args: dict[str, Any] | None = None,
                 chars_per_token: float = 4.0, image_tokens: str | int | None = None,
                 _model: Any = None,
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        if context_length is not None and int(context_length) < 256:
            raise ValueError(f"context_length must be at least 256, got {context_length!r}")
        if concurrency is not None and (isinstance(concurrency, bool) or int(concurrency) < 1):
            raise ValueError(f"concurrency must be a positive int, got {concurrency!r}")
        self._im = _import_inspect()
        self._model = _model if _model is not None else _get_model(
            model, concurrency=concurrency, timeout=timeout, max_retries=max_retries,
            base_url=base_url, api_key=api_key, model_args=model_args)
        self.model = model
        self.model_id = f"inspect:{model}"
        self.context_length = int(context_length) if context_length is not None else None
        self.chars_per_token = float(chars_per_token)
        from mindhelper_env.models.images import check_image_rule

        self.image_tokens = check_image_rule(image_tokens)
        self._loop = _loop

    def _chat(self, messages: list[dict[str, Any]]) -> list[Any]:
        from mindhelper_env.models.openai_client import png_data_url

        im = self._im
        kinds = {"system": im.ChatMessageSystem, "user": im.ChatMessageUser,
                 "assistant": im.ChatMessageAssistant}
        out = []
        for msg in messages:
            cls = kinds.get(msg["role"])
            if cls is None:
                raise ValueError(f"inspect: unsupported message role {msg['role']!r}")
            parts = msg["content"]
            if all(kind == "text" for kind, _ in parts):
                out.append(cls(content="".join(v for _, v in parts)))
                continue
            content = [im.ContentText(text=v) if kind == "text"
                       else im.ContentImage(image=png_data_url(v)) for kind, v in parts]
            out.append(cls(content=content))
        return out

    def _run(self, coro: Any) -> Any:
        """Run ``coro`` on the task's loop or the background loop, from this thread, in a
        copy of this thread's context (Inspect's transcript and usage of the sample)."""
        loop = self._loop or _BackgroundLoop.get()
        ctx = contextvars.copy_context()
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        task_box: list[asyncio.Task[Any]] = []

        def start() -> None:
            task = ctx.run(loop.create_task, coro)
            task_box.append(task)

            def finish(t: asyncio.Task[Any]) -> None:
                if t.cancelled():
                    done.cancel()
                elif t.exception() is not None:
                    done.set_exception(t.exception())  # type: ignore[arg-type]
                else:
                    done.set_result(t.result())

            task.add_done_callback(finish)

        loop.call_soon_threadsafe(start)
        event = current_cancel_event()
        while True:
            try:
                return done.result(timeout=0.2)
            except concurrent.futures.TimeoutError:
                if event is not None and event.is_set():
                    if task_box:
                        loop.call_soon_threadsafe(task_box[0].cancel)
                    check_cancelled()

    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int = 256,
                 temperature: float = 0.0) -> Completion:
        check_cancelled()
        msgs = normalize_messages(messages)
        chat = self._chat(msgs)
        config = self._im.GenerateConfig(max_tokens=int(max_tokens),
                                         temperature=float(temperature))
        t0 = time.perf_counter()
        try:
            output = self._run(self._model.generate(chat, config=config))
        except ModelError:
            raise
        except Exception as err:
            raise ModelError(f"{self.model_id}: {type(err).__name__}: {_one_line(err)}",
                             _error_kind(err)) from err
        seconds = time.perf_counter() - t0
        text = output.completion
        if not isinstance(text, str):
            raise ModelError(f"{self.model_id}: the answer is not text", "bad_response")
        usage = getattr(output, "usage", None)
        pt = getattr(usage, "input_tokens", None)
        ct = getattr(usage, "output_tokens", None)
        if isinstance(pt, int) and isinstance(ct, int):
            return Completion(text, pt, ct, seconds, tokens_estimated=False)
        return Completion(text, estimate_prompt_tokens(msgs, chars_per_token=self.chars_per_token,
                                                       image_rule=self.image_tokens),
                          estimate_tokens(len(text), 0, self.chars_per_token), seconds,
                          tokens_estimated=True)


def bridged_client(model: Any, loop: asyncio.AbstractEventLoop, *,
                   context_length: int | None = None) -> InspectClient:
    """A client of an Inspect ``Model`` that runs its calls on ``loop`` (an Inspect task's
    own loop; the caller plays the episode in a worker thread)."""
    return InspectClient(str(model), context_length=context_length, _model=model, _loop=loop)
