"""How finely a split's test set can resolve accuracy per device or domain.

Accuracy on a group of n test images moves in steps of 100 / n points: with 2 test images per device a
single image is a 50-point step, so the per-device accuracies of HeteroSwitch's Table 2 or DapperFL's
Table 1 (gaps of a few points) cannot show. :func:`thin_test_group` finds the group with the fewest
test images of a split grouped by ``device`` or ``domain``; :func:`warn_thin_test_groups` warns in one
line when it has fewer than :data:`MIN_TEST_PER_GROUP`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from hetbench.report.samples import group_column

#: the fewest test images per group at which one image moves a group's accuracy by 5 points or less
MIN_TEST_PER_GROUP = 20


@dataclass(frozen=True)
class ThinGroup:
    """The group of a split's test set with the fewest images."""

    kind: str  # "device" or "domain"
    name: str
    images: int
    groups: int

    @property
    def step(self) -> float:
        """Accuracy points one test image is worth in this group."""
        return 100.0 / self.images

    def line(self) -> str:
        """The warning, in one line.

        Examples
        --------
        >>> ThinGroup("device", "iphone", 2, 9).line()
        "the test set holds 2 images of device 'iphone' (the fewest of 9 devices): one image moves its accuracy by 50 points; 20 or more per device give steps of 5 points or less"
        """
        return (f"the test set holds {self.images} image{'s' * (self.images != 1)} of {self.kind} '{self.name}' "
                f"(the fewest of {self.groups} {self.kind}s): one image moves its accuracy by {self.step:.3g} points; "
                f"{MIN_TEST_PER_GROUP} or more per {self.kind} give steps of {100 / MIN_TEST_PER_GROUP:g} points or less")


def thin_test_group(fs) -> ThinGroup | None:
    """The group (device or domain) with the fewest rows in the split's ``test`` output, or None when the
    split has no test output or no ``device`` / ``domain`` column (:data:`hetbench.report.samples.GROUP_COLUMNS`).

    Parameters
    ----------
    fs : FederatedSplit
        A built split (:func:`hetbench.splits.build_split`).

    Examples
    --------
    >>> from hetbench.partitioners import DomainsPartitioner
    >>> from hetbench.report.test_groups import thin_test_group
    >>> from hetbench.sources import load_table
    >>> from hetbench.splits import build_split
    >>> thin_test_group(build_split(load_table("builtin:digits-domains"), DomainsPartitioner(4, 0.05, "domain")))
    ThinGroup(kind='domain', name='mnist', images=100, groups=4)
    """
    out = fs.outputs.get("test")
    if out is None or not len(out):
        return None
    ds = fs.table.splits[out.source_split]
    kind = group_column(ds.column_names)
    if kind is None:
        return None
    values = np.asarray(ds.with_format("arrow")[kind].to_numpy(zero_copy_only=False))[out.rows].astype(str)
    names, counts = np.unique(values, return_counts=True)
    i = int(np.argmin(counts))  # ties: the first name in sorted order
    return ThinGroup(kind, str(names[i]), int(counts[i]), int(names.size))


def warn_thin_test_groups(fs) -> ThinGroup | None:
    """Warn (``UserWarning``, one line: the CLI prints ``hetbench: warning: ...``) when a group of the
    split's test set has fewer than :data:`MIN_TEST_PER_GROUP` images; returns that group, else None."""
    thin = thin_test_group(fs)
    if thin is None or thin.images >= MIN_TEST_PER_GROUP:
        return None
    warnings.warn(thin.line(), UserWarning, stacklevel=2)
    return thin
