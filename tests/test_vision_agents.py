"""Agents that watch (issue 51): direct-vlm and MindClaw(observe=vlm) on the vision track
(``obs_mode="rgb"``: frames only) against the scripted OpenAI-compatible server, image-token
accounting, ``evaluate --obs rgb`` with its provenance, cassettes, the refusal to mix tracks,
and the report's frames."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from fake_openai_server import Reply, ScriptedServer, image_parts, need

from mindhelper_env.agents import make_agent
from mindhelper_env.agents.frames import contact_sheet, frame_parts, window_frames
from mindhelper_env.agents.mindclaw.vision import answer_schema
from mindhelper_env.cli.main import main
from mindhelper_env.evaluation.episode import run_episode
from mindhelper_env.models.images import check_image_rule, image_tokens
from mindhelper_env.schemas import schema_errors

need("openai")

SILENT = '{"intervene": false, "program": []}'
SUITE = "vh-dev-v5"
FRAME = 64  # px: small frames keep the tests fast


@pytest.fixture(scope="module")
def rgb_env():
    env = gym.make("MindHelper-VirtualHome-v3", obs_mode="rgb", frame_size=FRAME)
    yield env
    env.close()


def play(env, agent, seed):
    obs, info = env.reset(seed=seed)
    agent.reset(seed=seed)
    while True:
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        if term or trunc:
            return info["episode_record"]


def user_text(body):
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(p["text"] for p in content if p.get("type") == "text")


def records(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


# ------------------------------------------------------------------------- image tokens


@pytest.mark.parametrize(("rule", "h", "w", "tokens"), [
    ("openai", 64, 64, 255), ("openai", 256, 256, 255), ("openai", 512, 512, 255),
    ("openai", 768, 768, 765), ("openai", 1024, 1024, 765), ("openai", 4096, 2048, 1105),
    ("openai-high", 130, 130, 255), ("openai-low", 2048, 2048, 85),
    ("patches:28", 256, 256, 100), ("patches:14", 64, 64, 25), ("fixed:300", 1, 1, 300),
    (42, 999, 999, 42),
])
def test_image_token_rules(rule, h, w, tokens):
    assert image_tokens(h, w, rule) == tokens


@pytest.mark.parametrize("bad", ["tiles", "patches:0", "patches:x", "fixed:-1", 1.5, True])
def test_bad_image_rules_name_the_choices(bad):
    with pytest.raises(ValueError, match="openai, openai-high, openai-low"):
        check_image_rule(bad)


def test_a_bad_image_rule_is_refused_when_the_client_is_built():
    with pytest.raises(ValueError, match="image_tokens"):
        make_agent("direct-vlm", model="openai:m@http://127.0.0.1:9/v1", image_tokens="tile")


def test_contact_sheet_tiles_the_frames_row_major():
    frames = [np.full((4, 5, 3), k, np.uint8) for k in range(1, 6)]
    sheet = contact_sheet(frames, gap=2)
    assert sheet.shape == (2 * 4 + 2, 3 * 5 + 2 * 2, 3)  # 3 columns, 2 rows
    assert sheet[0, 0, 0] == 1 and sheet[0, 7, 0] == 2 and sheet[0, 14, 0] == 3
    assert sheet[6, 0, 0] == 4 and sheet[6, 7, 0] == 5
    assert (sheet[6:10, 14:] == 255).all() and (sheet[4:6] == 255).all()  # empty cell, gap
    parts, intro = frame_parts(np.stack(frames), "sheet")
    assert len(parts) == 1 and "5 ticks" in intro and "3 per row" in intro
    with pytest.raises(ValueError, match="uint8"):
        window_frames(np.zeros((3, 4, 4, 3), np.float32))


# -------------------------------------------------------------------------- direct-vlm


@pytest.mark.parametrize(("frames", "per_call"), [("all", 3), ("sheet", 1)])
def test_direct_vlm_sends_frames_only_and_counts_image_tokens(rgb_env, frames, per_call):
    with ScriptedServer([Reply(text=SILENT)]) as srv:
        agent = make_agent("direct-vlm", model=f"openai:test-vlm@{srv.url}", api_key="k",
                           frames=frames)
        record = run_episode(rgb_env, agent, seed=5, agent_name="direct-vlm", timing=False)
        calls = len(srv.requests)
        assert calls == agent.usage.model_calls > 0
        for body in srv.requests:
            urls = image_parts(body)
            assert len(urls) == per_call
            assert all(u.startswith("data:image/png;base64,") for u in urls)
            text = user_text(body)
            # the task, the ids and the robot's own history; no narration, no events
            assert "What you did so far:" in text and "You have not intervened yet." in text
            assert "People (use <character> (id)):" in text and "Furniture:" in text
            assert "What you observed so far" not in text and "[t=" not in text
            assert "pictures" in body["messages"][0]["content"]
    per_image = image_tokens(FRAME, FRAME) if frames == "all" else \
        image_tokens(2 * FRAME + 2, 2 * FRAME + 2)
    assert agent.usage.images == per_call * calls
    assert agent.usage.image_tokens == per_image * per_call * calls
    assert agent.usage.prompts == {"direct-vlm": "direct-vlm-rgb.json-2"}
    assert record["usage"]["images"] == per_call * calls
    assert record["usage"]["image_tokens"] == agent.usage.image_tokens


def test_direct_vlm_history_lists_the_robots_own_program(rgb_env):
    def script(body, n):
        if n == 2:
            person = re.search(r"^- \w+ \((\d+)\), ", user_text(body), re.M).group(1)
            return Reply(text=json.dumps({"intervene": True,
                                          "program": [f"[walk] <character> ({person})"]}))
        return Reply(text=SILENT)

    with ScriptedServer(script) as srv:
        agent = make_agent("direct-vlm", model=f"openai:test-vlm@{srv.url}", api_key="k",
                           max_calls=4)
        obs, info = rgb_env.reset(seed=3)
        agent.reset(seed=3)
        actions = []
        for _ in range(4):
            actions.append(agent.act(obs, info))
            obs, *_, info = rgb_env.step(actions[-1])
        assert actions[2].startswith("[walk] <character>") and actions[3] == "none"
        assert len(srv.requests) == 3  # one intervention per episode: no call after it
        assert "you issued [walk] <character>" in agent.history(info)


def test_direct_vlm_without_usage_estimates_with_the_image_rule(rgb_env):
    with ScriptedServer([Reply(text=SILENT, usage=None)]) as srv:
        agent = make_agent("direct-vlm", model=f"openai:test-vlm@{srv.url}", api_key="k",
                           image_tokens="patches:28", max_calls=1)
        obs, info = rgb_env.reset(seed=0)
        agent.reset(seed=0)
        agent.act(obs, info)
    assert agent.usage.tokens_estimated
    assert agent.usage.image_tokens == 3 * image_tokens(FRAME, FRAME, "patches:28") == 27
    chars = sum(len(m["role"]) + len(m["content"] if isinstance(m["content"], str)
                                     else m["content"][0]) for m in agent.last_prompt)
    assert agent.usage.prompt_tokens == -(-chars // 4) + 27


def test_the_dry_estimate_counts_images_by_the_rule(rgb_env):
    agent = make_agent("direct-vlm", model="dry:openai:m", image_tokens="fixed:1000",
                       max_calls=2)
    play(rgb_env, agent, 1)
    assert agent.usage.model_calls == 2 and agent.usage.image_tokens == 2 * 3 * 1000
    assert agent.usage.prompt_tokens > 6000


# ----------------------------------------------------------------------- MindClaw eyes


def perfect_answer(obs, info):
    """What perfect eyes report for a window: the text track's events and snapshot, in the
    observation answer's format."""
    c, robot = info["candidates"], info["robot"]
    people = [{"id": a["id"], "room": a["room"], "holding": list(a["holding"])}
              for a in c["actors"]]
    people.append({"id": robot["id"], "room": robot["room"],
                   "holding": list(robot.get("holding") or [])})
    return {"events": [{"tick": e["tick"], "actor": e["actor"], "verb": e["verb"],
                        "args": [a["id"] for a in e["args"]], "room": e["room"]}
                       for e in json.loads(obs["events"])],
            "people": people,
            "objects": [{"id": o["id"], "at": o["location"]} for o in c["objects"]],
            "open": [loc["id"] for loc in c["locations"] if loc.get("open") is True],
            "closed": [loc["id"] for loc in c["locations"] if loc.get("open") is False],
            "doors_open": [d["id"] for d in info.get("doors") or [] if d.get("open")]}


