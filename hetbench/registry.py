"""One registry style for every pluggable part: an explicit mapping of names to implementations.

Sources, partitioners, embedders, ISP stages, training algorithms, test policies and verify's
rebuilders are each a :class:`Registry`: a mapping written out in one place (no import side effects fill
it), and one dispatcher that validates the name, lists the valid ones when it is unknown, and passes on
only the keyword arguments the implementation accepts. Three of them take plugins without a fork:
training algorithms (entry-point group ``hetbench.algorithms``), partitioners (``hetbench.partitioners``)
and embedders (``hetbench.embedders``). A registry with a ``plugins`` group loads that group's entry
points the first time it is read, checks each with its ``validate`` hook and adds it
(:meth:`Registry.register`, which a program may also call itself). This is the pattern
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
        return HetbenchError.__str__(self)


class Registry(Mapping[str, T], Generic[T]):
    """A read-only, ordered mapping of names to implementations, with one dispatcher.

    Parameters
    ----------
    kind : str
        What the names are, for messages ("partition method", "embedder", "ISP stage").
    entries : Mapping[str, T]
        The names and their implementations, in the order :meth:`names` lists them.
    option : str, optional
        The parameter that takes the name, as messages mark it (``"`algo`"``: ``algo`` to a Python caller,
        ``--algo`` on the command line).
    plugins : str, optional
        The entry-point group whose entry points are added the first time the registry is read
        (``hetbench.algorithms``); None: none.
    validate : Callable[[str, T], None], optional
        Checks an implementation before :meth:`register` adds it (raises :class:`HetbenchError`).

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

    def __init__(self, kind: str, entries: Mapping[str, T], option: str | None = None, plugins: str | None = None,
                 validate: Callable[[str, Any], None] | None = None) -> None:
        self.kind = kind
        self.option = option
        self.plugins = plugins
        self._validate = validate
        self._entries = dict(entries)
        self._plugins_loaded = plugins is None

    def register(self, name: str, impl: T) -> T:
        """Add ``impl`` under ``name`` (after the registry's ``validate`` check) and return it.

        Parameters
        ----------
        name : str
            The new name; a name already taken by another implementation is refused.
        impl : T
            The implementation.

        Returns
        -------
        T
            ``impl`` (so that ``register`` can decorate a class).

        Raises
        ------
        HetbenchError
            A name taken by another implementation, or an implementation ``validate`` refuses.

        Examples
        --------
        >>> from hetbench.registry import Registry
        >>> shapes = Registry("shape", {"square": lambda side: side * side})
        >>> _ = shapes.register("cube", lambda side: side ** 3)
        >>> shapes.names(), shapes.call("cube", side=2)
        (('square', 'cube'), 8)
        >>> shapes.register("square", abs)
        Traceback (most recent call last):
        ...
        hetbench.errors.HetbenchError: 'square' is already a registered shape; give the plugin another name
        """
        if not isinstance(name, str) or not name.strip():
            raise HetbenchError(f"a {self.kind} needs a non-empty name (got {name!r})")
        if name in self._entries and self._entries[name] is not impl:
            raise HetbenchError(f"'{name}' is already a registered {self.kind}; give the plugin another name")
        if self._validate is not None:
            self._validate(name, impl)
        self._entries[name] = impl
        return impl

    def _load_plugins(self) -> None:
        """Register the entry points of the ``plugins`` group, once (each import error is one line)."""
        if self._plugins_loaded:
            return
        from importlib.metadata import entry_points

        self._plugins_loaded = True  # a validate hook may read the registry meanwhile
        try:
            for ep in sorted(entry_points(group=self.plugins), key=lambda e: (e.name, e.value)):
                try:
                    impl = ep.load()
                except Exception as exc:  # a plugin's own import error, whatever it is
                    raise HetbenchError(f"the {self.kind} plugin '{ep.name}' ({ep.value}, entry point group "
                                        f"{self.plugins}) does not import: {type(exc).__name__}: {exc}") from None
                self.register(ep.name, impl)
        except BaseException:
            self._plugins_loaded = False  # every later read says so again
            raise

    def __getitem__(self, name: str) -> T:
        self._load_plugins()
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            where = f" for {self.option}" if self.option else ""
            raise UnknownNameError(
                f"unknown {self.kind} '{name}'{where}; choose one of: {', '.join(self._entries)}"
            ) from None

    def __iter__(self) -> Iterator[str]:
        self._load_plugins()
        return iter(self._entries)

    def __len__(self) -> int:
        self._load_plugins()
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, [{', '.join(self._entries)}])"

    def names(self) -> tuple[str, ...]:
        """The valid names, in registration order (built-ins first, then plugins)."""
        self._load_plugins()
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
