"""Client selection per round (hetbench.train.sampling)."""

from __future__ import annotations

import numpy as np
import pytest

from hetbench.train.sampling import select_uniform

pytestmark = pytest.mark.usefixtures("one_thread")


def test_uniform_selection_is_per_round_and_repeatable():
    a = select_uniform(3, 5, 100, 10)
    assert np.array_equal(a, select_uniform(3, 5, 100, 10)) and np.unique(a).size == 10
    assert not np.array_equal(a, select_uniform(3, 6, 100, 10))
    assert select_uniform(0, 1, 4, 10).size == 4
