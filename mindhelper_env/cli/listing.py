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
        "withdrawn": withdrawn_suites(),
    }


def withdrawn_suites() -> dict[str, dict[str, Any]]:
    """Every withdrawn suite of the release ledger: ``released``, ``use`` (the newest
    generation of what replaced it), ``replaced_by`` (the ledger's) and ``note``."""
    from mindhelper_env.scenarios import releases

    return {r.name: {"released": r.released, "use": releases.newest_replacements(r.name),
                     "replaced_by": list(r.replaced_by), "note": r.note}
            for r in releases.releases() if not r.current}


def _brief(info: Mapping[str, Any]) -> str:
    if "error" in info:
        return str(info["error"])
    parts = [f"{info.get('n')} episodes ({info.get('help_episodes')} help / "
             f"{info.get('silent_episodes')} silent)", str(info.get("generator"))]
    if info.get("house"):
        parts.append(f"house {info['house']}")
    if info.get("generator_ok") is False:
        parts.append("not buildable by this install")
    return ", ".join(parts)


def _status_cell(info: Mapping[str, Any]) -> str:
    status = str(info.get("status") or "")
    if status == "frozen" and info.get("newest"):
        return f"frozen (newest: {info['newest']})"
    return status



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
    st = Table(title="Suites", caption="current: the newest generation of its suite, the one "
               "to report on; frozen: an older generation, played unchanged to reproduce "
               "earlier results; released: the release date in the ledger; a released "
               "suite's episodes never change (every release, withdrawn ones too: "
               "mindhelper_env/scenarios/suites/releases.json)")
    st.add_column("suite")
    st.add_column("status")
    st.add_column("released")
    st.add_column("info")
    order = {"current": 0, "unreleased": 1, "frozen": 2}
    rows = sorted(listing["suites"].items(),
                  key=lambda kv: (order.get(str(kv[1].get("status")), 3),
                                  -int(kv[1].get("version") or 0)))
    for name, info in rows:
        st.add_row(name, _status_cell(info), str(info.get("released") or ""), _brief(info))
    for name, w in listing["withdrawn"].items():
        st.add_row(name, f"withdrawn: use {' or '.join(w['use'])}", str(w["released"]),
                   w["note"])
    out.print(st)
    return EXIT_OK
