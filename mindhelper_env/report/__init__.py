"""The static HTML report of evaluation runs (``mindhelper report``, ``evaluate --report``).

Importing this package is light: Jinja2 and matplotlib (the ``report`` extra) are imported
only when a report is built. See docs/report.md.
"""

from __future__ import annotations

from typing import Any

from mindhelper_env.report.hints import EXTRA_HINT

__all__ = ["write_report", "check_report_extra", "EXTRA_HINT"]



def check_report_extra() -> None:
    """Raise ``ImportError`` naming the ``report`` extra when Jinja2 or matplotlib is
    missing (call it before any file is written)."""
    from mindhelper_env.report.build import check_report_extra as check

    check()


def write_report(out_dir: Any, run_dirs: Any, **kwargs: Any) -> dict[str, Any]:
    """Build the report of ``run_dirs`` (one folder or a list) into ``out_dir``; see
    :func:`mindhelper_env.report.build.write_report`."""
    from mindhelper_env.report.build import write_report as build

    if isinstance(run_dirs, (str, bytes)) or hasattr(run_dirs, "__fspath__"):
        run_dirs = [run_dirs]
    return build(out_dir, list(run_dirs), **kwargs)