# sampled -v3 (mh-gen-3.2) episodes: seeds 1 and 9 need help and MindClaw acts; 2 is silent
@pytest.mark.parametrize(("seed", "acts"), [(1, True), (2, False), (9, True)])
def test_mindclaw_with_perfect_model_eyes_acts_as_mindclaw_on_text(rgb_env, seed, acts):
    """The Observation module from pixels feeds the belief table, Trigger and skills exactly
    as the text track does: a model that reports each window perfectly (the scripted server
    answers the text track's events and snapshot) gives the text agent's actions."""
    text_env = gym.make("MindHelper-VirtualHome-v3")
    ref = make_agent("mindclaw", model="symbolic")
    obs, info = text_env.reset(seed=seed)
    ref.reset(seed=seed)
    answers = []
    while True:
        answers.append(Reply(text=json.dumps(perfect_answer(obs, info))))
        obs, _, term, trunc, info = text_env.step(ref.act(obs, info))
        if term or trunc:
            break
    text_env.close()
    want = info["episode_record"]
    with ScriptedServer(answers) as srv:
        agent = make_agent("mindclaw-vlm", model=f"openai:eyes@{srv.url}", api_key="k",
                           backends={"reasoning": "symbolic"}, structured="json_schema")
        got = play(rgb_env, agent, seed)
        body = srv.requests[1]
    assert got["actions"] == want["actions"] and got["executed"] == want["executed"]
    assert any(a["program"] != "none" for a in got["actions"]) == acts
    assert agent.usage.model_calls == len(answers) and agent.usage.parse_failures == 0
    assert agent.usage.sources["model"] == len(answers)
    assert agent.usage.images == 3 * len(answers)
    assert agent.usage.prompts["mindclaw.observation"] == "mindclaw-observation-rgb.json-2"
    # the schema went with the request, and the frames only (no narration)
    fmt = body["response_format"]["json_schema"]
    assert fmt["name"] == "window_observation" and "events" in fmt["schema"]["properties"]
    assert len(image_parts(body)) == 3 and "[t=" not in user_text(body)
    assert agent.trace[1]["calls"][0]["module"] == "observation"


