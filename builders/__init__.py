"""Benchmark-family builders: each makes its table (rendering images, joining metadata), chooses
its partitioner and hands both to the one pipeline (:class:`hetbench.pipeline.PreparedSplit`).

``REBUILDERS`` maps the recipe method of every family that renders its own rows to the function
that re-renders a recorded build; ``hetbench verify`` receives it from the layer above (the CLI or
:func:`hetbench.verify`), so the core never imports the builders.
"""

from __future__ import annotations

from typing import Any, Callable


def _rebuild(module: str) -> Callable[..., Any]:
    def rebuild(manifest: dict, num_proc: int = 1):
        import importlib

        return importlib.import_module(f"hetbench.builders.{module}").rebuild(manifest, num_proc)

    rebuild.__doc__ = f"Re-run a recorded ``{module}`` build (imports the builder on first use)."
    return rebuild


def rebuilders():
    """The :class:`~hetbench.registry.Registry` of recipe method -> rebuild function.

    Examples
    --------
    >>> from hetbench.builders import rebuilders
    >>> rebuilders().names()
    ('iso-isp', 'devices', 'synthetic-color', 'real-devices', 'feature-noise', 'label-noise')
    """
    from hetbench.registry import Registry

    return Registry("builder", {"iso-isp": _rebuild("iso_isp"), "devices": _rebuild("devices"),
                                "synthetic-color": _rebuild("synthetic_color"), "real-devices": _rebuild("real_devices"),
                                "feature-noise": _rebuild("noise"), "label-noise": _rebuild("noise")})
