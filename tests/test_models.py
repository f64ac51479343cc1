"""Model clients: the openai SDK against a scripted local server, cassettes, cache, limits,
and a tiny random-weight transformers chat model built offline."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from fake_openai_server import Reply, ScriptedServer, image_parts, need

from mindhelper_env.models import (
    Completion,
    ModelError,
    ReplayMissError,
    estimate_tokens,
    make_client,
    parse_spec,
)
from mindhelper_env.models.answers import (
    Constraint,
    answer_line,
    choice_letter,
    find_json_object,
    load_template,
)
from mindhelper_env.models.limits import FileSemaphore, backoff_delay

need("openai")

USER = [{"role": "user", "content": "Say hi."}]


def client_for(server, tmp_path, **opts):
    opts.setdefault("backoff", 0.01)
    opts.setdefault("lock_dir", tmp_path / "locks")
    return make_client(f"openai:test-model@{server.url}", api_key="sk-test", **opts)


def test_importing_the_package_loads_no_heavy_dependency():
    code = ("import sys, mindhelper_env, mindhelper_env.models, mindhelper_env.agents\n"
            "from mindhelper_env.agents import AGENTS, make_agent\n"
            "assert 'direct-vlm' in AGENTS\n"
            "import mindhelper_env.agents.direct_vlm\n"
            "print(sorted(m for m in ('openai', 'torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("spec", ["gpt", "nope:x", "openai:", "record:c.jsonl",
                                  "record:c.jsonl=replay:d.jsonl", "openai:@http://h/v1"])
def test_bad_specs_raise_value_error_naming_the_spec(spec):
    with pytest.raises(ValueError, match="model spec"):
        make_client(spec)


def test_spec_parsing():
    assert parse_spec("openai:qwen2.5:7b@http://127.0.0.1:8000/v1") == (
        "openai", "qwen2.5:7b", {"base_url": "http://127.0.0.1:8000/v1"})
    assert parse_spec("record:a/b.jsonl=openai:m") == ("record", "openai:m",
                                                       {"record": "a/b.jsonl"})
    with pytest.raises(ValueError, match="no such cassette"):
        make_client("replay:/nonexistent/cassette.jsonl")
    with pytest.raises(ValueError, match="bad option"):
        make_client("openai:m@http://127.0.0.1:9/v1", colour="red")


def test_completion_and_usage_from_the_server(tmp_path):
    with ScriptedServer([Reply(text="hello")]) as srv:
        c = client_for(srv, tmp_path).complete(USER, max_tokens=5, temperature=0.0)
        body = srv.requests[0]
    assert isinstance(c, Completion)
    assert (c.text, c.prompt_tokens, c.completion_tokens) == ("hello", 11, 7)
    assert not c.tokens_estimated and not c.cached and c.seconds > 0
    assert body["model"] == "test-model" and body["max_tokens"] == 5
    assert body["messages"] == [{"role": "user", "content": "Say hi."}]


def test_base_url_and_key_from_environment(tmp_path, monkeypatch):
    with ScriptedServer([Reply(text="env")]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        assert make_client("openai:m").complete(USER).text == "env"


def test_missing_usage_is_estimated(tmp_path):
    frame = np.zeros((8, 8, 3), np.uint8)
    msgs = [{"role": "user", "content": ["abcdefgh", frame]}]
    with ScriptedServer([Reply(text="twelve chars", usage=None)]) as srv:
        c = client_for(srv, tmp_path).complete(msgs)
    assert c.tokens_estimated
    # text at 4 characters a token, the 8 x 8 image by the default rule (OpenAI high
    # detail: 85 + one 512 px tile of 170)
    assert c.prompt_tokens == estimate_tokens(len("user") + 8, images=1,
                                              image_tokens=255) == 3 + 255
    assert c.completion_tokens == 3


def test_retry_after_500_and_429(tmp_path):
    script = [Reply(status=500), Reply(status=429), Reply(text="ok")]
    with ScriptedServer(script) as srv:
        c = client_for(srv, tmp_path, max_retries=3).complete(USER)
        assert len(srv.requests) == 3
    assert c.text == "ok"


def test_retry_after_header_is_honoured_up_to_max_backoff(tmp_path):
    with ScriptedServer([Reply(status=429, headers={"Retry-After": "0.4"}),
                         Reply(text="ok")]) as srv:
        t0 = time.perf_counter()
        assert client_for(srv, tmp_path, max_retries=1).complete(USER).text == "ok"
        assert time.perf_counter() - t0 >= 0.4
    with ScriptedServer([Reply(status=429, headers={"Retry-After": "100"}),
                         Reply(text="ok")]) as srv:
        t0 = time.perf_counter()
        client_for(srv, tmp_path, max_retries=1, max_backoff=0.05).complete(USER)
        assert time.perf_counter() - t0 < 2.0


def test_retries_run_out_and_client_errors_do_not_retry(tmp_path):
    with ScriptedServer([Reply(status=503)]) as srv:
        with pytest.raises(ModelError, match="InternalServerError"):
            client_for(srv, tmp_path, max_retries=2).complete(USER)
        assert len(srv.requests) == 3
    with ScriptedServer([Reply(status=400)]) as srv:
        with pytest.raises(ModelError, match="BadRequest"):
            client_for(srv, tmp_path, max_retries=2).complete(USER)
        assert len(srv.requests) == 1


def test_timeout_is_retried_then_reported(tmp_path):
    with ScriptedServer([Reply(delay=1.5)]) as srv:
        t0 = time.perf_counter()
        with pytest.raises(ModelError, match="Timeout"):
            client_for(srv, tmp_path, timeout=0.2, max_retries=1).complete(USER)
        assert time.perf_counter() - t0 < 1.4
        assert len(srv.requests) == 2


def test_malformed_response_body_is_a_model_error(tmp_path):
    with ScriptedServer([Reply(raw=b"{this is not json")]) as srv:
        with pytest.raises(ModelError):
            client_for(srv, tmp_path, max_retries=0).complete(USER)
    with ScriptedServer([Reply(raw=b'{"choices": []}')]) as srv:
        with pytest.raises(ModelError):
            client_for(srv, tmp_path, max_retries=0).complete(USER)


def test_images_are_sent_as_png_data_urls(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)
    msgs = [{"role": "system", "content": "You see frames."},
            {"role": "user", "content": ["Look:", frame, {"type": "image", "image": frame}]}]
    with ScriptedServer() as srv:
        client_for(srv, tmp_path).complete(msgs)
        body = srv.requests[0]
    assert body["messages"][0] == {"role": "system", "content": "You see frames."}
    assert body["messages"][1]["content"][0] == {"type": "text", "text": "Look:"}
    urls = image_parts(body)
    assert len(urls) == 2 and all(u.startswith("data:image/png;base64,") for u in urls)
    img = Image.open(io.BytesIO(base64.b64decode(urls[0].split(",", 1)[1])))
    assert np.array_equal(np.asarray(img), frame)
    with pytest.raises(ValueError, match="uint8"):
        client_for(srv, tmp_path).complete([{"role": "user", "content": [frame[..., 0]]}])


def test_backoff_is_exponential_with_deterministic_jitter():
    d = [backoff_delay(k, base=1.0, cap=5.0, seed="abc") for k in range(5)]
    assert d == [backoff_delay(k, base=1.0, cap=5.0, seed="abc") for k in range(5)]
    assert 1.0 <= d[0] < 1.5 and 2.0 <= d[1] < 3.0 and 4.0 <= d[2] < 6.0
    assert all(5.0 <= x < 7.5 for x in d[3:])
    assert d != [backoff_delay(k, base=1.0, cap=5.0, seed="xyz") for k in range(5)]


def _parallel(n, fn):
    threads = [threading.Thread(target=fn) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_concurrency_limit_is_shared_by_threads_and_processes(tmp_path):
    lock_dir = tmp_path / "locks"
    with ScriptedServer([Reply(delay=0.3)]) as srv:
        # without a limit, three threads overlap
        _parallel(3, lambda: client_for(srv, tmp_path).complete(USER))
        assert srv.peak >= 2
        srv.peak = 0
        # with concurrency=1: another process plus two threads (separate clients) never overlap
        child = textwrap.dedent(f"""
            from mindhelper_env.models import make_client
            c = make_client("openai:test-model@{srv.url}", api_key="k", concurrency=1,
                            lock_dir={str(lock_dir)!r})
            for _ in range(2):
                c.complete([{{"role": "user", "content": "from the child"}}])
        """)
        proc = subprocess.Popen([sys.executable, "-c", child])
        _parallel(2, lambda: client_for(srv, tmp_path, concurrency=1,
                                        lock_dir=lock_dir).complete(USER))
        assert proc.wait(timeout=30) == 0
        contents = [r["messages"][0]["content"] for r in srv.requests[3:]]
        assert contents.count("from the child") == 2 and len(contents) == 4
        assert srv.peak == 1


def test_file_semaphore_slots(tmp_path):
    sem = FileSemaphore(2, "endpoint", tmp_path)
    with sem.hold() as a, sem.hold() as b:
        assert {a, b} == {0, 1}
        with pytest.raises(TimeoutError):
            with sem.hold(timeout=0.05):
                pass
    with sem.hold(timeout=0.05) as c:
        assert c == 0
    with pytest.raises(ValueError):
        FileSemaphore(0, "x", tmp_path)


def test_record_then_replay_without_server(tmp_path):
    cassette = tmp_path / "cassette.jsonl"
    frame = np.full((4, 4, 3), 7, np.uint8)
    requests = [USER, [{"role": "user", "content": ["with a frame", frame]}], USER]

    def script(body, n):
        return Reply(text=f"answer {n}", usage={"prompt_tokens": 10 + n,
                                                "completion_tokens": n})

    with ScriptedServer(script) as srv:
        rec = make_client(f"record:{cassette}=openai:test-model@{srv.url}", api_key="k")
        recorded = [rec.complete(m, max_tokens=9) for m in requests]
        assert len(srv.requests) == 2  # the repeated request was answered from the cassette
    lines = [json.loads(x) for x in cassette.read_text().splitlines()]
    assert len(lines) == 2 and lines[0]["model"] == "openai:test-model"
    assert recorded[0].text == recorded[2].text == "answer 0"
    # the server is gone: replay answers identically
    rep = make_client(f"replay:{cassette}")
    replayed = [rep.complete(m, max_tokens=9) for m in requests]
    strip = lambda c: {k: v for k, v in c.to_dict().items() if k != "cached"}  # noqa: E731
    assert [strip(c) for c in replayed] == [strip(c) for c in recorded]
    assert all(c.cached for c in replayed)
    with pytest.raises(ReplayMissError, match="no recorded answer"):
        rep.complete(USER, max_tokens=10)
    # the record= option is the same as the record: prefix
    with ScriptedServer(script) as srv:
        again = make_client(f"openai:test-model@{srv.url}", api_key="k", record=cassette)
        assert again.complete(USER, max_tokens=9).text == "answer 0"
        assert srv.requests == []


def test_response_cache(tmp_path):
    with ScriptedServer([Reply(text="cached answer")]) as srv:
        first = client_for(srv, tmp_path, cache_dir=tmp_path / "cache").complete(USER)
        second = client_for(srv, tmp_path, cache_dir=tmp_path / "cache").complete(USER)
        other = client_for(srv, tmp_path, cache_dir=tmp_path / "cache").complete(
            USER, temperature=0.5)
        assert len(srv.requests) == 2
    assert not first.cached and second.cached and not other.cached
    assert (second.text, second.prompt_tokens) == (first.text, first.prompt_tokens)


def _tiny_chat_model(path):
    """A random-weight Llama with a word-level tokenizer trained here, saved to ``path``."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    specials = ["<unk>", "<pad>", "<s>", "</s>"]
    trainer = trainers.WordLevelTrainer(special_tokens=specials)
    sentences = ["system: you are a robot helper", "user: say hi to the person",
                 "assistant: hi none apple fridge walk open grab give tell",
                 "the person looks for the apple in the fridge"]
    tok.train_from_iterator(sentences, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>",
                                   bos_token="<s>", eos_token="</s>")
    fast.chat_template = ("{{ bos_token }}{% for m in messages %}{{ m['role'] }}: "
                          "{{ m['content'] }} {% endfor %}"
                          "{% if add_generation_prompt %}assistant: {% endif %}")
    fast.save_pretrained(path)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(fast), hidden_size=16, intermediate_size=32,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=128, bos_token_id=2, eos_token_id=3,
                         pad_token_id=1)
    LlamaForCausalLM(config).save_pretrained(path)
    return fast