def test_mindclaw_eyes_that_answer_badly_see_nothing_and_say_so(rgb_env):
    bad = [Reply(text="I see a kitchen."),
           Reply(text='{"events": [], "people": [], "objects": [], "open": [], '
                      '"closed": [], "doors_open": [9999]}'),
           Reply(status=500)]
    with ScriptedServer(lambda body, n: bad[n % 3]) as srv:
        agent = make_agent("mindclaw-vlm", model=f"openai:eyes@{srv.url}", api_key="k",
                           max_retries=0, backends={"reasoning": "symbolic"})
        record = play(rgb_env, agent, 0)
    calls = agent.usage.model_calls
    assert calls == len(agent.trace) > 20  # one call a window
    assert agent.usage.parse_failures + agent.usage.fallbacks == calls
    assert agent.usage.fallbacks == calls // 3
    assert agent.usage.sources["failed"] == calls
    assert record["actions"] == []  # it saw nothing, so it never acted
    outcomes = {c["outcome"] for w in agent.trace for c in w["calls"]}
    assert outcomes == {"parse_failure", "call_failed"}


def test_the_answer_schema_holds_the_episode_ids(rgb_env):
    _, info = rgb_env.reset(seed=5)
    schema = answer_schema(info, 3, 5)
    event = schema["properties"]["events"]["items"]["properties"]
    assert event["tick"] == {"type": "integer", "minimum": 3, "maximum": 5}
    actors = {a["id"] for a in info["candidates"]["actors"]} | {info["robot"]["id"]}
    assert set(event["actor"]["enum"]) == actors
    assert set(schema["properties"]["doors_open"]["items"]["enum"]) == \
        {d["id"] for d in info["candidates"]["doors"]}


