"""Fixtures of the ISP tests: the nine HeteroSwitch profiles and two real photograph crops."""

from __future__ import annotations

import numpy as np
import pytest

from hetbench.isp.device import DeviceProfile
from hetbench.isp.profiles import load_profiles
from hetbench.sources import photographs


@pytest.fixture(scope="module")
def profiles() -> list[DeviceProfile]:
    return load_profiles("heteroswitch9")


@pytest.fixture(scope="module")
def astronaut_crops() -> list[np.ndarray]:
    photos = dict(photographs.embedded_photographs())
    return photographs.scene_crops(photos["astronaut"], 2, 256, np.random.default_rng(0))
