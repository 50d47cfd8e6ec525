"""The per-domain / per-device sample grid (``plots/<kind>_samples.png``, :mod:`hetbench.report.samples`):
drawn for a split with a ``domain`` or ``device`` column and images, seeded, never for a split without
images."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hetbench.report.samples import choose_samples, collect_samples


@pytest.fixture(scope="module")
def domains_split():
    from hetbench.builders.digits_domains import prepare_digits_domains

    return prepare_digits_domains(clients=4, fraction=0.05)


def test_a_domain_split_publishes_the_grid(domains_split, tmp_path):
    from PIL import Image

    _, report = domains_split.publish(tmp_path / "dd", quiet=True)
    png = tmp_path / "dd" / "plots" / "domain_samples.png"
    assert png.is_file()
    with Image.open(png) as img:  # 4 domain rows of ~1.2 in at 100 dpi, 8 columns of 1 in
        assert img.size[0] >= 800 and img.size[1] >= 4 * 122
    manifest = json.loads((tmp_path / "dd" / "hetbench.json").read_text())
    assert "plots/domain_samples.png" in json.dumps(manifest["files"])  # digested like every plot
    assert "(plots/domain_samples.png)" in (tmp_path / "dd" / "README.md").read_text()  # and on the card


def test_the_grid_is_seeded(domains_split):
    split = domains_split.build()
    a, b, other = collect_samples(split), collect_samples(split), collect_samples(split, seed=1)
    assert a.names == ["mnist", "usps", "mnistm", "syn"] and a.split == "test" and not a.aligned
    for row_a, row_b in zip(a.images, b.images):
        assert len(row_a) == 8 and all(np.array_equal(x, y) for x, y in zip(row_a, row_b))
    assert a.labels == b.labels
    assert any(not np.array_equal(x, y) for ra, ro in zip(a.images, other.images) for x, y in zip(ra, ro))
    for texts in a.labels:  # one of each class before a second of any: 8 distinct digits, in class order
        assert len(set(texts)) == 8 and texts == sorted(texts)


def test_shared_captures_line_up_in_columns():
    groups = np.repeat(["baseline", "wb=none", "tone=none"], 20)
    captures = np.tile(np.arange(20), 3).astype(str)
    captures[40:] = np.roll(captures[40:], 7)  # another row order in one device
    labels = captures.astype(int) % 5
    names, rows, aligned = choose_samples(groups, labels, captures, per_group=8, seed=3)
    assert aligned and names == ["baseline", "wb=none", "tone=none"]
    assert captures[rows[0]].tolist() == captures[rows[1]].tolist() == captures[rows[2]].tolist()
    assert sorted(set(labels[rows[0]].tolist())) == [0, 1, 2, 3, 4]  # every class before a repeat


def test_a_domain_split_without_images_draws_no_grid(tmp_path):
    """A metadata table with a ``domain`` column (no image column): the report draws no sample grid."""
    from hetbench.partitioners.domains import DomainsPartitioner
    from hetbench.pipeline import make_split
    from hetbench.sources import load_table

    rng = np.random.default_rng(0)
    csv = tmp_path / "meta.csv"
    lines = ["id,label,domain,value"] + [f"{i},{rng.integers(3)},{'ab'[i % 2]},{rng.random():.3f}" for i in range(200)]
    csv.write_text("\n".join(lines) + "\n")
    table = load_table(str(csv), "label", "id")
    fs, _ = make_split(table, DomainsPartitioner(2, 0.4, "domain"), tmp_path / "meta", quiet=True)
    assert collect_samples(fs) is None
    plots = {p.name for p in (tmp_path / "meta" / "plots").iterdir()}
    assert "domain_client_samples.png" in plots  # a domain split's per-domain plots are drawn ...
    assert not plots & {"domain_samples.png", "device_samples.png"}  # ... but no image grid