def test_hf_client_with_a_tiny_local_model(tmp_path):
    need("transformers")
    tok = _tiny_chat_model(tmp_path / "tiny")
    client = make_client(f"hf:{tmp_path / 'tiny'}", device="cpu")
    msgs = [{"role": "system", "content": "you are a robot helper"},
            {"role": "user", "content": ["say hi to the person", np.zeros((4, 4, 3), np.uint8)]}]
    a = client.complete(msgs, max_tokens=6)
    b = client.complete(msgs, max_tokens=6)
    assert a.text == b.text and isinstance(a.text, str)  # greedy: deterministic
    expected = tok.apply_chat_template(
        [{"role": "system", "content": "you are a robot helper"},
         {"role": "user", "content": "say hi to the person[image]"}],
        add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]
    assert a.prompt_tokens == len(expected)
    assert 1 <= a.completion_tokens <= 6 and not a.tokens_estimated
    with pytest.raises(ValueError, match="hf:"):
        make_client(f"hf:{tmp_path / 'missing'}")


def test_hf_clients_of_the_same_weights_share_one_model(tmp_path):
    """Two clients of one model (evaluate's direct-vlm and mindclaw) load it once, with their
    own options; shared=False and another dtype load their own; the weights go when no
    client holds them."""
    need("transformers")
    import gc

    from mindhelper_env.models import hf_client

    _tiny_chat_model(tmp_path / "tiny")
    a = make_client(f"hf:{tmp_path / 'tiny'}", device="cpu")
    b = make_client(f"hf:{tmp_path / 'tiny'}", device="cpu", context_length=64, seed=3)
    assert b.model is a.model and b.tokenizer is a.tokenizer
    assert (a.context_length, b.context_length) == (128, 64)
    private = make_client(f"hf:{tmp_path / 'tiny'}", device="cpu", shared=False)
    half = make_client(f"hf:{tmp_path / 'tiny'}", device="cpu", dtype="bfloat16")
    assert private.model is not a.model and half.model is not a.model
    msgs = [{"role": "user", "content": "say hi"}]
    assert a.complete(msgs, max_tokens=4).text == private.complete(msgs, max_tokens=4).text
    keys = [k for k in hf_client._LOADED if k[0] == str((tmp_path / "tiny").resolve())]
    assert len(keys) == 2  # a's (and b's) and half's; the private copy is not listed
    del a, b, half
    gc.collect()
    assert not [k for k in hf_client._LOADED if k[0] == str((tmp_path / "tiny").resolve())]


