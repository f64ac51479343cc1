"""Local generation with Hugging Face ``transformers`` (``hf:NAME_OR_PATH``).

The prompt is built with the tokenizer's chat template (``add_generation_prompt=True``);
decoding is greedy unless ``temperature > 0``. Token counts are exact: the prompt's and the
newly generated token ids. The client is text-only: image parts become the text
``[image]`` (logged once). Weights load from local files only unless ``download=True``, so
an evaluation never fetches a model behind your back.

Clients of the same weights (the same source, dtype, device and ``download``) in one process
share one loaded model while any of them lives (``evaluate`` of ``direct-vlm`` and
``mindclaw`` on one ``hf:`` model loads it once and holds it in memory once); their
generations take turns. ``shared=False`` loads a private copy (what training needs, since it
changes the weights).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from mindhelper_env.models.base import Completion, ModelError, normalize_messages

__all__ = ["HFClient", "check_hf_source"]

logger = logging.getLogger(__name__)

_GGUF_HINT = "pip install 'mindhelper-env[local,gguf]'"
_INSTALL_HINT = ("pip install torch==2.13.0 (CPU build) and then "
                 "pip install 'mindhelper-env[local]'")


def check_hf_source(name: str, download: bool = False) -> None:
    """``ValueError`` (one line) when ``hf:NAME`` cannot be loaded, found without loading
    anything: a ``.gguf`` file that is not there, a local path without a model
    (``config.json``), or, without ``download``, a hub id absent from the local Hugging Face
    cache. Runs before an evaluation touches its output folder."""
    if not name:
        raise ValueError("hf: needs a model name or path, e.g. 'hf:/models/qwen'")
    path = Path(name).expanduser()
    if name.lower().endswith(".gguf"):
        if not path.is_file():
            raise ValueError(f"hf:{name}: no such GGUF file")
        return
    if path.exists() or name.startswith(("/", ".", "~")) or name.count("/") > 1:
        if not (path / "config.json").is_file():
            raise ValueError(f"hf:{name}: no model there (a folder with config.json, as "
                             "save_pretrained writes it, or a .gguf file)")
        return
    if download:
        return
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # checked again when the client loads
        return
    try:
        found = try_to_load_from_cache(name, "config.json")
    except ValueError as err:  # not a repo id
        raise ValueError(f"hf:{name}: neither a local model folder nor a hub id ({err})") from None
    if not isinstance(found, str):
        raise ValueError(f"hf:{name}: not in the local Hugging Face cache; download it first "
                         "or pass the agent option download=true")


class _Loaded:
    """A tokenizer and model loaded once, shared by the clients of the same weights; its
    lock makes their generations take turns."""

    def __init__(self, tokenizer: Any, model: Any) -> None:
        self.tokenizer = tokenizer
        self.model = model
        self.lock = threading.RLock()


#: The loaded weights while a client holds them: ``{(source, gguf_file, dtype, device,
#: download): _Loaded}``.
_LOADED: weakref.WeakValueDictionary[tuple[Any, ...], _Loaded] = weakref.WeakValueDictionary()
_LOADING = threading.Lock()


class HFClient:
    """``hf:NAME_OR_PATH`` — see :func:`mindhelper_env.models.make_client` for the options."""

    #: One model in memory serves one episode at a time (the runner plays this client's
    #: episodes one after another in each worker).
    thread_safe = False

    def __init__(self, name: str, *, device: str | None = None, dtype: str | None = None,
                 download: bool = False, seed: int = 0,
                 context_length: int | None = None, structured: str | None = None,
                 shared: bool = True) -> None:
        if not name:
            raise ValueError("hf: needs a model name or path, e.g. 'hf:/models/qwen'")
        if structured not in (None, "", "none", "off"):
            raise ValueError(f"hf:{name}: structured output ({structured!r}) is not enforced by "
                             f"hf:; serve the model with llama.cpp or vLLM for it")
        try:
            import torch
            import transformers
        except ImportError as err:
            raise ImportError(f"the 'hf:' model client needs torch and transformers: "
                              f"{_INSTALL_HINT}") from err
        check_hf_source(name, download)  # a missing file or folder says so in one line
        self._torch = torch
        self.model_id = f"hf:{name}"
        self.name = name
        self.seed = int(seed)
        kwargs: dict[str, Any] = {"local_files_only": not download}
        source = name
        if name.lower().endswith(".gguf"):
            # a GGUF file: transformers dequantizes it to torch weights (needs the ``gguf``
            # package, plus ``accelerate``); tokenizer and chat template come from the file
            path = Path(name).expanduser()
            try:
                import gguf  # noqa: F401
            except ImportError as err:
                raise ImportError(f"hf:{name}: loading a GGUF file needs the gguf package: "
                                  f"{_GGUF_HINT}") from err
            source = str(path.parent)
            kwargs["gguf_file"] = path.name
        if dtype is not None and not isinstance(getattr(torch, str(dtype), None), torch.dtype):
            raise ValueError(f"hf:{name}: unknown dtype {dtype!r}")
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        key = (str(Path(source).expanduser().resolve()) if Path(source).expanduser().exists()
               else source, kwargs.get("gguf_file"), dtype, self.device, bool(download))
        with _LOADING:
            loaded = _LOADED.get(key) if shared else None
            if loaded is None:
                loaded = self._load(name, source, dtype, kwargs, transformers)
                if shared:
                    _LOADED[key] = loaded
        #: the tokenizer and model (shared with the other clients of these weights)
        self._loaded = loaded
        self.tokenizer = loaded.tokenizer
        self.model = loaded.model
        self._warned_images = False
        #: hf: enforces no structured output (answers are parsed as they come)
        self.structured = None
        window = getattr(self.model.config, "max_position_embeddings", None)
        if context_length is not None:
            self.context_length: int | None = int(context_length)
        else:
            self.context_length = int(window) if isinstance(window, int) else None

    def _load(self, name: str, source: str, dtype: str | None, kwargs: dict[str, Any],
              transformers: Any) -> _Loaded:
        torch = self._torch
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(source, **kwargs)
            if dtype is not None:
                major = int(transformers.__version__.split(".")[0])
                # transformers 5 calls it dtype; 4.x torch_dtype
                kwargs["dtype" if major >= 5 else "torch_dtype"] = getattr(torch, dtype)
            model = transformers.AutoModelForCausalLM.from_pretrained(source, **kwargs)
        except OSError as err:
            raise ValueError(f"hf:{name}: cannot load a local model there ({err})") from err
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError(f"hf:{name}: the tokenizer has no chat_template")
        model.to(self.device)
        model.eval()
        return _Loaded(tokenizer, model)

    def count_prompt_tokens(self, messages: list[dict[str, Any]]) -> int:
        """The prompt's exact token count (the chat template applied)."""
        return int(self._prompt_ids(messages).shape[-1])

    def _prompt_ids(self, messages: list[dict[str, Any]]) -> Any:
        chat = []
        for msg in normalize_messages(messages):
            texts = []
            for kind, value in msg["content"]:
                if kind == "text":
                    texts.append(value)
                else:
                    texts.append("[image]")
                    if not self._warned_images:
                        logger.warning("%s is text-only: images are replaced by '[image]'",
                                       self.model_id)
                        self._warned_images = True
            chat.append({"role": msg["role"], "content": "".join(texts)})
        with self._loaded.lock:  # a fast tokenizer refuses concurrent calls
            out = self.tokenizer.apply_chat_template(chat, add_generation_prompt=True,
                                                     tokenize=True, return_dict=True,
                                                     return_tensors="pt")
        return out["input_ids"]

    def complete(self, messages: list[dict[str, Any]], *, max_tokens: int = 256,
                 temperature: float = 0.0) -> Completion:
        torch = self._torch
        t0 = time.perf_counter()
        ids = self._prompt_ids(messages).to(self.device)
        gen: dict[str, Any] = {"max_new_tokens": int(max_tokens)}
        if temperature and temperature > 0:
            gen.update(do_sample=True, temperature=float(temperature))
        else:
            gen.update(do_sample=False)
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id
        try:
            with self._loaded.lock, torch.no_grad():
                if temperature and temperature > 0:
                    torch.manual_seed(self.seed)
                out = self.model.generate(ids, attention_mask=torch.ones_like(ids),
                                          pad_token_id=pad, **gen)
        except (RuntimeError, ValueError) as err:
            raise ModelError(f"{self.model_id}: generation failed: {err}") from err
        new = out[0, ids.shape[-1]:]
        with self._loaded.lock:
            text = self.tokenizer.decode(new, skip_special_tokens=True)
        return Completion(text, int(ids.shape[-1]), int(new.shape[-1]),
                          time.perf_counter() - t0, tokens_estimated=False)
