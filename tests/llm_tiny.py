"""A tiny random-weight chat model built offline for the LLM-training tests.

A byte-level BPE tokenizer trained here on the texts the test gives (so any text
tokenizes), the Qwen2.5 chat template that TRL ships (TRL recognises it: tool calls are
rendered and parsed), and a one-layer Qwen2 with random weights. Nothing is downloaded.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]


def qwen_chat_template() -> str:
    from importlib.resources import files

    return (files("trl") / "chat_templates" / "qwen2_5.jinja").read_text(encoding="utf-8")


def tiny_chat_model(path: Path, texts: Iterable[str], *, vocab_size: int = 600,
                    hidden: int = 32, seed: int = 0) -> Path:
    """Build and save the tiny model and tokenizer to ``path``; returns ``path``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(list(texts), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", padding_side="left")
    fast.chat_template = qwen_chat_template()
    fast.save_pretrained(path)
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=len(fast), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=4096, tie_word_embeddings=True,
                         eos_token_id=fast.convert_tokens_to_ids("<|im_end|>"),
                         pad_token_id=fast.convert_tokens_to_ids("<|endoftext|>"))
    Qwen2ForCausalLM(config).save_pretrained(path)
    return path
