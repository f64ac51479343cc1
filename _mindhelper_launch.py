"""Entry point of the ``mindhelper`` command.

It lives outside the package so that it runs *before* ``mindhelper_env`` (and gymnasium,
NumPy, ...) are imported: a Ctrl-C or SIGTERM during that start-up then exits with one line
and code 130 instead of a traceback. Once the package is loaded, ``mindhelper_env.cli``
handles interrupts itself.
"""

from __future__ import annotations

import os
import signal
import sys


def _quit_during_startup(signum: int, _frame: object) -> None:
    what = "terminated (SIGTERM)" if signum == signal.SIGTERM else "interrupted"
    sys.stderr.write(f"mindhelper: {what} while starting; nothing was written\n")
    sys.stderr.flush()
    os._exit(130)


def main() -> int:
    previous = {sig: signal.signal(sig, _quit_during_startup)
                for sig in (signal.SIGINT, signal.SIGTERM)}
    from mindhelper_env.cli import main as cli_main

    for sig, handler in previous.items():
        signal.signal(sig, handler)
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
