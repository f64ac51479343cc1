"""Moved to :mod:`mindhelper_env.agents.mindclaw.training` (next to the Trigger it trains);
this name stays for scripts that import it."""

from mindhelper_env.agents.mindclaw.training import *  # noqa: F401,F403
from mindhelper_env.agents.mindclaw.training import __all__  # noqa: F401
