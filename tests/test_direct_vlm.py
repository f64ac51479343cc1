"""The direct-vlm baseline end to end: real env, scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import re

import gymnasium as gym
import numpy as np
import pytest
from fake_openai_server import Reply, ScriptedServer, image_parts, need

from mindhelper_env.agents import make_agent
from mindhelper_env.agents.direct_vlm import DirectVLMAgent, parse_answer

need("openai")

SILENT = '{"intervene": false, "program": []}'


def user_text(body):
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(p["text"] for p in content if p.get("type") == "text")


def helpful_script(body, n):
    """Malformed every third call; from tick 6 on, walks to the first person listed."""
    text = user_text(body)
    if n % 3 == 1:
        return Reply(text="I think everything is fine, no need to act.")
    tick = int(re.search(r"Tick (\d+)\.", text).group(1))
    person = re.search(r"^- \w+ \((\d+)\), ", text, re.M)
    if tick >= 6 and person:
        answer = {"intervene": True, "program": [f"[walk] <character> ({person.group(1)})"]}
        return Reply(text="```json\n" + json.dumps(answer) + "\n```")
    return Reply(text=SILENT)


def play(env, agent, seed, trace=None):
    obs, info = env.reset(seed=seed)
    agent.reset(seed=seed)
    steps = 0
    while True:
        action = agent.act(obs, info)
        if trace is not None:
            trace.append((action, agent.usage.model_calls))
        obs, _, term, trunc, info = env.step(action)
        steps += 1
        if term or trunc:
            return info["episode_record"], steps


def test_parse_answer():
    ids = {1, 2, 132, 151}
    assert parse_answer(SILENT, ids) == ("none", "")
    fenced = ('Sure!\n```json\n{"intervene": true, "program": '
              '["[walk] <fridge> (132)", "[grab] <apple> (151)"]}\n```')
    assert parse_answer(fenced, ids) == ("[walk] <fridge> (132)\n[grab] <apple> (151)", "")
    one_string = '{"intervene": "true", "program": "[walk] <fridge> (132); [open] <fridge> (132)"}'
    assert parse_answer(one_string, ids)[0] == "[walk] <fridge> (132)\n[open] <fridge> (132)"
    for bad, why in [("no json here", "no JSON"), ('{"program": []}', "boolean"),
                     ('{"intervene": true, "program": []}', "non-empty"),
                     ('{"intervene": true, "program": ["[fly] <fridge> (132)"]}', "bad line"),
                     ('{"intervene": true, "program": ["[walk] <fridge> (999)"]}', "unknown id"),
                     ('{"intervene": true, "program": [3]}', "list of strings"),
                     ('{"intervene": tru', "no JSON")]:
        action, reason = parse_answer(bad, ids)
        assert action is None and why in reason, (bad, reason)


def test_narration_is_bounded_and_keeps_scene_and_newest_windows():
    agent = DirectVLMAgent(model=_NullClient(), history_chars=400)
    agent._observe({"narration": "SCENE " * 20, "events": "[]"})
    for i in range(50):
        agent._observe({"narration": f"[t={i}] window {i} " + "x" * 20, "events": "[]"})
    text = agent.narration()
    assert len(text) <= 400 + 60
    assert text.startswith("SCENE") and "window 49" in text and "window 0 " not in text
    assert re.search(r"\[\.\.\. \d+ earlier window\(s\) left out \.\.\.\]", text)


class _NullClient:
    model_id = "null"

    def complete(self, messages, *, max_tokens=256, temperature=0.0):
        raise AssertionError("not called")


def test_make_agent_needs_a_model(monkeypatch):
    monkeypatch.delenv("MINDHELPER_MODEL", raising=False)
    with pytest.raises(ValueError, match="MINDHELPER_MODEL"):
        make_agent("direct-vlm")
    monkeypatch.setenv("MINDHELPER_MODEL", "openai:m@http://127.0.0.1:9/v1")
    assert make_agent("direct-vlm", env=None, seed=0).client.model_id == "openai:m"


def test_end_to_end_on_the_env_counts_parse_failures_and_acts_once(vh_env):
    with ScriptedServer(helpful_script) as srv:
        agent = make_agent("direct-vlm", model=f"openai:test-vlm@{srv.url}", api_key="k")
        totals = {"calls": 0, "failures": 0, "acted": 0}
        for seed in range(3):
            before = len(srv.requests)
            trace = []
            record, steps = play(vh_env, agent, seed, trace)
            u = agent.usage
            assert u.decisions == steps
            assert u.model_calls == len(srv.requests) - before
            assert u.prompt_tokens == 11 * u.model_calls
            assert u.completion_tokens == 7 * u.model_calls
            assert not u.tokens_estimated and u.fallbacks == 0
            programs = [a for a in record["actions"]]
            assert len(programs) <= 1  # silent after acting once
            if programs:
                assert programs[0]["program"].startswith("[walk] <character> (")
                first = next(i for i, (a, _) in enumerate(trace) if a != "none")
                assert u.model_calls == trace[first][1] == first + 1  # no calls after acting
                assert all(a == "none" for a, _ in trace[first + 1:])
                totals["acted"] += 1
            totals["calls"] += u.model_calls
            totals["failures"] += u.parse_failures
        body = srv.requests[0]
    assert totals["failures"] >= 1 and totals["acted"] >= 1
    system, user = body["messages"][0]["content"], user_text(body)
    assert "false belief" in system and "[give]" in system and '"intervene"' in system
    assert "Candidates now:" in user and "Places:" in user and "The home has:" in user and "<character>" in user


def test_frames_are_sent_as_images():
    env = gym.make("MindHelper-VirtualHome-v0", obs_mode="text+rgb", frame_size=64,
                   frame_stack=2)
    with ScriptedServer([Reply(text=SILENT)]) as srv:
        agent = make_agent("direct-vlm", model=f"openai:test-vlm@{srv.url}", api_key="k")
        _, steps = play(env, agent, 0)
        assert len(srv.requests) == steps
        for body in srv.requests:
            urls = image_parts(body)
            assert len(urls) == 2 and all(u.startswith("data:image/png;base64,") for u in urls)
    env.close()


def test_model_failures_fall_back_to_none(vh_env):
    with ScriptedServer([Reply(status=500)]) as srv:
        agent = make_agent("direct-vlm", model=f"openai:test-vlm@{srv.url}", api_key="k",
                           max_retries=0)
        record, steps = play(vh_env, agent, 1)
    assert record["actions"] == []
    assert agent.usage.fallbacks == agent.usage.model_calls == steps
    assert agent.usage.parse_failures == 0


def test_missing_usage_marks_tokens_estimated(vh_env):
    with ScriptedServer([Reply(text=SILENT, usage=None)]) as srv:
        agent = make_agent("direct-vlm", model=f"openai:test-vlm@{srv.url}", api_key="k")
        play(vh_env, agent, 2)
    assert agent.usage.tokens_estimated and agent.usage.prompt_tokens > 0


def test_recorded_episodes_replay_identically_without_server(vh_env, tmp_path):
    cassette = tmp_path / "run.jsonl"
    with ScriptedServer(helpful_script) as srv:
        agent = make_agent("direct-vlm", model=f"record:{cassette}=openai:test-vlm@{srv.url}",
                           api_key="k")
        first = [(play(vh_env, agent, s)[0]["actions"], agent.usage.to_dict()) for s in (0, 1)]
    agent = make_agent("direct-vlm", model=f"replay:{cassette}")
    again = [(play(vh_env, agent, s)[0]["actions"], agent.usage.to_dict()) for s in (0, 1)]
    assert again == first
    # an episode never recorded: every call misses, the agent stays silent, nothing crashes
    record, steps = play(vh_env, agent, 7)
    assert record["actions"] == [] and agent.usage.fallbacks == steps


def test_recorded_evaluation_reruns_bit_identically(tmp_path):
    from mindhelper_env.evaluation import evaluate

    cassette = tmp_path / "cassette.jsonl"
    with ScriptedServer(helpful_script) as srv:
        evaluate("vh-dev-v2", ["direct-vlm"], tmp_path / "rec", workers=2, limit=4,
                 progress=False, plots=False, timing=False,
                 agent_kwargs={"direct-vlm": {
                     "model": f"record:{cassette}=openai:test-vlm@{srv.url}",
                     "api_key": "k", "concurrency": 1, "lock_dir": str(tmp_path / "locks")}})
        assert srv.peak == 1
    evaluate("vh-dev-v2", ["direct-vlm"], tmp_path / "rep", limit=4, progress=False,
             plots=False, timing=False,
             agent_kwargs={"direct-vlm": {"model": f"replay:{cassette}"}})
    recorded = (tmp_path / "rec" / "direct-vlm.jsonl").read_bytes()
    assert recorded == (tmp_path / "rep" / "direct-vlm.jsonl").read_bytes()
    records = [json.loads(x) for x in recorded.decode().splitlines()]
    assert len(records) == 4 and all(r["usage"]["model_calls"] > 0 for r in records)
    assert all(r["usage"]["fallbacks"] == 0 for r in records)


def test_images_in_prompt_are_limited():
    agent = DirectVLMAgent(model=_NullClient(), max_images=1)
    frames = np.zeros((3, 4, 4, 3), np.uint8)
    frames[-1] += 9
    agent._observe({"narration": "scene", "events": "[]"})
    msgs = agent.build_messages({"tick": 0, "rgb": frames}, {"candidates": {}})
    images = [p for p in msgs[1]["content"] if isinstance(p, np.ndarray)]
    assert len(images) == 1 and images[0][0, 0, 0] == 9


# ------------------------------------------------------------- formats, fitting, errors


def test_line_format_and_its_parser():
    assert parse_answer("none", {1}, fmt="line") == ("none", "")
    assert parse_answer("Answer: None.", {1}, fmt="line") == ("none", "")
    ok, why = parse_answer("help: [walk] <fridge> (1); [open] <fridge> (1)\nbecause", {1},
                           fmt="line")
    assert ok == "[walk] <fridge> (1)\n[open] <fridge> (1)" and why == ""
    assert parse_answer("[grab] <apple> (2)", {2}, fmt="line")[0] == "[grab] <apple> (2)"
    assert parse_answer("help: [grab] <apple> (9)", {2}, fmt="line")[0] is None
    assert parse_answer("I would help Ann", {2}, fmt="line")[0] is None
    with pytest.raises(ValueError, match="answer_format"):
        DirectVLMAgent(model=_Stub(), answer_format="xml")


class _Stub:
    model_id = "stub"

    def complete(self, messages, *, max_tokens=256, temperature=0.0):
        raise AssertionError("not called")


def test_the_grammar_is_sent_with_known_ids(vh_env):
    from mindhelper_env.agents.direct_vlm import answer_constraint

    with ScriptedServer([Reply(text="none")]) as srv:
        agent = make_agent("direct-vlm", model=f"openai:m@{srv.url}", answer_format="line",
                           structured="gbnf")
        record, steps = play(vh_env, agent, 3)
    body = srv.requests[0]
    grammar = body["grammar"]
    assert grammar.startswith('root ::= "none" | "help: " step')
    ids = re.search(r"^id ::= (.*)$", grammar, re.M).group(1)
    assert ids.count("|") >= 10  # the candidates' ids, nothing else
    assert agent.usage.sources == {"model": steps} and agent.usage.parse_failures == 0
    assert agent.usage.prompts == {"direct-vlm": "direct-vlm.line-4"}
    c = answer_constraint("json", {1, 2})
    assert c.schema["required"] == ["intervene", "program"] and '"1" | "2"' in c.grammar


def test_prompts_are_fitted_to_the_context_length(vh_env):
    with ScriptedServer([Reply(text=SILENT)]) as srv:
        wide = make_agent("direct-vlm", model=f"openai:m@{srv.url}")
        play(vh_env, wide, 4)
        narrow = make_agent("direct-vlm", model=f"openai:m@{srv.url}", context_length=1200,
                            max_tokens=64)
        play(vh_env, narrow, 4)
    n = len(wide.trace)
    sizes = [len(user_text(b)) + len(b["messages"][0]["content"]) for b in srv.requests]
    wide_max, narrow_sizes = max(sizes[:n]), sizes[n:]
    assert narrow.usage.prompts_fitted > 0
    assert max(narrow_sizes) < wide_max
    # 1200 tokens at 2.5 characters each, minus the answer's 64 tokens
    assert all(s <= (1200 - 64) * 2.5 for s in narrow_sizes)


def test_trace_and_sources_per_call(vh_env):
    with ScriptedServer(helpful_script) as srv:
        agent = make_agent("direct-vlm", model=f"openai:m@{srv.url}")
        record, steps = play(vh_env, agent, 0)
    assert len(agent.trace) == agent.usage.model_calls
    outcomes = [t["outcome"] for t in agent.trace]
    assert outcomes.count("parse_failure") == agent.usage.parse_failures > 0
    assert agent.usage.sources["failed"] == agent.usage.parse_failures
    assert agent.usage.sources["model"] == outcomes.count("ok")
    assert [t["window"] for t in agent.trace] == sorted(t["window"] for t in agent.trace)


def test_server_errors_are_never_silent(tmp_path, capsys):
    """HTTP 404 on every call: one warning line with count and message, counted in
    summary.json, a closing note, the row marked, and exit 4 (with or without --strict)."""
    from mindhelper_env.cli import main

    body = json.dumps({"error": {"message": "The model `nope` does not exist"}}).encode()
    with ScriptedServer([Reply(status=404, raw=body)]) as srv:
        args = ["evaluate", "--suite", "vh-dev-v2", "--agents", "direct-vlm", "--limit", "2",
                "--model", f"openai:nope@{srv.url}", "--no-plots", "--no-progress",
                "--out", str(tmp_path / "run")]
        assert main(args) == 4
        captured = capsys.readouterr()
        err = captured.err
        assert main([*args, "--strict", "--out", str(tmp_path / "strict")]) == 4
    lines = [x for x in err.splitlines() if "failed with http_404" in x]
    assert len(lines) == 1 and "does not exist" in lines[0]
    closing = [x for x in err.splitlines() if "most of its model calls gave nothing" in x]
    assert len(closing) == 1 and "answer_format" not in closing[0]  # not a format problem
    assert "direct-vlm !" in captured.out and "NOT THIS AGENT'S SCORE" in captured.out
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    m = summary["models"]["direct-vlm"]
    assert m["failed_calls"] == m["calls"] > 0
    assert m["errors"]["http_404"]["count"] == m["calls"]
    assert m["decisions_by_source"] == {"failed": m["calls"]}


def test_a_model_whose_answers_mostly_do_not_parse_is_flagged(tmp_path, capsys):
    """Unparseable answers fall to silence, which scores PSR 100: a row most of whose model
    calls gave nothing is marked, warned about with the formats a small model needs, and
    exits 4, as an agent whose act raises; one failed call in many is only --strict's."""
    from mindhelper_env.cli import main

    prose = Reply(text="I think everything is fine, no need to act.")
    with ScriptedServer([prose]) as srv:
        args = ["evaluate", "--suite", "vh-dev-v5", "--agents", "direct-vlm", "--limit", "2",
                "--model", f"openai:small@{srv.url}", "--no-plots", "--no-progress",
                "--format", "csv", "--out", str(tmp_path / "run")]
        assert main(args) == 4
    captured = capsys.readouterr()
    m = json.loads((tmp_path / "run" / "summary.json").read_text())["models"]["direct-vlm"]
    assert m["parse_failures"] == m["calls"] > 0 and m["failed_calls"] == 0
    closing = [x for x in captured.err.splitlines() if "gave nothing" in x]
    assert len(closing) == 1 and f"{m['calls']} of {m['calls']}" in closing[0]
    assert "answer_format=line" in closing[0] and "formats=compact" in closing[0]
    header, row = captured.out.splitlines()[:2]
    assert header.split(",")[-1] == "flag" and row.split(",")[-1] == "model_failed"

    # a model that answers (one failed call among many): no mark; --strict exits 4
    body = json.dumps({"error": {"message": "overloaded"}}).encode()
    codes = {}
    for extra in ([], ["--strict"]):
        with ScriptedServer([Reply(status=500, raw=body), Reply()]) as srv:
            codes[bool(extra)] = main([
                "evaluate", "--suite", "vh-dev-v5", "--agents", "direct-vlm", "--limit", "2",
                "--model", f"openai:small@{srv.url}", "--agent", "direct-vlm:max_retries=0",
                "--no-plots", "--no-progress", "--format", "csv", *extra,
                "--out", str(tmp_path / f"answers{len(extra)}")])
        if not extra:
            assert "flag" not in capsys.readouterr().out.splitlines()[0]
    assert codes == {False: 0, True: 4}


