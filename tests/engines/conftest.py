"""Fixtures of the engine tests: a real local Ray cluster (:mod:`engines_ray_cluster`)."""

from __future__ import annotations

import pytest
from engines_ray_cluster import ray_cluster_fixture

ray_cluster = pytest.fixture(scope="session")(ray_cluster_fixture)
