"""One registry style for every pluggable part: an explicit mapping of names to implementations.

Sources, partitioners, embedders, ISP stages, training algorithms, test policies and verify's
rebuilders are each a :class:`Registry`: a read-only mapping written out in one place (no import
side effects fill it), and one dispatcher that validates the name, lists the valid ones when it is
unknown, and passes on only the keyword arguments the implementation accepts. This is the pattern
of colour-science's method mappings (``colour.models.rgb.transfer_functions``: a mapping of method
names plus one function that validates the method and filters the arguments).

This module depends on nothing but :mod:`hetbench.errors`, so every layer (the ISP pipeline
included) may use it.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Generic, Iterator, Mapping, TypeVar

from hetbench.errors import HetbenchError

T = TypeVar("T")


class UnknownNameError(HetbenchError, KeyError):
    """A name that is not in a registry: bad input (exit code 2) and a ``KeyError`` for mappings."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class Registry(Mapping[str, T], Generic[T]):
    """A read-only, ordered mapping of names to implementations, with one dispatcher.

    Parameters
    ----------
    kind : str
        What the names are, for messages ("partition method", "embedder", "ISP stage").
    entries : Mapping[str, T]
        The names and their implementations, in the order :meth:`names` lists them.
    option : str, optional
        The command-line option that takes the name (``--algo``), named in messages.

    Examples
    --------
    >>> from hetbench.registry import Registry
    >>> shapes = Registry("shape", {"square": lambda side: side * side, "line": lambda side: 0})
    >>> shapes.call("square", side=3, colour="red")  # arguments it does not take are dropped
    9
    >>> shapes["circle"]
    Traceback (most recent call last):
    ...
    hetbench.registry.UnknownNameError: unknown shape 'circle'; choose one of: square, line
    """

    def __init__(self, kind: str, entries: Mapping[str, T], option: str | None = None) -> None:
        self.kind = kind
        self.option = option
        self._entries = dict(entries)

    def __getitem__(self, name: str) -> T:
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            where = f" for {self.option}" if self.option else ""
            raise UnknownNameError(
                f"unknown {self.kind} '{name}'{where}; choose one of: {', '.join(self._entries)}"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, [{', '.join(self._entries)}])"

    def names(self) -> tuple[str, ...]:
        """The valid names, in registration order."""
        return tuple(self._entries)

    def call(self, name: str, /, *args: Any, **kwargs: Any) -> Any:
        """Call the implementation ``name`` with ``args`` and the ``kwargs`` it accepts."""
        impl = self[name]
        return impl(*args, **filter_kwargs(impl, kwargs))  # type: ignore[operator]


def filter_kwargs(fn: Callable[..., Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``kwargs`` that ``fn`` accepts (all of them if it takes ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return dict(kwargs)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(kwargs)
    return {k: v for k, v in kwargs.items() if k in params}
