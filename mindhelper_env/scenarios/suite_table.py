"""The suite table: every suite's name, version, size, seed base, generator and house.

Kept apart from :mod:`mindhelper_env.scenarios.suites` (which builds, exports and checks
suites) so that the table reads as one list. A released suite's row never changes
(:mod:`mindhelper_env.scenarios.releases` pins it); a new generation adds rows.
"""

from __future__ import annotations

from typing import Any

#: The suites. ``seed_base + i`` is the seed of episode ``i``; ``generator`` is the generator
#: version the suite's episodes were built with.
SUITES: dict[str, dict[str, Any]] = {
    "vh-dev-v2": {"name": "vh-dev-v2", "version": 2, "n": 100,
                  "seed_base": 10_000_000_000, "generator": "mh-gen-2.5"},
    "vh-test-v2": {"name": "vh-test-v2", "version": 2, "n": 1000,
                   "seed_base": 11_000_000_000, "generator": "mh-gen-2.5"},
    "tdw-dev-v2": {"name": "tdw-dev-v2", "version": 2, "n": 100,
                   "seed_base": 12_000_000_000, "generator": "mh-gen-2.5", "house": "tdw"},
    "tdw-test-v2": {"name": "tdw-test-v2", "version": 2, "n": 1000,
                    "seed_base": 13_000_000_000, "generator": "mh-gen-2.5", "house": "tdw"},
    "vh-scene1-dev-v2": {"name": "vh-scene1-dev-v2", "version": 2, "n": 100,
                         "seed_base": 14_000_000_000, "generator": "mh-gen-2.5",
                         "house": "virtualhome:scene1"},
    "vh-dev-v3": {"name": "vh-dev-v3", "version": 3, "n": 100,
                  "seed_base": 15_000_000_000, "generator": "mh-gen-3.0"},
    "vh-test-v3": {"name": "vh-test-v3", "version": 3, "n": 1000,
                   "seed_base": 16_000_000_000, "generator": "mh-gen-3.0"},
    "tdw-dev-v3": {"name": "tdw-dev-v3", "version": 3, "n": 100,
                   "seed_base": 17_000_000_000, "generator": "mh-gen-3.0", "house": "tdw"},
    "tdw-test-v3": {"name": "tdw-test-v3", "version": 3, "n": 1000,
                    "seed_base": 18_000_000_000, "generator": "mh-gen-3.0", "house": "tdw"},
    "vh-scene1-dev-v3": {"name": "vh-scene1-dev-v3", "version": 3, "n": 100,
                         "seed_base": 19_000_000_000, "generator": "mh-gen-3.0",
                         "house": "virtualhome:scene1"},
    "vh-dev-v4": {"name": "vh-dev-v4", "version": 4, "n": 100,
                  "seed_base": 20_000_000_000, "generator": "mh-gen-3.1"},
    "vh-test-v4": {"name": "vh-test-v4", "version": 4, "n": 1000,
                   "seed_base": 21_000_000_000, "generator": "mh-gen-3.1"},
    "tdw-dev-v4": {"name": "tdw-dev-v4", "version": 4, "n": 100,
                   "seed_base": 22_000_000_000, "generator": "mh-gen-3.1", "house": "tdw"},
    "tdw-test-v4": {"name": "tdw-test-v4", "version": 4, "n": 1000,
                    "seed_base": 23_000_000_000, "generator": "mh-gen-3.1", "house": "tdw"},
    "vh-scene1-dev-v4": {"name": "vh-scene1-dev-v4", "version": 4, "n": 100,
                         "seed_base": 24_000_000_000, "generator": "mh-gen-3.1",
                         "house": "virtualhome:scene1"},
    "vh-dev-v5": {"name": "vh-dev-v5", "version": 5, "n": 100,
                  "seed_base": 25_000_000_000, "generator": "mh-gen-3.2"},
    "vh-test-v5": {"name": "vh-test-v5", "version": 5, "n": 1000,
                   "seed_base": 26_000_000_000, "generator": "mh-gen-3.2"},
    "tdw-dev-v5": {"name": "tdw-dev-v5", "version": 5, "n": 100,
                   "seed_base": 27_000_000_000, "generator": "mh-gen-3.2", "house": "tdw"},
    "tdw-test-v5": {"name": "tdw-test-v5", "version": 5, "n": 1000,
                    "seed_base": 28_000_000_000, "generator": "mh-gen-3.2", "house": "tdw"},
    "vh-scene1-dev-v5": {"name": "vh-scene1-dev-v5", "version": 5, "n": 100,
                         "seed_base": 29_000_000_000, "generator": "mh-gen-3.2",
                         "house": "virtualhome:scene1"},
}
