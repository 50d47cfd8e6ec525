"""Adaptive S2 clients against Nmax (Hsu, Qi and Brown, ECCV 2020, sec. 4.1; TFF's iNaturalist-Geo splits).

Clients are the S2 cells of ``hetbench build geo`` (:func:`hetbench.builders.geo.prepare_geo`: cells split
until none holds more than Nmax examples, cells under 0.01 x Nmax dropped), counted at every Nmax of a
grid, on three tables:

- ``builtin:observations`` (always);
- the ``--metadata`` table (a real geo-tagged table; not run without it), at the Nmax values of the grid
  that are at most a tenth of its rows (where cells still split);
- the iNaturalist 2017 files (``--metadata inat2017:train2017.json+train2017_locations.json``, the recipe
  ``inaturalist-geo-*``'s inputs), against TFF's published counts; not run when they are absent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hetbench.errors import HetbenchError
from hetbench.reproduce.criteria import Measurement
from hetbench.reproduce.runners.base import Axes, Context, Runner, RunOutput


def client_counts(metadata: str | None, grid: list[int], seed: int = 0) -> tuple[list[int], int]:
    """The number of adaptive S2 clients at every Nmax of ``grid`` and the table's row count.

    Examples
    --------
    >>> from hetbench.reproduce.runners.geo import client_counts
    >>> client_counts(None, [1000, 3000])
    ([72, 23], 20000)
    """
    from hetbench.builders.geo import prepare_geo

    prepared = prepare_geo(metadata, nmax=int(grid[0]), seed=seed)
    base = prepared.partitioner
    rows = prepared.table.num_rows("train")
    counts = []
    for n in grid:
        p = type(base)(lat_col=base.lat_col, lon_col=base.lon_col, nmax=int(n))
        counts.append(int(p.partition(prepared.table, seed).num_clients))
    return counts, rows


def inat_files(metadata: str | None, expected: str) -> str | None:
    """Why the iNaturalist 2017 check cannot run (None when ``metadata`` names its files and they exist).

    Examples
    --------
    >>> from hetbench.reproduce.runners.geo import inat_files
    >>> inat_files(None, "inat2017:a.json+b.json")
    'needs --metadata inat2017:a.json+b.json (the iNaturalist 2017 annotations and locations); not given'
    """
    hint = f"needs --metadata {expected} (the iNaturalist 2017 annotations and locations)"
    if not metadata:
        return f"{hint}; not given"
    if not metadata.startswith("inat2017:"):
        return f"{hint}; --metadata '{metadata}' is not an inat2017: source"
    files = metadata[len("inat2017:"):].split("+")
    missing = [f for f in files if f and not Path(f).is_file()]
    if len(files) != 2 or not all(files):
        return f"{hint}; '{metadata}' does not name two files"
    if missing:
        return f"{hint}; {', '.join(missing)} not found"
    return None


class GeoClientsRunner(Runner):
    measures = {
        "observations": "adaptive S2 clients at each Nmax on builtin:observations",
        "metadata": "adaptive S2 clients at each Nmax on the --metadata table",
        "inaturalist": "adaptive S2 clients at TFF's Nmax values on the iNaturalist 2017 files, with TFF's counts",
    }
    schema = {
        "grid": ("numbers", True), "metadata_grid": ("numbers", True), "inat_grid": ("numbers", True),
        "inat_published": ("numbers", True), "inat_files": ("str", True), "seeds": ("ints", False),
    }

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        super().check_settings(settings, where)
        for key in ("grid", "metadata_grid", "inat_grid"):
            if any(int(v) != v for v in settings[key]) or len(settings[key]) < 2:
                raise HetbenchError(f"{where}: '{key}' must list at least two integer Nmax values")
        if len(settings["inat_published"]) != len(settings["inat_grid"]):
            raise HetbenchError(f"{where}: 'inat_published' needs one count per 'inat_grid' value")
        return settings

    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        seed = ctx.seeds[0]
        grid = [int(v) for v in settings["grid"]]
        counts, rows = client_counts(None, grid, seed)
        out = {"observations": Measurement([[c] for c in counts], x=[float(v) for v in grid], unit="clients",
                                           labels=[f"Nmax={v}" for v in grid])}
        facts: dict[str, Any] = {"observations_rows": rows, "seed": seed,
                                 "uncertainty": "none: the cell counts are deterministic"}
        mgrid = [int(v) for v in settings["metadata_grid"]]
        if ctx.metadata:
            try:
                mcounts, mrows = client_counts(ctx.metadata, mgrid, seed)
            except HetbenchError as exc:  # missing or unreadable data: not run, with the reason
                out["metadata"] = Measurement([], unit="clients", not_run=f"--metadata cannot be read: {exc}")
            else:  # only Nmax values at most a tenth of the table, where cells still split
                keep = [(n, c) for n, c in zip(mgrid, mcounts) if n * 10 <= mrows]
                facts["metadata"], facts["metadata_rows"] = ctx.metadata, mrows
                if len(keep) < 3:
                    out["metadata"] = Measurement([], unit="clients", not_run=(
                        f"the --metadata table has {mrows:,} rows: fewer than 3 Nmax values of {mgrid} are at most "
                        "a tenth of it"))
                else:
                    out["metadata"] = Measurement([[c] for _, c in keep], x=[float(n) for n, _ in keep],
                                                  unit="clients", labels=[f"Nmax={n}" for n, _ in keep])
        else:
            out["metadata"] = Measurement([], unit="clients", not_run="needs --metadata (a real geo-tagged table with "
                                          "latitude and longitude columns); not given")
        igrid = [int(v) for v in settings["inat_grid"]]
        why = inat_files(ctx.metadata, settings["inat_files"])
        if why is None:
            try:
                icounts = client_counts(ctx.metadata, igrid, seed)[0]
            except HetbenchError as exc:
                icounts, why = [], f"the iNaturalist files cannot be read: {exc}"
        if why is None:
            out["inaturalist"] = Measurement([[c] for c in icounts], x=[float(v) for v in igrid], unit="clients",
                                             published=[float(v) for v in settings["inat_published"]],
                                             labels=[f"Nmax={v}" for v in igrid])
        else:
            out["inaturalist"] = Measurement([], unit="clients", not_run=why)
        axes = Axes("Nmax (examples per cell at most)", "clients (S2 cells)", log_x=True, log_y=True)
        return RunOutput(out, {k: axes for k in out}, facts)
