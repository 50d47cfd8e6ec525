"""The benchmarks' report: every line printed as it comes and kept for the results file."""

from __future__ import annotations

from pathlib import Path


class Report:
    """``say = Report(); say("line")`` prints the line and keeps it; ``say.save(path)`` writes them all.

    Examples
    --------
    >>> say = Report()
    >>> say("ratio 1.2x")
    ratio 1.2x
    >>> say.lines
    ['ratio 1.2x']
    """

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def save(self, path: Path) -> None:
        """Write the lines to ``path`` atomically (a hidden temporary file renamed into place)."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text("\n".join(self.lines) + "\n")
        tmp.replace(path)