@pytest.mark.parametrize("spec, module, extra", [
    ("openai:m@http://127.0.0.1:9/v1", "openai", "api"),
    ("hf:/nonexistent", "transformers", "local")])
def test_missing_extra_says_what_to_install(monkeypatch, spec, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(ImportError, match=rf"mindhelper-env\[{extra}\]"):
        make_client(spec)


# ------------------------------------------------------- answers, structured output, errors



@pytest.mark.parametrize("text, expected", [
    # the failing example: the nested object is never the answer; the outer
    # square-bracketed pseudo-object is
    ('[intervene: false, "program": [{"intervene": true, "program": []}]]',
     {"intervene": False, "program": [{"intervene": True, "program": []}]}),
    ('["[walk] <fridge> (1)"] then {"intervene": true}', {"intervene": True}),
    ('[1, 2, {"intervene": true}]', None),
    ('{"intervene": false, "program": [{"intervene": true}]}',
     {"intervene": False, "program": [{"intervene": True}]}),
    ('```json\n{"blocked": false}\n```', {"blocked": False}),
    ('Sure! Here is my answer: {"blocked": true, "kind": "false_belief", "object": 7} '
     'I hope this helps. {"x": 1}', {"blocked": True, "kind": "false_belief", "object": 7}),
    ("{'intervene': True, 'program': ['[walk] <fridge> (1)']}",
     {"intervene": True, "program": ["[walk] <fridge> (1)"]}),
    ("{intervene: false, program: [],}", {"intervene": False, "program": []}),
    ("no object here", None),
    ('{"unterminated": ', None),
])
def test_find_json_object(text, expected):
    assert find_json_object(text) == expected


def test_choice_letters_and_lines():
    assert choice_letter("B", 3) == "B" and choice_letter("B. false belief", 3) == "B"
    assert choice_letter("(C)", 3) == "C" and choice_letter("The answer is C.", 3) == "C"
    assert choice_letter("D", 3) is None and choice_letter("I think so", 3) is None
    assert choice_letter("```\nA\n```", 2) == "A"
    assert answer_line("\n\nAnswer: none\nbecause") == "none"
    assert answer_line('"help: [walk] <a> (1)"') == "help: [walk] <a> (1)"


def test_prompt_templates_have_versions():
    for name in ("direct-vlm.json", "direct-vlm.line", "mindclaw-reasoning.json",
                 "mindclaw-reasoning.letter", "mindclaw-action.json", "mindclaw-action.line",
                 "mindclaw-observation.json", "mindclaw-observation.line"):
        t = load_template(name)
        assert t.version.startswith(name.split(".")[0]) and t.system.template
    with pytest.raises(ValueError, match="no prompt template"):
        load_template("nope")


@pytest.mark.parametrize("mode, field", [("json_schema", "response_format"),
                                         ("gbnf", "grammar"), ("guided_json", "guided_json")])
def test_structured_output_is_sent_only_when_asked(tmp_path, mode, field):
    need("openai")
    from mindhelper_env.models.base import call_client

    c = Constraint({"type": "object"}, 'root ::= "x"', None, "t")
    with ScriptedServer([Reply()]) as server:
        plain = make_client(f"openai:m@{server.url}")
        call_client(plain, [{"role": "user", "content": "hi"}], max_tokens=4, temperature=0,
                    constraint=c)
        client = make_client(f"openai:m@{server.url}", structured=mode)
        call_client(client, [{"role": "user", "content": "hi"}], max_tokens=4, temperature=0,
                    constraint=c)
    assert not {"response_format", "grammar", "guided_json"} & set(server.requests[0])
    assert field in server.requests[1]
    if mode == "json_schema":
        assert server.requests[1]["response_format"]["json_schema"]["schema"] == {
            "type": "object"}
    with pytest.raises(ValueError, match="structured"):
        make_client("openai:m@http://127.0.0.1:9/v1", structured="regex")


def test_constraint_is_part_of_the_cassette_key(tmp_path):
    need("openai")
    from mindhelper_env.models.base import call_client

    cas = tmp_path / "c.jsonl"
    c = Constraint(None, 'root ::= "A" | "B"', ("A", "B"), "choice")
    msgs = [{"role": "user", "content": "pick"}]
    with ScriptedServer([Reply(text="A")]) as server:
        rec = make_client(f"record:{cas}=openai:m@{server.url}", structured="gbnf")
        call_client(rec, msgs, max_tokens=2, temperature=0, constraint=c)
    entry = json.loads(cas.read_text().splitlines()[0])
    assert entry["request"]["params"]["structured"] == "gbnf"
    replay = make_client(f"replay:{cas}")
    assert replay.structured == "gbnf"
    assert call_client(replay, msgs, max_tokens=2, temperature=0, constraint=c).text == "A"
    with pytest.raises(ReplayMissError):
        replay.complete(msgs, max_tokens=2, temperature=0)  # unconstrained: another request


@pytest.mark.parametrize("status, message, kind", [
    (400, "the request exceeds the available context size", "context_overflow"),
    (404, "model not found", "http_404"), (401, "bad key", "http_401")])
def test_errors_have_kinds(tmp_path, status, message, kind):
    need("openai")
    body = json.dumps({"error": {"message": message}}).encode()
    with ScriptedServer([Reply(status=status, raw=body)]) as server:
        client = make_client(f"openai:m@{server.url}", max_retries=0)
        with pytest.raises(ModelError) as info:
            client.complete([{"role": "user", "content": "hi"}], max_tokens=4)
    assert info.value.kind == kind


def test_connection_refused_is_a_connection_error():
    need("openai")
    from mindhelper_env.models.local import free_port

    client = make_client(f"openai:m@http://127.0.0.1:{free_port()}/v1", max_retries=0,
                         timeout=5)
    with pytest.raises(ModelError) as info:
        client.complete([{"role": "user", "content": "hi"}], max_tokens=4)
    assert info.value.kind == "connection"


def test_token_estimate_is_calibrated_and_marked(tmp_path):
    need("openai")
    text = "word " * 200  # 1000 characters
    usage = {"prompt_tokens": 400, "completion_tokens": 3, "total_tokens": 403}
    with ScriptedServer([Reply(usage=usage), Reply(usage=None)]) as server:
        client = make_client(f"openai:m@{server.url}")
        first = client.complete([{"role": "user", "content": text}], max_tokens=4)
        second = client.complete([{"role": "user", "content": text}], max_tokens=5)
    assert not first.tokens_estimated and first.prompt_tokens == 400
    # 1004 characters for 400 tokens: the estimate follows that ratio, marked as estimated
    assert second.tokens_estimated and 395 <= second.prompt_tokens <= 405


def test_recorded_real_answers_parse_as_pinned():
    """Real answers of SmolLM2-135M (tests/data/smollm2-answers.json): prose before the
    object, fences, a nested object in place of an id, the prompt echoed; the letters of the
    compact format all read."""
    from pathlib import Path

    data = json.loads((Path(__file__).parent / "data" / "smollm2-answers.json").read_text())
    answers = data["answers"]
    assert len(answers) >= 20
    for a in answers:
        got = (find_json_object(a["answer"]) if a["format"] == "json"
               else choice_letter(a["answer"], 9))
        assert got == a["expected"], a["answer"]
    letters = [a for a in answers if a["format"] == "letter"]
    assert letters and all(a["expected"] for a in letters)
    # a JSON answer whose "object" is itself an object is never read as a usable id
    nested = [a for a in answers if '"object": {' in a["answer"]]
    assert nested and all(a["expected"] is None for a in nested)
    # the shape: a bracketed pseudo-object, read as the object it stands for
    bracketed = [a for a in answers if a["answer"].startswith("[intervene:")]
    assert bracketed and all(a["expected"]["intervene"] is False for a in bracketed)


def test_an_unloadable_hf_checkpoint_is_refused_before_the_output_folder(tmp_path, capsys):
    """hf: agents are not built before a run (a checkpoint loads in each worker), but where
    the checkpoint is missing is checked first: one line, exit 2, no folder left behind."""
    from mindhelper_env.cli import main
    from mindhelper_env.models.hf_client import check_hf_source

    with pytest.raises(ValueError, match="no such GGUF file"):
        check_hf_source(str(tmp_path / "m.gguf"))
    with pytest.raises(ValueError, match="no model there"):
        check_hf_source(str(tmp_path))  # a folder without config.json
    (tmp_path / "config.json").write_text("{}")
    check_hf_source(str(tmp_path))  # a saved model's folder passes (nothing is loaded)
    with pytest.raises(ValueError, match="not in the local Hugging Face cache"):
        check_hf_source("nobody-here/no-such-model-xyz")
    check_hf_source("nobody-here/no-such-model-xyz", download=True)
    out = tmp_path / "run"
    rc = main(["evaluate", "--suite", "vh-dev-v3", "--agents", "direct-vlm", "--model",
               f"hf:{tmp_path / 'missing'}", "--limit", "1", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "no model there" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
