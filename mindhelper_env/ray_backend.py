"""Moved to :mod:`mindhelper_env.evaluation.ray_runner` (issue 17); this name stays for agents
that use the endpoint hook (``from mindhelper_env.ray_backend import endpoint_slot``)."""

from mindhelper_env.evaluation.ray_runner import (  # noqa: F401
    INSTALL_HINT,
    EndpointLimiterUnavailable,
    connect,
    disconnect,
    endpoint_limiter,
    endpoint_slot,
    iter_ray,
    require_ray,
)

__all__ = ["INSTALL_HINT", "require_ray", "connect", "disconnect", "iter_ray",
           "endpoint_limiter", "endpoint_slot", "EndpointLimiterUnavailable"]
