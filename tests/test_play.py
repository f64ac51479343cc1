"""`mindhelper play` as a library: a scripted person plays the robot; the record is scored."""

from __future__ import annotations

import json
import re

from mindhelper_env.agents.human import HumanAgent, candidate_words
from mindhelper_env.cli.play_session import play
from mindhelper_env.metrics import compute_metrics
from mindhelper_env.scenarios import suites as S

DEV = "vh-dev-v2"


def _first(help_needed: bool) -> int:
    return next(i for i in range(100) if S.suite_episode(DEV, i)["reference"][
        "needs_intervention"] == help_needed)


class Person:
    """Types commands, then the reference program once the onset tick has been shown."""

    def __init__(self, program: list[str], onset: int | None) -> None:
        self.program = "; ".join(program)
        self.onset = onset
        self.tick = 0
        self.said: list[str] = []
        self.first = ["?", "help", "[fly] <moon> (1)"]
        self.done = False

    def output(self, text: str) -> None:
        self.said.append(text)
        m = re.match(r"--- tick (\d+) ---", text)
        if m:
            self.tick = int(m.group(1))

    def input(self, prompt: str) -> str:
        if self.first:
            return self.first.pop(0)
        if self.onset is not None and not self.done and self.tick >= self.onset:
            self.done = True
            return self.program
        return ""


def test_person_helps_in_time_and_is_scored(tmp_path):
    idx = _first(True)
    ref = S.suite_episode(DEV, idx)["reference"]
    person = Person(ref["reference_actions"], ref["window"]["onset_tick"])
    result = play(suite=DEV, index=idx, out_dir=tmp_path, input_fn=person.input,
                  output_fn=person.output)
    assert result["outcome"]["precise"] and result["outcome"]["success"]
    assert "in time" in result["verdict"]
    text = "\n".join(person.said)
    assert "people:" in text  # the ? command showed what is in view
    assert "Verbs:" in text  # help
    assert "not understood" in text  # the bad line was refused, not sent
    rec = json.loads((tmp_path / "human.jsonl").read_text().splitlines()[0])
    assert rec["agent"] == "human" and rec["usage"]["decisions"] >= 1
    m = compute_metrics([rec], S.suite_references(DEV))
    assert m["PHR"] == 1.0 and m["TA"] == 1.0


def test_silent_person_on_a_silent_episode_and_end_of_input(tmp_path):
    idx = _first(False)

    def no_more(prompt: str) -> str:
        raise EOFError

    result = play(suite=DEV, index=idx, out_dir=tmp_path, input_fn=no_more,
                  output_fn=lambda s: None)
    assert result["outcome"]["silent"] and "rightly" in result["verdict"]
    assert len((tmp_path / "human.jsonl").read_text().splitlines()) == 1


def test_completion_words_cover_what_is_in_view():
    info = {"candidates": {"actors": [{"id": 5, "name": "A", "kind": "adult", "room": 1,
                                       "holding": []}],
                           "objects": [{"id": 31, "class": "apple", "location": 12, "room": 1}],
                           "locations": [{"id": 12, "class": "fridge", "room": 1,
                                          "open": False}]}}
    words = candidate_words(info)
    assert "[give]" in words and "<character> (5)" in words
    assert "<apple> (31)" in words and "<fridge> (12)" in words
    agent = HumanAgent(input_fn=lambda p: "quit", output_fn=lambda s: None)
    agent.reset()
    assert agent.act({"narration": "x"}, {"tick": 0}) == "none"
    assert agent.act({"narration": "x"}, {"tick": 3}) == "none"  # quit holds


def test_playing_an_episode_again_replaces_its_record_and_says_where(tmp_path, capsys):
    from mindhelper_env.cli.main import main

    silent, helped = _first(False), _first(True)
    said: list[str] = []
    for idx in (silent, helped, silent):  # the silent one twice
        result = play(suite=DEV, index=idx, out_dir=tmp_path, input_fn=lambda p: "quit",
                      output_fn=said.append)
    assert result["replaced"] and result["path"] == tmp_path / "human.jsonl"
    records = [json.loads(x) for x in (tmp_path / "human.jsonl").read_text().splitlines()]
    assert sorted(r["index"] for r in records) == sorted([silent, helped])
    where = [s for s in said if s.startswith("Recorded in ")]
    assert len(where) == 3 and str(tmp_path / "human.jsonl") in where[0]
    assert "added; 1 episode(s)" in where[0] and "added; 2 episode(s)" in where[1]
    assert "replaced your earlier record of this episode; 2 episode(s)" in where[2]
    capsys.readouterr()
    assert main(["score", str(tmp_path / "human.jsonl"), "--json"]) == 0  # no duplicate
    assert "human" in json.loads(capsys.readouterr().out)


