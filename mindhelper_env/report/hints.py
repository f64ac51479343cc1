"""The message naming the ``report`` extra (shared by the package root and the builder)."""

EXTRA_HINT = "the report needs the report extra: pip install 'mindhelper-env[report]'"
