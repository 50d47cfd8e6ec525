"""The libraries whose release could decide a published byte, and their versions where a split was built.

``hetbench.json`` records them under ``built_with`` (:func:`library_versions`). They are a record, not part of
the split's identity: the bytes of shards, report and card do not depend on them (docs/output-contract.md,
"Exact arithmetic, stage by stage"), except what each library writes about itself (pyarrow's name in every
Parquet footer, matplotlib's in every PNG). When ``hetbench verify`` finds a file that differs, it names the
file and every recorded version that differs from this machine's (:func:`version_note`), the first thing to
suspect when an admitted release changed a result.
"""

from __future__ import annotations

from importlib import metadata
from typing import Mapping

#: distributions (pip names) whose arithmetic, codecs or writers reach a published file: pixels (numpy,
#: OpenCV, Pillow, LibRaw through rawpy, scikit-image, colour-science), partitions and reports (numpy, SciPy,
#: scikit-learn, s2sphere), shards (pyarrow, datasets) and plots (matplotlib)
BYTE_DECIDING = ("numpy", "opencv-python-headless", "pillow", "rawpy", "scikit-image", "colour-science", "scipy",
                 "scikit-learn", "s2sphere", "pyarrow", "datasets", "matplotlib")


def library_versions() -> dict[str, str]:
    """The installed version of every :data:`BYTE_DECIDING` distribution (``absent`` when not installed), read
    from the installed metadata (nothing is imported).

    Examples
    --------
    >>> from hetbench.publish.libraries import BYTE_DECIDING, library_versions
    >>> versions = library_versions()
    >>> list(versions) == list(BYTE_DECIDING), versions["numpy"].split(".")[0]
    (True, '2')
    """
    out = {}
    for name in BYTE_DECIDING:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def differing_versions(recorded: Mapping[str, str] | None, here: Mapping[str, str] | None = None) -> list[str]:
    """``name recorded -> here`` for every recorded library whose version here differs, in the record's order.

    Parameters
    ----------
    recorded : mapping, optional
        A manifest's ``built_with.libraries`` (None: a manifest written before versions were recorded).
    here : mapping, optional
        This machine's (default :func:`library_versions`).

    Examples
    --------
    >>> from hetbench.publish.libraries import differing_versions
    >>> differing_versions({"numpy": "2.0.2", "pillow": "12.0.0"}, {"numpy": "2.4.6", "pillow": "12.0.0"})
    ['numpy 2.0.2 -> 2.4.6']
    """
    if not recorded:
        return []
    here = library_versions() if here is None else here
    return [f"{name} {v} -> {here.get(name, 'absent')}" for name, v in recorded.items() if here.get(name, "absent") != v]


def version_note(manifest: Mapping) -> str:
    """What a FAILED line adds about the libraries: the recorded versions that differ here, or that none does.

    Examples
    --------
    >>> from hetbench.publish.libraries import library_versions, version_note
    >>> version_note({"built_with": {"libraries": {**library_versions(), "numpy": "1.0"}}})[:53]
    '; built with other library versions than this machine'
    >>> version_note({"built_with": {"libraries": library_versions()}})
    '; the libraries that decide bytes have the versions it was built with'
    >>> version_note({}), version_note({"built_with": ["x"]}), version_note({"built_with": {"libraries": 3}})
    ('', '', '')
    """
    built = manifest.get("built_with")
    recorded = built.get("libraries") if isinstance(built, Mapping) else None
    if not isinstance(recorded, Mapping) or not recorded:
        return ""  # none recorded (an older folder) or not a record at all: nothing to say about versions
    recorded = {str(k): str(v) for k, v in recorded.items()}
    differ = differing_versions(recorded)
    if not differ:
        return "; the libraries that decide bytes have the versions it was built with"
    return f"; built with other library versions than this machine has ({', '.join(differ)})"


__all__ = ["BYTE_DECIDING", "differing_versions", "library_versions", "version_note"]