def test_efficiency_table_has_the_reduction(tmp_path, capsys):
    from mindhelper_env.cli import main
    from mindhelper_env.models.report import efficiency_rows

    metrics = {"direct-vlm": {"efficiency": {"model_calls_per_episode": 8,
                                             "tokens_per_episode": 1000.0}},
               "mindclaw": {"efficiency": {"model_calls_per_episode": 1,
                                           "tokens_per_episode": 150.0}},
               "oracle": {"efficiency": {"model_calls_per_episode": 0}}}
    rows = {r["agent"]: r for r in efficiency_rows(metrics)}
    assert set(rows) == {"direct-vlm", "mindclaw"}
    assert rows["mindclaw"]["reduction_vs_baseline"] == pytest.approx(85.0)
    assert rows["direct-vlm"]["reduction_vs_baseline"] is None
    with ScriptedServer(helpful_script) as srv:
        # mindclaw's calls get direct-vlm's answers, which it cannot parse: its row is
        # marked and the run exits 4
        assert main(["evaluate", "--suite", "vh-dev-v2", "--agents", "direct-vlm,mindclaw",
                     "--limit", "3", "--model", f"openai:m@{srv.url}", "--no-plots",
                     "--no-progress", "--out", str(tmp_path / "run")]) == 4
    out = capsys.readouterr().out
    assert "mindclaw !" in out and "direct-vlm !" not in out
    assert "vs direct-vlm" in out and "%" in out.split("efficiency", 1)[1]


