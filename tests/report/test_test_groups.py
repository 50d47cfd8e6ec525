"""A build whose test set holds few images of some device or domain says so in one line (issue 48, item 5):
with 2 test images a device's accuracy moves in 50-point steps, too coarse for the per-device gaps the
papers report."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from hetbench.partitioners import DomainsPartitioner, IIDPartitioner
from hetbench.report.test_groups import MIN_TEST_PER_GROUP, ThinGroup, thin_test_group, warn_thin_test_groups
from hetbench.sources import load_table
from hetbench.splits import build_split


@pytest.mark.slow
def test_a_tiny_device_build_warns_in_one_line_with_the_step_and_still_builds(tmp_path):
    out = tmp_path / "iso"
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "hetbench.cli.main", "build", "iso-isp", "--stages", "wb", "--size",
                           "32", "--crops-per-photo", "1", "--crop-size", "96", "--out", str(out), "-q"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0 and (out / "hetbench.json").is_file(), done.stderr
    lines = [line for line in done.stderr.splitlines() if "test set holds" in line]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("hetbench: warning: the test set holds 1 image of device '")
    assert "one image moves its accuracy by 100 points; 20 or more per device give steps of 5 points or less" in lines[0]
    assert "Traceback" not in done.stderr and "UserWarning" not in done.stderr


def test_a_domain_split_with_100_test_images_per_domain_does_not_warn():
    fs = build_split(load_table("builtin:digits-domains"), DomainsPartitioner(4, 0.05, "domain"))
    assert thin_test_group(fs) == ThinGroup("domain", "mnist", 100, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_thin_test_groups(fs) is None


def test_the_fewest_group_is_named_and_its_step_is_100_over_its_images():
    fs = build_split(load_table("builtin:digits-domains"), DomainsPartitioner(4, 0.05, "domain"))
    test = fs.outputs["test"]
    domains = np.asarray(fs.table.splits[test.source_split]["domain"])[test.rows]
    keep = np.sort(np.concatenate([np.flatnonzero(domains == d)[:n]
                                   for d, n in (("mnist", 30), ("usps", 8), ("mnistm", 40), ("syn", 25))]))
    fs.outputs["test"] = type(test)(test.source_split, test.rows[keep], test.client_ids[keep])
    with pytest.warns(UserWarning, match=r"holds 8 images of domain 'usps' \(the fewest of 4 domains\): one image "
                                         r"moves its accuracy by 12.5 points"):
        thin = warn_thin_test_groups(fs)
    assert thin.step == 12.5 and thin.images < MIN_TEST_PER_GROUP


def test_a_split_without_a_device_or_domain_column_has_no_test_groups():
    assert thin_test_group(build_split(load_table("builtin:digits"), IIDPartitioner(4))) is None
