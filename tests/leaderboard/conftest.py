"""Fixtures of the leaderboard's tests."""

from __future__ import annotations

from typing import Callable

import pytest


@pytest.fixture
def run_lb(run_cli: Callable[..., tuple[int, str, str]]) -> Callable[..., tuple[int, str, str]]:
    """The real entry point (one-line errors, exit 2) with the leaderboard command registered."""
    from hetbench.cli.leaderboard import leaderboard
    from hetbench.cli.main import cli

    cli.add_command(leaderboard)
    return lambda *args: run_cli("leaderboard", *args)
