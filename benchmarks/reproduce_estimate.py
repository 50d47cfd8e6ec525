"""How close ``hetbench reproduce --dry-run`` comes to what the claims' runs took: per claim, the estimate made
here against the training seconds its runs measured (``runs.train_seconds`` of a ``claims.json``, the sum of
its stored runs' own times), and the ratio, which issue 44 wants within 0.7-1.4.

Run it on the machine (and in the quiet) the claims ran on: the estimate times this machine's trainer, so a
loaded machine, or another one, moves the ratio.

    python benchmarks/reproduce_estimate.py docs/claims/quick-a/claims.json [more claims.json ...]

Each claims.json is estimated in its own mode with its own seeds and each claim's settings as they are
defined now (a claim whose quick settings changed since the record was made is flagged, not compared).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(paths: list[str]) -> int:
    from hetbench.reproduce.claims import load_claim
    from hetbench.reproduce.cost import format_duration
    from hetbench.reproduce.estimates import estimate_claims
    from hetbench.train.device import resolve_device

    device = str(resolve_device("auto"))
    timings: dict = {}
    for path in paths:
        doc = json.loads(Path(path).read_text())
        print(f"{path} ({doc['mode']} mode), estimated on {device} here:")
        print(f"  {'claim':<26} {'measured':>9} {'estimate':>9}  ratio (estimate / measured)")
        for record in doc["claims"]:
            measured = (record.get("runs") or {}).get("train_seconds")
            if not measured:
                continue
            claim = load_claim(record["id"])
            if claim.settings[doc["mode"]] != record["settings"]:
                print(f"  {record['id']:<26} settings changed since this record: not compared")
                continue
            cost = estimate_claims([claim], doc["mode"], record["seeds"], device, timings=timings)[0]
            ratio = cost.seconds / measured
            flag = "" if 0.7 <= ratio <= 1.4 else "   outside 0.7-1.4"
            print(f"  {record['id']:<26} {format_duration(measured):>9} {format_duration(cost.seconds):>9}  "
                  f"{ratio:.2f}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["docs/claims/quick-a/claims.json"]))
