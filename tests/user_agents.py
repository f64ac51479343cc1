"""A user agent that lives outside the package (for the import-path tests)."""

from __future__ import annotations

from typing import Any


class WalkOnlyAgent:
    """Walks to the first place in view every window: movement only, never an intervention."""

    name = "walk-only"

    def __init__(self, env: Any = None) -> None:
        self.saw_env = env is not None
        self.calls = 0

    def reset(self, *, seed: int | None = None) -> None:
        self.calls = 0

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> str:
        self.calls += 1
        locs = info.get("candidates", {}).get("locations", [])
        if not locs:
            return "none"
        loc = locs[self.calls % len(locs)]
        return f"[walk] <{loc['class']}> ({loc['id']})"
