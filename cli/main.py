"""Entry point: ``hetbench <group> <name> [options]``.

Bad input of any kind (a :class:`HetbenchError`, or a click usage error) is one line on stderr and
exit code 2; never a traceback.
"""

from __future__ import annotations

import sys

import click

from hetbench.version import __version__
from hetbench.errors import HetbenchError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="hetbench")
def cli() -> None:
    """hetbench: build, measure, publish and verify federated splits with real heterogeneity.

    \b
    Examples:
      hetbench partition dirichlet --alpha 0.1 --clients 20
      hetbench report hetbench_splits/digits-dirichlet-client-a0.1-n20-s0
      hetbench verify hetbench_splits/digits-dirichlet-client-a0.1-n20-s0
    """


def _register() -> None:
    from hetbench.cli.build import build
    from hetbench.cli.leaderboard import leaderboard
    from hetbench.cli.partition import partition
    from hetbench.cli.tools import compare_clusterings, publish, report, verify
    from hetbench.cli.train import train

    cli.add_command(partition)
    cli.add_command(build)
    cli.add_command(report)
    cli.add_command(verify)
    cli.add_command(publish)
    cli.add_command(compare_clusterings)
    cli.add_command(train)
    cli.add_command(leaderboard)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry: runs the click group and turns bad input into exit code 2."""
    _register()
    try:
        code = cli.main(args=argv, prog_name="hetbench", standalone_mode=False)
    except HetbenchError as exc:
        click.echo(f"hetbench: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(0)
    except click.ClickException as exc:
        click.echo(f"hetbench: error: {exc.format_message()}".replace("\n", " "), err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("hetbench: aborted", err=True)
        sys.exit(130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
