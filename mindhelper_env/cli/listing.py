"""``mindhelper list``: environments, families, agents and suites."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Mapping
from typing import Any

from mindhelper_env.cli.base import EXIT_OK, console, print_json

logger = logging.getLogger("mindhelper_env.cli")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    ls = sub.add_parser("list", parents=[common],
                        help="list environments, families, agents and suites")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=run)


def listing_of() -> dict[str, Any]:
    from mindhelper_env.agents import AGENTS, agent_groups
    from mindhelper_env.envs.registration import ENV_SPECS
    from mindhelper_env.scenarios import FAMILIES, HELP_FAMILIES

    suites: dict[str, Any] = {}
    try:
        from mindhelper_env.scenarios import suites as suites_mod

        for name in suites_mod.SUITES:
            info: Any
            try:
                info = suites_mod.suite_info(name)
            except Exception as exc:  # listing must not fail because one suite is broken
                info = {"error": f"{type(exc).__name__}: {exc}"}
            suites[name] = info if isinstance(info, Mapping) else {"info": str(info)}
    except ImportError as exc:
        logger.warning("suites unavailable: %s", exc)
    return {
        "envs": list(ENV_SPECS),
        "families": {f: {"needs_intervention": f in HELP_FAMILIES} for f in FAMILIES},
        "agents": sorted(AGENTS),
        "agent_groups": agent_groups(),
        "suites": suites,
    }



def run(args: argparse.Namespace) -> int:
    listing = listing_of()
    if args.json:
        print_json(listing)
        return EXIT_OK
    from rich.table import Table

    out = console()
    out.print("[bold]Environments[/bold]: " + ", ".join(listing["envs"]))
    fam = Table(title="Scenario families")
    fam.add_column("family")
    fam.add_column("needs help")
    for name, f in listing["families"].items():
        fam.add_row(name, "yes" if f["needs_intervention"] else "no")
    out.print(fam)
    out.print("[bold]Agents[/bold] (or your own: --agents module:Class)")
    for group, names in listing["agent_groups"].items():
        out.print(f"  {group}: " + ", ".join(names))
    st = Table(title="Suites", caption="released: the release date in the suite ledger; a "
               "released suite's episodes never change (every release, withdrawn ones too: "
               "mindhelper_env/scenarios/suites/releases.json)")
    st.add_column("suite")
    st.add_column("released")
    st.add_column("info")
    for name, info in listing["suites"].items():
        brief = ", ".join(f"{k}={v}" for k, v in info.items()
                          if isinstance(v, (str, int, float, bool))
                          and k not in ("released", "name"))
        st.add_row(name, str(info.get("released") or info.get("status") or ""), brief)
    out.print(st)
    return EXIT_OK