def test_shipped_real_model_cassette_regenerates_the_table(tmp_path, capsys):
    """tests/data holds a recorded run of the real small model (regenerated by the command
    in its .meta.json); replaying it needs no server and answers every request."""
    from pathlib import Path

    from mindhelper_env.cli import main

    data = Path(__file__).parent / "data"
    cassette = data / "smollm2-vh-dev.jsonl"
    meta = json.loads((data / "smollm2-vh-dev.meta.json").read_text())
    options = next(iter(meta["agent_options"].values()))
    args = ["evaluate", "--suite", meta["suite"], "--agents", ",".join(meta["agents"]),
            "--limit", str(meta["limit"]), "--replay", str(cassette), "--no-timing",
            "--no-plots", "--no-progress", "--strict", "--out", str(tmp_path / "run")]
    for agent, opts in options.items():
        args += ["--agent", f"{agent}:" + ",".join(f"{k}={v}" for k, v in opts.items())]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "efficiency" in out and "vs direct-vlm" in out
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    for agent in meta["agents"]:
        m = summary["models"][agent]
        assert m["calls"] > 0 and m["failed_calls"] == 0  # no replay miss
        assert m["parse_failures"] <= 0.1 * m["calls"]
    # a second replay writes the same records, byte for byte
    again = [a if a != str(tmp_path / "run") else str(tmp_path / "again") for a in args]
    assert main(again) == 0
    capsys.readouterr()
    for agent in meta["agents"]:
        first = (tmp_path / "run" / f"{agent}.jsonl").read_bytes()
        assert first and first == (tmp_path / "again" / f"{agent}.jsonl").read_bytes()


def test_max_calls_caps_the_calls_of_an_episode(vh_env):
    with ScriptedServer([Reply(text="none")] * 40) as srv:
        agent = make_agent("direct-vlm", model=f"openai:m@{srv.url}", answer_format="line",
                           max_calls=2)
        record, steps = play(vh_env, agent, 3)
        assert steps > 3 and len(srv.requests) == 2
        assert agent.usage.model_calls == 2
        assert agent.usage.sources == {"model": 2, "capped": steps - 2}
        play(vh_env, agent, 4)  # the cap is per episode
        assert len(srv.requests) == 4
    with pytest.raises(ValueError, match="max_calls"):
        make_agent("direct-vlm", model="openai:m@http://127.0.0.1:9/v1", max_calls=0)
