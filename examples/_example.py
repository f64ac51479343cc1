"""How every example ends: one line instead of a traceback.

``run(main, "train_ppo.py", extra="rl")`` calls ``main()`` and turns

* a missing package of the example's extra into ``train_ppo.py needs the rl extra (torch
  is missing): pip install ...`` (exit 1);
* a closed output pipe (``python examples/twin_pairs.py ... | head``) into a quiet stop
  (exit 0: the reader had what it wanted);
* Ctrl-C into exit 130 without a traceback.

Each example imports this module only when run as a script, so importing an example (as the
tests do) needs nothing from here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

#: How each extra is installed (torch first where the extra needs it: its CPU wheel).
INSTALL = {
    "rl": "pip install torch==2.13.0 && pip install 'mindhelper-env[rl]'",
    "rllib": "pip install torch==2.13.0 && pip install 'mindhelper-env[rllib]'",
    "pettingzoo": "pip install 'mindhelper-env[pettingzoo]'",
}


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor
        pass


def run(main: Callable[[], Any], script: str, *, extra: str | None = None) -> None:
    """Run an example's ``main`` as a command (see the module docstring)."""
    name = os.path.basename(script)
    try:
        main()
        sys.stdout.flush()  # a closed pipe shows here at the latest
    except BrokenPipeError:
        _quiet_stdout()
        raise SystemExit(0) from None
    except KeyboardInterrupt:
        sys.stderr.write(f"{name}: interrupted\n")
        raise SystemExit(130) from None
    except ModuleNotFoundError as exc:
        if extra is None:
            raise
        raise SystemExit(f"{name} needs the {extra} extra ({exc.name} is missing): "
                         f"{INSTALL.get(extra, f'pip install mindhelper-env[{extra}]')}"
                         ) from None
    except ImportError as exc:  # the package's own checks name the extra to install
        if "pip install" not in str(exc):
            raise
        raise SystemExit(f"{name}: {' '.join(str(exc).split())}") from None
