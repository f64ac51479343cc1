"""One accounted model call for an agent: tokens, time, images, failed calls by kind, and
warnings that never flood the log.

Every call's images (sent whether it is answered or fails) go to ``usage.images`` and their
tokens by the client's rule to ``usage.image_tokens`` (:func:`count_images`,
:func:`~mindhelper_env.models.images.message_image_tokens`).

:func:`accounted_call` is what model-backed agents (``direct-vlm``, MindClaw's modules) use
for every call. A failed call (any exception of the client: timeout, HTTP 400 context
overflow, 404 unknown model, a replay miss) is counted in ``usage.fallbacks`` and in
``usage.errors[kind]`` with its first message in ``usage.error_messages``; it is logged as a
warning the first time each (agent, kind) occurs in a process, then at debug level. The run's
summary prints one line per kind with the count (:func:`mindhelper_env.models.report.warning_lines`).

In a run with a budget, every call first reserves its worst case on the run's ledger (from
its episode's hold) and settles it to the answer's billed usage, which the ledger learns
from (:mod:`mindhelper_env.models.ledger`); a call the budget cannot hold raises
:class:`~mindhelper_env.models.ledger.BudgetRefused` (not counted as a failed call: the
episode is cut and not recorded).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from mindhelper_env.models.base import Completion, call_client, error_kind
from mindhelper_env.models.ledger import BudgetRefused, admit, settle

__all__ = ["accounted_call", "count_images", "reset_warnings"]

logger = logging.getLogger("mindhelper_env.models")

_warned: set[tuple[str, str]] = set()
_lock = threading.Lock()


def reset_warnings() -> None:
    """Forget which (agent, kind) warnings were logged (tests)."""
    with _lock:
        _warned.clear()


def _warn_once(who: str, kind: str, message: str) -> None:
    with _lock:
        first = (who, kind) not in _warned
        _warned.add((who, kind))
    if first:
        logger.warning("%s: model call failed (%s): %s; further %s failures of %s are "
                       "counted and summed up at the end of the run", who, kind, message,
                       kind, who)
    else:
        logger.debug("%s: model call failed (%s): %s", who, kind, message)


def count_images(client: Any, usage: Any, messages: list[dict[str, Any]]) -> None:
    """Add the images of ``messages`` and their tokens by ``client``'s rule to ``usage``
    (a usage object without ``images`` fields is left alone)."""
    if not hasattr(usage, "image_tokens"):
        return
    if not any(not isinstance(m.get("content"), str) for m in messages):
        return  # text only: nothing to count (and no normalizing cost)
    from mindhelper_env.models.base import normalize_messages
    from mindhelper_env.models.images import image_rule_of, message_image_tokens

    images, tokens = message_image_tokens(normalize_messages(messages), image_rule_of(client))
    usage.images += images
    usage.image_tokens += tokens


def accounted_call(client: Any, usage: Any, messages: list[dict[str, Any]], *,
                   max_tokens: int, temperature: float = 0.0, constraint: Any = None,
                   who: str = "agent") -> tuple[Completion | None, str | None]:
    """``(completion, None)``, or ``(None, kind)`` for a failed call (counted, see the module
    docstring). Tokens and seconds of answered calls are added to ``usage``."""
    from mindhelper_env.models.images import image_rule_of

    # BudgetRefused: the episode is cut
    held = admit(messages, max_tokens, image_rule_of(client))
    usage.model_calls += 1
    t0 = time.perf_counter()
    count_images(client, usage, messages)  # sent, whether the call is answered or fails
    try:
        answer = call_client(client, messages, max_tokens=max_tokens, temperature=temperature,
                             constraint=constraint)
    except BudgetRefused:
        settle(held, None, None)
        raise
    except Exception as err:  # a model failure must not end the episode
        usage.seconds += time.perf_counter() - t0
        usage.fallbacks += 1
        kind = error_kind(err)
        settle(held, None, None, kind=kind)
        message = str(err).replace("\n", " ")
        usage.count_error(kind, message)
        _warn_once(who, kind, message[:300])
        return None, kind
    settle(held, answer.prompt_tokens, answer.completion_tokens)
    usage.seconds += answer.seconds
    usage.prompt_tokens += answer.prompt_tokens
    usage.completion_tokens += answer.completion_tokens
    usage.tokens_estimated = usage.tokens_estimated or answer.tokens_estimated
    return answer, None
