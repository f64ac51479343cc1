"""Simulated people: kinds, belief tables, perception and task policies."""

from __future__ import annotations

from mindhelper_env.actors.actor import ACTOR_KINDS, Actor, Marker

__all__ = ["Actor", "ACTOR_KINDS", "Marker"]