def test_ctrl_c_stops_without_recording(tmp_path, monkeypatch, capsys):
    import builtins

    import pytest

    from mindhelper_env.cli.main import main

    def interrupt(prompt: str = "") -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        play(suite=DEV, index=0, out_dir=tmp_path, input_fn=interrupt, output_fn=lambda s: None)
    assert not (tmp_path / "human.jsonl").exists()
    # at the command line: one line, exit 130, the file untouched
    play(suite=DEV, index=1, out_dir=tmp_path, input_fn=lambda p: "quit",
         output_fn=lambda s: None)
    before = (tmp_path / "human.jsonl").read_bytes()
    monkeypatch.setattr(builtins, "input", interrupt)
    capsys.readouterr()
    assert main(["play", "--suite", DEV, "--index", "2", "--out", str(tmp_path)]) == 130
    err = capsys.readouterr().err
    assert "the episode was not recorded" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "human.jsonl").read_bytes() == before


def test_a_file_of_another_suite_is_refused_before_the_episode(tmp_path, capsys):
    from mindhelper_env.cli.main import main

    play(suite=DEV, index=0, out_dir=tmp_path, input_fn=lambda p: "quit",
         output_fn=lambda s: None)
    capsys.readouterr()
    assert main(["play", "--suite", "vh-dev-v4", "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "holds records of vh-dev-v2, not vh-dev-v4" in captured.err
    assert "You are the robot" not in captured.out  # refused before the banner


def test_play_records_carry_evaluates_provenance_and_score_reads_them_cleanly(tmp_path,
                                                                               capsys):
    """A played record is stamped like an ``evaluate`` record: ``score`` checks it (no
    "written before 0.4" note) and refuses it once edited."""
    from mindhelper_env.cli.main import main
    from mindhelper_env.evaluation.provenance import (
        STAMP_KEYS,
        check_record,
        record_checksum,
        suite_generator,
    )
    from mindhelper_env.scenarios import releases

    idx = _first(True)
    play(suite=DEV, index=idx, out_dir=tmp_path, input_fn=lambda p: "quit",
         output_fn=lambda s: None)
    path = tmp_path / "human.jsonl"
    rec = json.loads(path.read_text().splitlines()[0])
    prov = rec["provenance"]
    assert set(STAMP_KEYS) <= set(prov) and "obs" not in prov  # the text track
    assert prov["checksum"] == record_checksum(rec)
    rel = releases.release_of(DEV)
    refs = S.suite_references(DEV)
    assert check_record(rec, generator=suite_generator(DEV),
                        suite_digest=rel.reference_sha256 if rel else None,
                        reference=refs[rec["episode_id"]]) is None
    assert prov["reference"] is not None and prov["generator"] == suite_generator(DEV)
    capsys.readouterr()
    assert main(["score", str(path), "--json"]) == 0
    err = capsys.readouterr().err
    assert "provenance" not in err and "before 0.4" not in err
    # an edited record is refused by its checksum, like an evaluate record
    rec["focus_success"] = not rec["focus_success"]
    path.write_text(json.dumps(rec) + "\n")
    assert main(["score", str(path), "--json"]) == 2
    assert "edited after it was written" in capsys.readouterr().err


def test_play_legend_writes_the_picture_legend_beside_the_record(tmp_path, monkeypatch,
                                                                 capsys):
    import builtins

    import numpy as np
    import pytest

    pytest.importorskip("PIL")
    from PIL import Image

    from mindhelper_env.cli.main import main
    from mindhelper_env.render.legend import render_legend

    said: list[str] = []
    result = play(suite=DEV, index=0, out_dir=tmp_path, input_fn=lambda p: "quit",
                  output_fn=said.append, legend=True)
    path = tmp_path / "legend.png"
    assert result["legend"] == path and any(str(path) in s for s in said)
    assert np.array_equal(np.asarray(Image.open(path).convert("RGB")), render_legend())
    path.unlink()

    def no_more(prompt: str = "") -> str:
        raise EOFError

    monkeypatch.setattr(builtins, "input", no_more)
    out = tmp_path / "cli"
    assert main(["play", "--suite", DEV, "--index", "0", "--out", str(out), "--legend"]) == 0
    assert (out / "legend.png").is_file() and (out / "human.jsonl").is_file()
    assert f"is in {out / 'legend.png'}" in capsys.readouterr().out
