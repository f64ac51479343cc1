"""``python -m mindhelper_env.cli``: the ``mindhelper`` command."""

from mindhelper_env.cli.main import main

raise SystemExit(main())
