"""Scale-out engines (issue 13), one run, ratios printed.

(a) Ray for builds: the render step of ``hetbench build iso-isp --stages all`` (every Table 3 variant,
    the default 224-px output) on 20 captures (the first 20 of the embedded photographs' 384-px crops),
    through the builders' job runner (:func:`hetbench.builders.captures.run_jobs`), with the local pool
    of 2 workers (``--engine local --num-proc 2``) and with Ray on 2 CPUs (``--engine ray``). Target:
    Ray's wall time <= 1.15x the local one. The local Ray instance (``ray.init(num_cpus=2)``) is
    started untimed beforehand, as a running cluster would be; both timings include starting their
    worker processes and the workers' imports of the ISP (the local pool's forkserver preload, Ray's
    first task on each worker), the rendering, and the PNG results coming back in job order. Capture
    selection, assembly and publishing are the same code for both engines and are left out. The two
    runs' results are checked to be the same bytes.
(b) Flower for training: ``benchmarks/engines_flower.py``'s ``run(report)`` (written alongside),
    when that file is present; skipped with a note otherwise.
(c) with (b), not under ``--quick``: ``engines_flower.sweep_route``, the README's two-algorithm sweep
    with ``--engine flower`` and ``--engine local`` against the 33 s of the earlier in-process route.

Run: ``python benchmarks/bench_engines.py`` (about 2 minutes on 2 cores); ``--quick`` for a smoke run
(4 captures, stages wb,tone); ``--skip-flower`` leaves (b) out. Needs the ``ray`` extra for (a) and the
``flower`` extra for (b). Figures go to ``--results`` (default ``benchmarks/results_engines.txt``).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path
from typing import Callable

# the local Ray instance binds 127.0.0.1 only (Ray treats the machine as a single node)
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the sibling modules engines_flower and report
    sys.path.insert(0, str(HERE))

from report import Report  # noqa: E402


def part_a(say: Callable[[str], None], quick: bool) -> dict:
    """(a): local pool vs Ray, 2 workers each, on the same render jobs."""
    import logging
    import warnings

    import ray

    from hetbench.builders.captures import capture_jobs, run_jobs
    from hetbench.engines import EngineSpec
    from hetbench.isp.jobs import Render
    from hetbench.isp.pipeline import parse_stage_list, table3_variants

    stages = "wb,tone" if quick else "all"
    n = 4 if quick else 20
    pipelines = table3_variants(parse_stage_list(stages))
    renders = [Render(p.short_name, str(p)) for p in pipelines]
    jobs = capture_jobs(None, None, renders, 224, 0, 3, 384)[:n]
    say(f"(a) render step of build iso-isp --stages {stages}: {len(jobs)} captures x {len(renders)} variants, 224 px, 2 workers")

    t0 = time.perf_counter()
    local = run_jobs(jobs, 2, quiet=True)
    t_local = time.perf_counter() - t0

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)  # untimed
    try:
        t0 = time.perf_counter()
        remote = run_jobs(jobs, 2, quiet=True, engine=EngineSpec("ray"))
        t_ray = time.perf_counter() - t0
    finally:
        ray.shutdown()
    same = [(a.images, a.stats, a.skipped) for a in local] == [(b.images, b.stats, b.skipped) for b in remote]
    ratio = t_ray / t_local
    say(f"  local pool (forkserver, 2 processes): {t_local:7.2f} s")
    say(f"  Ray (2 CPUs, tasks num_cpus=1):       {t_ray:7.2f} s")
    say(f"  Ray / local = {ratio:.3f}x (target <= 1.15x: {'met' if ratio <= 1.15 else 'NOT met'}); "
        f"results identical: {same}")
    if not same:
        raise SystemExit("the Ray engine's results differ from the local engine's")
    return {"local_s": t_local, "ray_s": t_ray, "ratio": ratio}


def part_b(say: Callable[[str], None], quick: bool) -> dict | None:
    """(b): ``engines_flower.run`` when ``benchmarks/engines_flower.py`` is present."""
    if not (HERE / "engines_flower.py").is_file():
        say("(b) Flower: benchmarks/engines_flower.py is not present; skipped")
        return None
    import engines_flower

    out = engines_flower.run(say, quick=quick)
    if not quick:  # (c): the README's two-algorithm sweep against run_simulation's earlier cost
        out["sweep_route"] = engines_flower.sweep_route(say)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Smoke run at small sizes.")
    parser.add_argument("--skip-flower", action="store_true", help="Leave part (b) out.")
    parser.add_argument("--results", default=str(HERE / "results_engines.txt"), help="Where the figures go.")
    args = parser.parse_args(argv)

    say = Report()
    say(f"bench_engines: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, load "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}, python {platform.python_version()}"
        + (" (quick)" if args.quick else ""))
    part_a(say, args.quick)
    if args.skip_flower:
        say("(b) Flower: skipped (--skip-flower)")
    else:
        part_b(say, args.quick)
    say(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not args.quick:
        say.save(Path(args.results))


if __name__ == "__main__":
    main()
