"""Feature shift: the Fréchet distance matches its closed form, the unbiased MMD reads 0 on one
distribution and grows with a shift, feature noise moves a client away as sigma grows, and a label-only
split stays at its IID value class by class while the unconditional distance grows with the label skew."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.clustering import standardise
from hetbench.report.feature_shift import conditional_shift, frechet_distance, mmd2_unbiased
from hetbench.report.unit_shift import iid_units, unit_shifts


def weighted_mean(shifts, field: str) -> float:
    """Row-weighted mean of a field over the shifts where it is defined (NaN when none is)."""
    pairs = [(getattr(s, field), s.rows) for s in shifts if np.isfinite(getattr(s, field))]
    total = sum(r for _, r in pairs)
    return float(sum(v * r for v, r in pairs) / total) if total else float("nan")


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(0.2, 3.0), min_size=3, max_size=3), st.lists(st.floats(0.2, 3.0), min_size=3, max_size=3),
       st.lists(st.floats(-2, 2), min_size=3, max_size=3), st.integers(0, 99))
def test_the_frechet_distance_of_gaussians_is_its_closed_form(sd_a, sd_b, shift, seed):
    """For diagonal covariances tr(C1 + C2 - 2 (C1 C2)^(1/2)) = sum (s1 - s2)^2."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0.0, sd_a, (40000, 3))
    b = rng.normal(shift, sd_b, (40000, 3))
    expected = float(np.sum(np.square(shift)) + np.sum((np.array(sd_a) - np.array(sd_b)) ** 2))
    assert frechet_distance(a, b) == pytest.approx(expected, rel=0.05, abs=0.05)


def test_the_unbiased_mmd_is_zero_on_one_distribution_and_grows_with_a_shift():
    rng = np.random.default_rng(0)
    same = [mmd2_unbiased(rng.normal(size=(30, 5)), rng.normal(size=(45, 5))) for _ in range(400)]
    assert abs(np.mean(same)) < 3 * np.std(same) / np.sqrt(len(same))  # unbiased: mean 0 within its error
    assert min(same) < 0  # an unbiased estimate can go below zero
    shifted = [np.mean([mmd2_unbiased(rng.normal(size=(200, 5)), rng.normal(m, 1.0, (200, 5))) for _ in range(5)])
               for m in (0.0, 0.25, 0.5, 1.0, 2.0)]
    assert all(b > a for a, b in zip(shifted, shifted[1:])), shifted


def _classes(rng, n_per_class=300, num_classes=4, d=6):
    labels = np.repeat(np.arange(num_classes), n_per_class)
    centres = rng.normal(0.0, 3.0, (num_classes, d))
    return centres[labels] + rng.normal(size=(len(labels), d)), labels


def test_feature_noise_moves_a_client_further_as_sigma_grows():
    rng = np.random.default_rng(1)
    emb, labels = _classes(rng)
    member = np.arange(len(labels)) % 3 == 0
    shifts = []
    for sigma in (0.0, 1.0, 2.0, 4.0):
        noisy = emb.copy()
        noisy[member] += rng.normal(0.0, sigma, noisy[member].shape)
        shifts.append(conditional_shift(standardise(noisy), labels, member))
    assert all(b.mmd2 > a.mmd2 for a, b in zip(shifts, shifts[1:])), [s.mmd2 for s in shifts]
    assert all(b.frechet > a.frechet for a, b in zip(shifts, shifts[1:])), [s.frechet for s in shifts]


def test_a_label_only_split_stays_at_its_iid_value_class_by_class():
    """Clients drawn by a Dirichlet over labels (alpha 0.1) hold other classes, not other-looking images:
    the class-conditional shift is the IID value; the unconditional one is far above it."""
    rng = np.random.default_rng(2)
    emb, labels = _classes(rng)
    emb = standardise(emb)
    num_clients = 6
    client = np.empty(len(labels), int)
    for c in np.unique(labels):
        rows = rng.permutation(np.flatnonzero(labels == c))
        cuts = (np.cumsum(rng.dirichlet([0.1] * num_clients))[:-1] * len(rows)).astype(int)
        for k, part in enumerate(np.split(rows, cuts)):
            client[part] = k
    conditional = weighted_mean([conditional_shift(emb, labels, client == k) for k in range(num_clients)], "mmd2")
    unconditional = weighted_mean([conditional_shift(emb, labels, client == k, conditional=False)
                                   for k in range(num_clients)], "mmd2")
    iid = unit_shifts(emb, labels, iid_units(labels, client), num_clients, fourier=4096).weighted_mean("mmd2")
    assert abs(conditional - iid) < 0.05 and abs(conditional) < 0.05, (conditional, iid)
    assert unconditional > 20 * max(abs(conditional), 0.01), unconditional


def test_a_unit_with_fewer_than_two_rows_of_every_class_reads_nan():
    emb, labels = np.zeros((6, 2)), np.array([0, 1, 2, 0, 1, 2])
    shift = conditional_shift(emb, labels, np.array([True, True, True, False, False, False]))
    assert shift.classes_compared == 0 and np.isnan(shift.mmd2) and shift.rows == 3
    assert np.isnan(weighted_mean([shift], "mmd2"))
    with pytest.raises(ValueError, match="needs \\(n >= 2, d\\) rows"):
        mmd2_unbiased(np.zeros((1, 2)), np.zeros((3, 2)))
