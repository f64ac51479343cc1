"""Starting child processes that a test interrupts."""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """``preexec_fn`` of a child that a test sends Ctrl-C: SIGINT at its default
    disposition, as a terminal's foreground job has it. A test process started in the
    background by a shell without job control (``pytest &`` in a script, as CI may run the
    tests) inherits SIGINT ignored; an ignored signal stays ignored across ``exec``, and
    Python then keeps ignoring it, as a program started so should. The child would play on
    to its end instead of stopping, and the test would be about how pytest was started,
    not about the command."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
