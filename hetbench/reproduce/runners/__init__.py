"""Claim runners by the name a claim's ``runner:`` gives (one module each)."""

from __future__ import annotations

from hetbench.registry import Registry
from hetbench.reproduce.runners.base import Axes, Context, Runner, RunOutput
from hetbench.reproduce.runners.footprint import FootprintRunner
from hetbench.reproduce.runners.geo import GeoClientsRunner
from hetbench.reproduce.runners.label_skew import LabelSkewRunner

RUNNERS: Registry[Runner] = Registry(
    "claim runner",
    {
        "dapperfl_footprint": FootprintRunner(),
        "geo_clients": GeoClientsRunner(),
        "label_skew": LabelSkewRunner(),
    },
)
"""Every runner a claim definition may name."""

__all__ = ["RUNNERS", "Axes", "Context", "Runner", "RunOutput"]
