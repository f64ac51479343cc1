"""Property-based tests: the parser and step() never crash on any string."""

from __future__ import annotations

import gymnasium as gym
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mindhelper_env.world.script import VERB_ARITY, ScriptParseError, parse_line, parse_program

_ENV = gym.make("MindHelper-VirtualHome-v0")


@given(st.text(max_size=300))
def test_parse_line_only_raises_parse_errors(text):
    try:
        line = parse_line(text)
    except ScriptParseError:
        return
    assert line.verb in VERB_ARITY
    assert parse_line(str(line)) == line


@given(st.text(max_size=500))
def test_parse_program_never_raises(text):
    lines, errors = parse_program(text)
    assert all(isinstance(r, str) for _, r in errors)


_verbs = st.sampled_from(sorted(VERB_ARITY) + ["fly", "PUTIN", "Walk"])
_arg = st.tuples(st.sampled_from(["apple", "fridge", "character", "kitchen_counter", "x"]),
                 st.integers(-5, 400))
_line = st.builds(lambda v, args: f"[{v}] " + " ".join(f"<{c}> ({i})" for c, i in args),
                  _verbs, st.lists(_arg, max_size=4))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 50), st.lists(st.one_of(_line.map(lambda s: s), st.text(max_size=60)),
                                    min_size=1, max_size=4))
def test_step_never_raises_on_random_programs(seed, programs):
    obs, info = _ENV.reset(seed=seed)
    for prog in programs:
        obs, r, term, trunc, info = _ENV.step(prog)
        assert _ENV.observation_space.contains(obs)
        assert isinstance(r, float)
        if term or trunc:
            break
