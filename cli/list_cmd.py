"""``hetbench list``: what hetbench has (built-ins, partitioners, builders, recipes, profiles, algorithms, models)."""

from __future__ import annotations

import click

from hetbench.catalog import SECTIONS


def _providers():
    """The sections of the layers above the core: the ``hetbench build`` commands and the trainer's registries."""
    from hetbench.catalog import Entry, registry_entries

    def builders():
        from hetbench.cli.build import build

        return [Entry(name, cmd.get_short_help_str(limit=200)) for name, cmd in build.commands.items()]

    def algorithms():
        from hetbench.train.algorithms import ALGORITHMS

        return registry_entries(ALGORITHMS)

    def models():
        from hetbench.train.models import MODELS

        return registry_entries(MODELS)

    return {"builders": builders, "algorithms": algorithms, "models": models}


@click.command("list", short_help="List built-ins, partitioners, builders, recipes, profiles, algorithms, models.")
@click.argument("sections", nargs=-1, type=click.Choice(SECTIONS))
def list_cmd(sections: tuple[str, ...]) -> None:
    """List what hetbench has, with one line each: built-in sources, partition methods, build families,
    canonical recipes, device profile sets, training algorithms and models (default: every section).

    \b
    Examples:
      hetbench list
      hetbench list partitioners algorithms
    """
    from hetbench.catalog import catalog, format_catalog

    click.echo(format_catalog(catalog(sections or None, _providers())))