def test_mindclaw_needs_eyes_on_the_vision_track(rgb_env):
    agent = make_agent("mindclaw", model="symbolic")
    obs, info = rgb_env.reset(seed=0)
    with pytest.raises(ValueError, match="observe='vlm'"):
        agent.act(obs, info)
    with pytest.raises(ValueError, match="observe must be one of"):
        make_agent("mindclaw", observe="eyes")
    with pytest.raises(ValueError, match="needs a model"):
        make_agent("mindclaw-vlm", model="symbolic")


# ------------------------------------------------------------- evaluate --obs rgb, tracks


def _silent_then_help(body, n):
    text = user_text(body)
    m = re.search(r"Window (\d+), tick (\d+)\.", text)
    if m and int(m.group(2)) >= 9:
        person = re.search(r"^- \w+ \((\d+)\), ", text, re.M).group(1)
        return Reply(text=json.dumps({"intervene": True,
                                      "program": [f"[walk] <character> ({person})"]}))
    return Reply(text=SILENT)


@pytest.fixture(scope="module")
def rgb_run(tmp_path_factory):
    """``evaluate --obs rgb`` of direct-vlm against the scripted server, recorded."""
    base = tmp_path_factory.mktemp("rgb")
    with ScriptedServer(_silent_then_help) as srv:
        code = main(["evaluate", "--suite", SUITE, "--agents", "direct-vlm", "--limit", "3",
                     "--obs", "rgb", "--frame-size", str(FRAME), "--no-timing", "--no-plots",
                     "--no-progress", "--model", f"openai:test-vlm@{srv.url}",
                     "--record", str(base / "cassette.jsonl"), "--out", str(base / "run"),
                     "--format", "json"])
    assert code == 0
    return base


def test_evaluate_obs_rgb_records_the_track_everywhere(rgb_run):
    run = json.loads((rgb_run / "run" / "run.json").read_text())
    assert run["env_kwargs"] == {"obs_mode": "rgb", "frame_size": FRAME}
    assert run["provenance"]["obs"] == "rgb"
    assert schema_errors("run", run) == []
    recs = records(rgb_run / "run" / "direct-vlm.jsonl")
    assert len(recs) == 3
    for rec in recs:
        assert rec["provenance"]["obs"] == "rgb"
        assert schema_errors("result", rec) == []
        assert rec["usage"]["images"] == 3 * rec["usage"]["model_calls"]
        assert rec["usage"]["image_tokens"] == rec["usage"]["images"] * 255
    summary = json.loads((rgb_run / "run" / "summary.json").read_text())
    assert summary["provenance"]["obs"] == "rgb"
    assert summary["models"]["direct-vlm"]["images"] == sum(r["usage"]["images"]
                                                            for r in recs)


def test_an_rgb_cassette_replays_bit_identically(rgb_run, tmp_path):
    code = main(["evaluate", "--suite", SUITE, "--agents", "direct-vlm", "--limit", "3",
                 "--obs", "rgb", "--frame-size", str(FRAME), "--no-timing", "--no-plots",
                 "--no-progress", "--replay", str(rgb_run / "cassette.jsonl"),
                 "--out", str(tmp_path / "again"), "--format", "json"])
    assert code == 0
    assert (tmp_path / "again" / "direct-vlm.jsonl").read_bytes() == \
        (rgb_run / "run" / "direct-vlm.jsonl").read_bytes()


def test_score_and_report_refuse_to_mix_the_tracks(rgb_run, tmp_path, capsys):
    text = tmp_path / "text"
    assert main(["evaluate", "--suite", SUITE, "--agents", "silent", "--limit", "3",
                 "--no-timing", "--no-plots", "--no-progress", "--out", str(text),
                 "--format", "json"]) == 0
    capsys.readouterr()
    rgb = rgb_run / "run"
    # each track alone scores
    assert main(["score", str(rgb / "direct-vlm.jsonl"), "--suite", SUITE, "--json"]) == 0
    capsys.readouterr()
    rc = main(["score", str(text / "silent.jsonl"), str(rgb / "direct-vlm.jsonl"),
               "--suite", SUITE, "--json"])
    err = capsys.readouterr().err
    assert rc == 2 and "never mixed" in err and "rgb track" in err and "text track" in err
    pytest.importorskip("jinja2")
    rc = main(["report", str(text), str(rgb), "--out", str(tmp_path / "report")])
    err = capsys.readouterr().err
    assert rc == 2 and "never mixed" in err


