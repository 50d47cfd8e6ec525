"""Recorded parameters, checked against the types the function that takes them declares.

A manifest records the parameters of its partitioner (``recipe.partition.params``) and of its builder
(``recipe.build.params``), and ``hetbench verify`` passes them back as keyword arguments. A folder is
input like any other: a parameter that names no argument, or whose value has another type than the
argument's annotation (a string for ``num_clients: int``, a list for ``alpha: float``), is refused here
in one line, before anything runs, rather than failing somewhere inside the partitioner or builder.
:func:`check_params` reads the function's signature and its type hints (``int`` takes no ``bool``,
``float`` takes an ``int``; ``X | None``, ``list[X]``/``Sequence[X]`` as a JSON list,
``dict[K, V]``/``Mapping[K, V]`` as a JSON object, ``Literal``); a hint it does not know is left to the
function, and a class (an engine, a callable) takes no JSON value at all.
"""

from __future__ import annotations

import collections.abc
import inspect
import math
import types
import typing
from typing import Any, Callable, Iterable, Mapping

from hetbench.errors import HetbenchError

_SEQUENCES = (list, tuple, collections.abc.Sequence, collections.abc.Iterable, collections.abc.Collection)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


def matches(value: Any, hint: Any) -> bool:
    """Whether a JSON ``value`` fits the type ``hint``.

    Parameters
    ----------
    value : object
        A value read from JSON (None, bool, int, float, str, list, dict).
    hint : type or typing construct
        The annotation of the argument it is passed to.

    Examples
    --------
    >>> from typing import Mapping, Sequence
    >>> from hetbench.param_types import matches
    >>> matches(3, int), matches(True, int), matches(3, float), matches(float("nan"), float)
    (True, False, True, False)
    >>> matches(None, int | None), matches([1, 2], Sequence[int]), matches({"a": 1.5}, Mapping[str, float])
    (True, True, True)
    >>> matches("x", Sequence[int]), matches({"a": "b"}, dict[str, float]), matches({}, object)
    (False, False, True)
    """
    if hint is Any or hint is object:
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        return any(matches(value, a) for a in args)
    if hint is None or hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if hint is str:
        return isinstance(value, str)
    if origin is typing.Literal:
        return any(value == a and type(value) is type(a) for a in args)
    if origin in _SEQUENCES or hint in _SEQUENCES:
        if not isinstance(value, list):
            return False
        if origin is tuple and len(args) > 1 and args[-1] is not Ellipsis:  # tuple[X, Y]: one item each
            return len(value) == len(args) and all(matches(v, a) for v, a in zip(value, args))
        return all(matches(v, args[0] if args else Any) for v in value)
    if origin in _MAPPINGS or hint in _MAPPINGS:
        if not isinstance(value, dict):
            return False
        key, val = args if len(args) == 2 else (Any, Any)
        return all(matches(k, key) and matches(v, val) for k, v in value.items())
    if origin is None and isinstance(hint, type):
        return isinstance(value, hint)  # a class (an engine spec, a table): never a JSON value
    if origin is not None and origin is collections.abc.Callable:
        return False
    return True  # a construct this check does not know: the function checks it


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


def describe(hint: Any) -> str:
    """A type hint as a message names it (``int``, ``str | None``, ``Sequence[int] | None``).

    Parameters
    ----------
    hint : type or typing construct
        An annotation.

    Examples
    --------
    >>> from typing import Optional, Sequence
    >>> from hetbench.param_types import describe
    >>> describe(int), describe(str | None), describe(Optional[Sequence[int]])
    ('int', 'str | None', 'Optional[Sequence[int]]')
    """
    text = getattr(hint, "__name__", None) if isinstance(hint, type) else None
    return text or str(hint).replace("typing.", "").replace("collections.abc.", "").replace("NoneType", "None")


def check_params(fn: Callable, params: Any, where: str, exclude: Iterable[str] = (),
                 hints: Mapping[str, Any] | None = None) -> None:
    """Refuse recorded ``params`` that ``fn`` does not take, or whose types its annotations exclude.

    Parameters
    ----------
    fn : callable
        The function (or class: its ``__init__``) the parameters are passed to as keywords.
    params : object
        What the manifest records (must be a JSON object).
    where : str
        The manifest key, for the message (``recipe.partition.params``).
    exclude : iterable of str
        Arguments the caller passes itself (``seed``, ``num_proc``, ``quiet``): never recorded ones. Every
        other argument without a default must be recorded.
    hints : mapping, optional
        Types that replace ``fn``'s annotations for some arguments (a value the caller converts first,
        e.g. device weights recorded as a mapping and passed as a file).

    Raises
    ------
    HetbenchError
        ``hetbench.json is malformed: ...`` naming the key, its value's type and the declared one.

    Examples
    --------
    >>> from hetbench.param_types import check_params
    >>> def f(num_clients: int = 10, alpha: float = 0.5, seed: int = 0): ...
    >>> check_params(f, {"num_clients": 4, "alpha": 1}, "recipe.partition.params", exclude=("seed",))
    >>> check_params(f, {"num_clients": "4"}, "recipe.partition.params")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: hetbench.json is malformed: 'recipe.partition.params.num_clients' is a string ('4'), not int
    >>> check_params(f, {"seed": 1}, "recipe.partition.params", exclude=("seed",))
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: hetbench.json is malformed: 'recipe.partition.params.seed' is not a parameter this recipe records
    """
    if not isinstance(params, dict):
        raise HetbenchError(f"hetbench.json is malformed: '{where}' is {_type_name(params)}, not an object")
    target = fn.__init__ if isinstance(fn, type) else fn
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):  # pragma: no cover - a builtin without a signature
        return
    try:
        declared = typing.get_type_hints(target)
    except Exception:  # annotations naming what only type checkers import: left to the function
        declared = {}
    declared.update(hints or {})
    taken = {name for name, p in signature.parameters.items()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name != "self"} - set(exclude)
    missing = [name for name in sorted(taken) if signature.parameters[name].default is inspect.Parameter.empty
               and name not in params]
    if missing:
        raise HetbenchError(f"hetbench.json is malformed: '{where}' lacks '{missing[0]}'")
    any_key = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())  # **kwargs: it checks them
    for key, value in params.items():
        if key not in taken and not (any_key and key not in set(exclude)):
            raise HetbenchError(f"hetbench.json is malformed: '{where}.{key}' is not a parameter this recipe records")
        hint = declared.get(key)
        if hint is not None and not matches(value, hint):
            shown = repr(value)
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            raise HetbenchError(f"hetbench.json is malformed: '{where}.{key}' is {_type_name(value)} ({shown}), "
                                f"not {describe(hint)}")


__all__ = ["check_params", "describe", "matches"]
