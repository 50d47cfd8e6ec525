"""``--license``, ``--license-name``, ``--license-link`` and ``--attribution``: the licence the maker of a split
gives its data, on every command that writes a split (``hetbench build ...``, ``hetbench partition ...``).

Checked before anything is read or written (:func:`hetbench.publish.licence.given_licence`), then given to the
split the command writes (:func:`hetbench.publish.licence.licensed`): the manifest records it, the card shows
it, ``hetbench verify`` checks the card against it, and a re-partition of the split keeps it.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import click

#: the CLI's names of the licence fields, for error messages
FLAGS = {"license": "--license", "license_name": "--license-name", "license_link": "--license-link",
         "attribution": "--attribution"}


def licence_options(fn: Callable) -> Callable:
    """Add the four licence options to a click command that writes a split; the command runs inside
    :func:`~hetbench.publish.licence.licensed` with the licence they give (nothing when none is given)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, license: str | None, license_name: str | None, license_link: str | None,
                attribution: str | None, **kwargs: Any) -> Any:
        from hetbench.publish.licence import given_licence, licensed

        given = given_licence(license, license_name, license_link, attribution, names=FLAGS)
        with licensed(given):
            return fn(*args, **kwargs)

    options = [
        click.option("--license", default=None, metavar="ID",
                     help="Licence of the data (a Hugging Face licence id: cc-by-4.0, cc0-1.0, mit, ...; or other with "
                     "--license-name and --license-link): recorded in hetbench.json, shown in the card, checked by verify. "
                     "Default: the source's own licence, 'unknown' for your own files."),
        click.option("--license-name", default=None, metavar="NAME",
                     help="With --license other: the licence's name, lowercase [a-z0-9.-] (the Hub's rule)."),
        click.option("--license-link", default=None, metavar="URL",
                     help="With --license other: the http(s) URL where its text is."),
        click.option("--attribution", default=None, metavar="TEXT",
                     help="One line crediting who made the data; the card prints it and re-partitions keep it."),
    ]
    for opt in reversed(options):
        wrapper = opt(wrapper)
    return wrapper
