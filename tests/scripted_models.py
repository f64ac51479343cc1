"""A reference-driven scripted model for comparing prompting strategies (tests, benchmarks).

:class:`ReferenceScript` is a script for ``fake_openai_server.ScriptedServer``: it answers
as a model with perfect judgement would, using the current episode's reference (set
``script.reference`` before each episode). It recognises the prompt by its system message:

* direct-vlm — intervenes with the reference program when ``onset < tick <= deadline``
  of a help episode, else answers none (so direct-vlm makes as few calls as it can);
* MindClaw mental reasoning — blocked (with the reference's kind and object) exactly for the
  focus person's cue at the onset tick;
* MindClaw action generation — the reference program;
* MindClaw observation — keeps every cue.

Compact formats are answered in kind: a reasoning prompt with ``Options:`` gets the letter of
the reference's need (or ``A``, not blocked); a one-line direct-vlm prompt gets ``none`` or
``help: ...``; a one-line action prompt the program joined by ``;``.

Replies carry no ``usage``, so the client estimates tokens from the prompt size
(``ceil(chars / 4)``), the same way for both agents. ``malformed=True`` answers prose.
"""

from __future__ import annotations

import json
import re
from typing import Any

from fake_openai_server import Reply

__all__ = ["ReferenceScript", "message_text"]


def message_text(msg: dict[str, Any]) -> str:
    content = msg.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


class ReferenceScript:
    def __init__(self, malformed: bool = False) -> None:
        self.reference: dict[str, Any] = {}
        self.malformed = malformed
        self.kinds: dict[str, int] = {}

    def _window(self) -> tuple[int, int] | None:
        ref = self.reference
        if not ref.get("needs_intervention") or not ref.get("window"):
            return None
        return int(ref["window"]["onset_tick"]), int(ref["window"]["deadline_tick"])

    def __call__(self, body: dict[str, Any], n: int) -> Reply:
        system = message_text(body["messages"][0])
        user = message_text(body["messages"][-1])
        ref = self.reference
        if self.malformed:
            return Reply(text="Hmm, hard to say; maybe they are fine?", usage=None)
        if system.startswith("You are a household robot helper"):
            kind, answer = "direct", {"intervene": False, "program": []}
            m = re.search(r"Tick (\d+)\.", user)
            win = self._window()
            if m and win and win[0] < int(m.group(1)) <= win[1]:
                answer = {"intervene": True, "program": ref["reference_actions"]}
            if "Answer with ONE line" in system:
                self.kinds[kind] = self.kinds.get(kind, 0) + 1
                text = ("help: " + "; ".join(answer["program"]) if answer["intervene"]
                        else "none")
                return Reply(text=text, usage=None)
        elif system.startswith("You are the mental-reasoning module"):
            kind, answer = "reasoning", {"blocked": False}
            m = re.search(r"Tick (\d+): .*?\((\d+)\)", user)
            win = self._window()
            if m and win and int(m.group(1)) == win[0] \
                    and int(m.group(2)) == int(ref["focus_actor"]):
                answer = {"blocked": True, "kind": ref["mental_state"]["type"],
                          "object": ref["target_object"]}
            if "\nOptions:\n" in user:
                letter = "A"
                if answer["blocked"]:
                    want = (f"{answer['kind'].replace('_', ' ')}: needs "
                            f".*\\({answer['object']}\\)$")
                    for line in user.split("\nOptions:\n", 1)[1].splitlines():
                        lm = re.match(r"^([A-Z])\. (.*)$", line)
                        if lm and re.match(want, lm.group(2)):
                            letter = lm.group(1)
                            break
                self.kinds[kind] = self.kinds.get(kind, 0) + 1
                return Reply(text=f"{letter}", usage=None)
        elif system.startswith("You are the action module"):
            kind, answer = "action", {"program": ref.get("reference_actions", [])}
            if "Answer with ONE line" in system:
                self.kinds[kind] = self.kinds.get(kind, 0) + 1
                return Reply(text="; ".join(answer["program"]), usage=None)
        elif system.startswith("You are the observation module"):
            kind, answer = "observation", {
                "cues": list(range(len(re.findall(r"^\d+\. Tick", user, re.M))))}
            if "Answer with ONE line" in system:
                self.kinds[kind] = self.kinds.get(kind, 0) + 1
                return Reply(text=" ".join(map(str, answer["cues"])) or "none", usage=None)
        else:
            kind, answer = "other", {}
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        return Reply(text=json.dumps(answer), usage=None)