def test_resume_refuses_records_of_the_other_track(rgb_run, tmp_path, capsys):
    out = tmp_path / "run"
    shutil.copytree(rgb_run / "run", out)
    # the same folder resumed on the text track: run.json differs (env_kwargs)
    rc = main(["evaluate", "--suite", SUITE, "--agents", "direct-vlm", "--limit", "3",
               "--no-timing", "--no-plots", "--no-progress", "--resume",
               "--replay", str(rgb_run / "cassette.jsonl"), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "env_kwargs" in err
    # a text record slipped into the rgb run's file is refused by its stamp
    from mindhelper_env.evaluation.provenance import check_record, record_checksum

    rec = records(out / "direct-vlm.jsonl")[0]
    del rec["provenance"]["obs"]
    rec["provenance"]["checksum"] = record_checksum(rec)
    problem = check_record(rec, generator=rec["provenance"]["generator"], suite_digest=None,
                           reference=None, track="rgb")
    assert problem is not None and "text track" in problem


def test_the_report_shows_the_frames_the_agent_saw(rgb_run, tmp_path):
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    from mindhelper_env.report import write_report

    write_report(tmp_path / "report", [rgb_run / "run"], workers=1, resamples=50)
    pages = sorted((tmp_path / "report" / "episodes").glob("*/*.html"))
    assert len(pages) == 3
    html = pages[0].read_text()
    sheets = re.findall(r'<img class="frames"[^>]* src="([^"]+)"', html)
    assert sheets and "No narration" not in html
    from PIL import Image

    first = Image.open(pages[0].parent / sheets[0])
    # one window: 3 frames side by side, 2 px apart, at the run's frame size
    assert first.size == (3 * FRAME + 4, FRAME)
    # the sheets are the frames the agent saw: re-rendered deterministically from the suite
    env = gym.make("MindHelper-VirtualHome-v3", obs_mode="rgb", frame_size=FRAME)
    rec = records(rgb_run / "run" / "direct-vlm.jsonl")[0]
    obs, _ = env.reset(seed=0 + rec["index"], options={"suite": SUITE, "index": rec["index"]})
    env.close()
    page = tmp_path / "report" / "episodes" / "a0" / f"{rec['episode_id']}.html"
    reset_sheet = re.search(r'src="([^"]*reset\.png)"', page.read_text()).group(1)
    pixels = np.asarray(Image.open(page.parent / reset_sheet).convert("RGB"))
    assert np.array_equal(pixels[:, :FRAME], obs[0])


# ------------------------------------------------- perfect perception beside the model's eyes

BIG = 512  # px: the pixel parser needs frames that hold the episode's layout unscaled


@pytest.mark.parametrize("seed", [1, 9])  # sampled -v3 episodes in which MindClaw acts
def test_mindclaw_pixels_acts_as_mindclaw_on_text(seed):
    env = gym.make("MindHelper-VirtualHome-v3", obs_mode="rgb", frame_size=BIG)
    text_env = gym.make("MindHelper-VirtualHome-v3")
    try:
        got = run_episode(env, make_agent("mindclaw-pixels", model="symbolic"), seed=seed,
                          agent_name="mindclaw", timing=False)
        want = run_episode(text_env, make_agent("mindclaw", model="symbolic"), seed=seed,
                           agent_name="mindclaw", timing=False)
    finally:
        env.close()
        text_env.close()
    assert got["actions"] and got["actions"] == want["actions"]
    assert got["executed"] == want["executed"] and got["usage"]["agent_errors"] == 0


def test_one_run_reports_model_eyes_beside_perfect_perception(tmp_path, capsys):
    """``--agents mindclaw-vlm,mindclaw-pixels --obs rgb --model M``: two rows of one run with
    the same model for Mental Reasoning, perception by the model (here one that reports an
    empty home, and answers every question unusably) or by the reference parser."""
    empty = json.dumps({"events": [], "people": [], "objects": [], "open": [], "closed": [],
                        "doors_open": []})
    with ScriptedServer([Reply(text=empty)]) as srv:
        code = main(["evaluate", "--suite", SUITE, "--agents", "mindclaw-vlm,mindclaw-pixels",
                     "--limit", "2", "--obs", "rgb", "--frame-size", str(BIG), "--no-timing",
                     "--no-plots", "--no-progress", "--model", f"openai:eyes@{srv.url}",
                     "--out", str(tmp_path / "run"), "--format", "json"])
        requests = list(srv.requests)
        table = json.loads(capsys.readouterr().out)
        text = tmp_path / "text"  # MindClaw on the text track with the same model
        # exit 4: the scripted model answers every reasoning question unusably, so the
        # mindclaw-pixels row (like MindClaw on text) is flagged as measuring the fallback
        assert main(["evaluate", "--suite", SUITE, "--agents", "mindclaw", "--limit", "2",
                     "--no-timing", "--no-plots", "--no-progress", "--out", str(text),
                     "--model", f"openai:eyes@{srv.url}", "--format", "json"]) == 4
    assert code == 4
    assert set(table) == {"mindclaw-vlm", "mindclaw-pixels"}
    vlm = records(tmp_path / "run" / "mindclaw-vlm.jsonl")
    pixels = records(tmp_path / "run" / "mindclaw-pixels.jsonl")
    assert [r["provenance"]["obs"] for r in vlm + pixels] == ["rgb"] * 4
    # the model's eyes: one observation call a window with its frames; it saw nothing, so
    # no cue reached Mental Reasoning
    assert all(r["usage"]["images"] == 3 * r["usage"]["model_calls"] for r in vlm)
    assert all(r["usage"]["prompts"] == {"mindclaw.observation":
                                         "mindclaw-observation-rgb.json-2"} for r in vlm)
    assert all(r["usage"]["sources"] == {"model": r["usage"]["model_calls"]} for r in vlm)
    # perfect perception: no frames sent, the model asked only for reasoning, as on text
    assert all("images" not in r["usage"] for r in pixels)
    assert sum(r["usage"]["model_calls"] for r in vlm + pixels) == len(requests)
    text_recs = records(text / "mindclaw.jsonl")
    for a, b in zip(pixels, text_recs, strict=True):
        assert a["actions"] == b["actions"]
        assert {k: a["usage"][k] for k in ("model_calls", "sources", "parse_failures")} == \
            {k: b["usage"][k] for k in ("model_calls", "sources", "parse_failures")}
    assert sum(r["usage"]["model_calls"] for r in pixels) > 0


def test_a_mindclaw_vlm_cassette_replays_bit_identically(tmp_path):
    seen = json.dumps({"events": [], "people": [], "objects": [], "open": [], "closed": [],
                       "doors_open": []})
    common = ["evaluate", "--suite", SUITE, "--agents", "mindclaw-vlm", "--limit", "1",
              "--obs", "rgb", "--frame-size", str(FRAME), "--no-timing", "--no-plots",
              "--no-progress", "--format", "json"]
    # exit 4 both times: all but the first answer do not parse, so the row is flagged
    with ScriptedServer([Reply(text=seen), Reply(text="not json")]) as srv:
        assert main([*common, "--model", f"openai:eyes@{srv.url}", "--out",
                     str(tmp_path / "a"), "--record", str(tmp_path / "c.jsonl")]) == 4
    assert main([*common, "--replay", str(tmp_path / "c.jsonl"), "--out",
                 str(tmp_path / "b")]) == 4
    first = (tmp_path / "a" / "mindclaw-vlm.jsonl").read_bytes()
    assert first == (tmp_path / "b" / "mindclaw-vlm.jsonl").read_bytes()
    [rec] = records(tmp_path / "a" / "mindclaw-vlm.jsonl")
    assert rec["usage"]["parse_failures"] == rec["usage"]["model_calls"] - 1 > 0
    assert rec["usage"]["images"] == 3 * rec["usage"]["model_calls"]


def test_a_pixel_fed_agent_off_the_vision_track_is_refused_before_out(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["evaluate", "--suite", SUITE, "--agents", "belief-tracker", "--agent",
                 "belief-tracker:observe=pixels", "--limit", "1", "--no-progress",
                 "--out", str(out)])
    assert code == 2 and not out.exists()
    assert "--obs rgb" in capsys.readouterr().err
