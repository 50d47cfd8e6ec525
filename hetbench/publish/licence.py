"""The licence a split's maker gives it: recorded in ``hetbench.json``, shown by the card, checked by ``verify``.

A source hetbench ships carries its own licence (:mod:`hetbench.publish.attribution`); the user's own data
(RAW captures, a CSV, a parquet file) does not, and its card said ``license: unknown``. Editing that card
afterwards is what ``hetbench verify`` refuses (the card must be the one hetbench writes), so the licence is
given when the split is written: a Hugging Face licence id, or ``other`` with a name (lowercase
``[a-z0-9.-]``, the Hub's rule) and a link to its text, and optionally an attribution line that the card
prints and re-partitions keep. The manifest records it as ``licence``: it is metadata about the data, not part
of the split, so it does not enter the split's fingerprint.

:func:`hetbench.pipeline.make_split` and :func:`hetbench.publish.publish_split` take it as ``licence=``; every
builder (``build_iso_isp``, ``build_geo``, ...) publishes through them, so one given around a builder's call by
:func:`licensed` reaches the split it writes (the CLI's ``--license`` does this for every ``build`` and
``partition`` command)::

    from hetbench.builders.iso_isp import build_iso_isp
    from hetbench.publish.licence import given_licence, licensed

    with licensed(given_licence("cc-by-4.0", attribution="RAW captures: A. Person, 2026")):
        build_iso_isp("my-isp", raw_dir="my_raws", labels="labels.csv")
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import re
from dataclasses import asdict, dataclass
from typing import Any, Iterator, Mapping

from hetbench.errors import HetbenchError, marked
from hetbench.publish.attribution import HUB_LICENSES, SourceLicence

#: the option names a caller's own words use for the four fields (the CLI passes its flags)
FIELDS = {"license": "license", "license_name": "license_name", "license_link": "license_link",
          "attribution": "attribution"}

_NAME = re.compile(r"[a-z0-9][a-z0-9.-]*")
_LINK = re.compile(r"https?://[^\s/]+\S*")


@dataclass(frozen=True)
class GivenLicence:
    """A licence given by the maker of a split.

    Parameters
    ----------
    license : str
        A Hugging Face Hub licence id (``cc-by-4.0``, ``mit``, ...), or ``other``.
    license_name : str, optional
        With ``other``: the licence's name, lowercase ``[a-z0-9.-]`` (``my-lab-data-licence-1.0``).
    license_link : str, optional
        With ``other``: where its text is, an ``http(s)`` URL (the published folder holds only what hetbench
        writes, so the licence's text lives elsewhere).
    attribution : str, optional
        One line the card prints as the data's credit (who made the data, how to credit them).

    Examples
    --------
    >>> from hetbench.publish.licence import GivenLicence, given_licence
    >>> given_licence("CC-BY-4.0", attribution="Photos: A. Person, 2026")
    GivenLicence(license='cc-by-4.0', license_name=None, license_link=None, attribution='Photos: A. Person, 2026')
    >>> given_licence("other", "lab-licence-1.0", "https://example.org/licence").as_manifest()
    {'license': 'other', 'license_name': 'lab-licence-1.0', 'license_link': 'https://example.org/licence'}
    >>> given_licence(None) is None
    True
    """

    license: str
    license_name: str | None = None
    license_link: str | None = None
    attribution: str | None = None

    def as_manifest(self) -> dict[str, str]:
        """The manifest's ``licence`` entry: the fields that are set."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    def over(self, source: SourceLicence) -> SourceLicence:
        """The card's licence: this one, with the source's credits, papers and terms kept (a split of a builtin or
        corpus source made by a user still credits the data it came from and says under what licence it came)."""
        credits = ((f"{self.attribution}",) if self.attribution else ()) + tuple(source.credits)
        note = "Licence given by the maker of the data when the split (or the build it re-partitions) was written."
        if source.license != "unknown":
            own = f"`{source.license}`" + (f" (`{source.license_name}`)" if source.license_name else "")
            note += f" The source's own licence is {own}{': ' + source.note if source.note else '.'}"
        return SourceLicence(self.license, self.license_name, credits, source.bibtex, note, self.license_link)


def given_licence(license: str | None, license_name: str | None = None, license_link: str | None = None,
                  attribution: str | None = None, *, names: Mapping[str, str] = FIELDS) -> GivenLicence | None:
    """Check a licence given for a split and return it (None when ``license`` is None and nothing else is set).

    Parameters
    ----------
    license, license_name, license_link, attribution
        As :class:`GivenLicence`; ``license`` is case-insensitive.
    names : mapping, optional
        The caller's names of the four fields, for the error messages (the CLI passes ``--license`` ...).

    Raises
    ------
    HetbenchError
        An id the Hub does not know (with the closest ids, and ``other`` with a name and link for a licence
        it lacks), ``other`` without its name or link, a name that breaks the Hub's rule, a name or link
        without ``other``, an attribution that is not one line, or any field without ``license``.

    Examples
    --------
    >>> from hetbench.publish.licence import given_licence
    >>> given_licence("cc-by-5.0")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: license 'cc-by-5.0' is not a Hugging Face licence id (closest: cc-by-2.0, cc-by-3.0, cc-by-4.0); for a licence the Hub does not list, give 'other' with license_name and license_link
    """
    fields = {"license_name": license_name, "license_link": license_link, "attribution": attribution}
    if license is None:
        given = [names[k] for k, v in fields.items() if v is not None]
        if given:
            raise HetbenchError(f"{', '.join(given)} needs {names['license']}")
        return None
    lic = str(license).strip().lower()
    if lic not in HUB_LICENSES:
        close = difflib.get_close_matches(lic, sorted(HUB_LICENSES), n=3, cutoff=0.6)
        hint = f" (closest: {', '.join(sorted(close))})" if close else ""
        raise HetbenchError(f"{names['license']} '{license}' is not a Hugging Face licence id{hint}; for a licence "
                            f"the Hub does not list, give 'other' with {names['license_name']} and "
                            f"{names['license_link']}")
    if lic == "other":
        for key in ("license_name", "license_link"):
            if not fields[key]:
                raise HetbenchError(f"{names['license']} other needs {names[key]} (the Hub requires both)")
        if not _NAME.fullmatch(str(license_name)):
            raise HetbenchError(f"{names['license_name']} '{license_name}' must be lowercase letters, digits, '.' "
                                "and '-' (the Hub's rule), e.g. 'my-lab-licence-1.0'")
        if not _LINK.fullmatch(str(license_link)):
            raise HetbenchError(f"{names['license_link']} '{license_link}' must be an http(s) URL where the licence's "
                                "text is")
    else:
        given = [names[k] for k in ("license_name", "license_link") if fields[k] is not None]
        if given:
            raise HetbenchError(f"{', '.join(given)} only go with {names['license']} other ({lic} is a Hub id)")
    if attribution is not None and (not str(attribution).strip() or "\n" in str(attribution)):
        raise HetbenchError(f"{names['attribution']} must be one non-empty line")
    return GivenLicence(lic, license_name if lic == "other" else None, license_link if lic == "other" else None,
                        str(attribution).strip() if attribution is not None else None)


_ACTIVE: contextvars.ContextVar[GivenLicence | None] = contextvars.ContextVar("hetbench_licence", default=None)


@contextlib.contextmanager
def licensed(licence: GivenLicence | None) -> Iterator[GivenLicence | None]:
    """Give ``licence`` to every split written inside the block that is not given one explicitly (None: no
    change). Builders publish through :func:`hetbench.pipeline.make_split`, which reads it.

    Examples
    --------
    >>> from hetbench.publish.licence import GivenLicence, active_licence, licensed
    >>> with licensed(GivenLicence("mit")):
    ...     active_licence().license
    'mit'
    >>> active_licence() is None
    True
    """
    licence = check_licence_object(licence)
    token = _ACTIVE.set(licence if licence is not None else _ACTIVE.get())
    try:
        yield licence
    finally:
        _ACTIVE.reset(token)


def active_licence() -> GivenLicence | None:
    """The licence :func:`licensed` gives in the current block, or None."""
    return _ACTIVE.get()


def split_licence(source: str | None, table_license: str | None, given: GivenLicence | None) -> SourceLicence:
    """The licence a split's card shows: ``given`` over the source's (:func:`~hetbench.publish.attribution.card_licence`).

    Examples
    --------
    >>> from hetbench.publish.licence import GivenLicence, split_licence
    >>> split_licence("my.parquet", "other", None).license
    'unknown'
    >>> lic = split_licence("builtin:digits", None, GivenLicence("cc-by-sa-4.0", attribution="Made by us"))
    >>> lic.license, lic.credits[0], len(lic.credits) > 1
    ('cc-by-sa-4.0', 'Made by us', True)
    """
    from hetbench.publish.attribution import card_licence

    lic = card_licence(source, table_license)
    return given.over(lic) if given is not None else lic


def check_licence_object(licence: Any, where: str = "licence") -> GivenLicence | None:
    """``licence`` itself if it is None or a :class:`GivenLicence` that :func:`given_licence` accepts, else one
    clear :class:`~hetbench.errors.HetbenchError` (a string such as ``"mit"`` is not taken as a licence).

    Examples
    --------
    >>> from hetbench.publish.licence import check_licence_object
    >>> check_licence_object("mit")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: licence must be a GivenLicence (hetbench.publish.licence.given_licence('mit')), not str
    """
    if licence is None:
        return None
    if not isinstance(licence, GivenLicence):
        hint = f"given_licence({licence!r})" if isinstance(licence, str) else "given_licence(...)"
        raise HetbenchError(f"{where} must be a GivenLicence (hetbench.publish.licence.{hint}), not "
                            f"{type(licence).__name__}")
    return given_licence(licence.license, licence.license_name, licence.license_link, licence.attribution,
                         names={k: f"{where}.{k}" for k in FIELDS})


def resolve_licence(given: GivenLicence | None, inherited: Any, source: str) -> GivenLicence | None:
    """The licence a split is written with: ``given``, else the one its source build's maker gave
    (``inherited``, that build's manifest entry); a given licence without an attribution keeps the inherited
    attribution (the credit the data's maker asked for). Checked before anything is written.

    Examples
    --------
    >>> from hetbench.publish.licence import GivenLicence, resolve_licence
    >>> resolve_licence(GivenLicence("mit"), {"license": "cc-by-4.0", "attribution": "Lab"}, "b")
    GivenLicence(license='mit', license_name=None, license_link=None, attribution='Lab')
    >>> resolve_licence(None, {"license": "cc-by-99"}, "my-build")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: the source my-build: hetbench.json's licence.license 'cc-by-99' is not a Hugging Face licence id (closest: cc-by-2.5, cc-by-3.0, cc-by-4.0); for a licence the Hub does not list, give 'other' with hetbench.json's licence.license_name and hetbench.json's licence.license_link
    """
    given = check_licence_object(given)
    try:
        before = manifest_licence({"licence": inherited})
    except HetbenchError as exc:
        raise HetbenchError(f"the source {source}: {marked(exc)}") from None
    if given is None:
        return before
    if given.attribution is None and before is not None and before.attribution:
        return GivenLicence(given.license, given.license_name, given.license_link, before.attribution)
    return given


def manifest_licence(manifest: Mapping[str, Any]) -> GivenLicence | None:
    """The licence a manifest records (``licence``), checked as :func:`given_licence` checks it; None if none.

    Raises
    ------
    HetbenchError
        The entry is not an object of the four fields, or breaks a rule of :func:`given_licence`.

    Examples
    --------
    >>> from hetbench.publish.licence import manifest_licence
    >>> manifest_licence({"licence": {"license": "mit"}}).license
    'mit'
    >>> manifest_licence({}) is None
    True
    """
    entry = manifest.get("licence")
    if entry is None:
        return None
    if not isinstance(entry, Mapping) or set(entry) - set(FIELDS) or "license" not in entry \
            or not all(isinstance(v, str) for v in entry.values()):
        raise HetbenchError("hetbench.json's 'licence' is not an object of license, license_name, license_link "
                            "and attribution strings")
    try:
        return given_licence(**entry, names={k: f"hetbench.json's licence.{k}" for k in FIELDS})
    except HetbenchError as exc:
        raise HetbenchError(marked(exc)) from None


__all__ = ["GivenLicence", "active_licence", "check_licence_object", "given_licence", "licensed", "manifest_licence",
           "resolve_licence", "split_licence"]
