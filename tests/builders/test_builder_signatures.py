"""The builders are a documented Python API: every public ``build_*`` function is exported by ``hetbench``,
takes its parameters by name, and describes each of them (no more, no fewer) in its numpydoc Parameters
section; the CLI passes its options under the same names and with the same defaults."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import hetbench

PUBLIC = sorted(n for n in hetbench.__all__ if n in hetbench._LAZY and hetbench._LAZY[n][0].startswith("hetbench.builders."))
#: builder function -> the ``hetbench build`` command that calls it
COMMANDS = {"build_iso_isp": "iso-isp", "build_devices": "devices", "build_real_devices": "real-devices",
            "build_geo": "geo", "build_users": "users", "build_digits_domains": "digits-domains"}
#: (builder, parameter) -> why the CLI's default differs from the function's
CLI_DEFAULTS_DIFFER = {("build_devices", "clients"): "--clients None means 50 phones (or one per synthetic device)",
                       ("build_devices", "engine"): "--engine names it; the function takes its EngineSpec",
                       ("build_iso_isp", "engine"): "--engine names it; the function takes its EngineSpec"}


def _section(doc: str, title: str) -> list[str]:
    lines = inspect.cleandoc(doc).splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.strip() == title and set(lines[i + 1].strip()) == {"-"}:
            body = []
            for j in range(i + 2, len(lines)):
                if j + 1 < len(lines) and lines[j].strip() and set(lines[j + 1].strip()) == {"-"}:
                    break  # the next section's title
                body.append(lines[j])
            return body
    return []


def documented(doc: str) -> list[str]:
    """The parameter names a numpydoc Parameters section describes (``a, b : int`` names two)."""
    names = []
    for line in _section(doc, "Parameters"):
        if line and not line[0].isspace():
            names += [n.strip().lstrip("*") for n in line.split(" : ")[0].split(",")]
    return names


def _builder_functions() -> set[str]:
    """Every public ``build_*`` function defined in a builder module."""
    import hetbench.builders as pkg

    found = set()
    for info in pkgutil.iter_modules(pkg.__path__, "hetbench.builders."):
        module = importlib.import_module(info.name)
        found |= {n for n, f in vars(module).items()
                  if n.startswith("build_") and inspect.isfunction(f) and f.__module__ == info.name}
    return found


def test_the_parser_reads_numpydoc():
    doc = "Sum.\n\nParameters\n----------\na, b : int\n    Two.\n**rest\n    More.\n\nExamples\n--------\n>>> 1\n1\n"
    assert documented(doc) == ["a", "b", "rest"]


def test_every_builder_is_exported_by_hetbench():
    assert set(PUBLIC) == _builder_functions() and len(PUBLIC) == 8
    assert all(getattr(hetbench, n).__name__ == n for n in PUBLIC)


@pytest.mark.parametrize("name", PUBLIC)
def test_every_parameter_is_documented_and_no_stale_one(name):
    fn = getattr(hetbench, name)
    params = list(inspect.signature(fn).parameters)
    described = documented(fn.__doc__ or "")
    assert len(described) == len(set(described)), f"{name} describes a parameter twice: {described}"
    assert not set(params) - set(described), f"{name}: undocumented {sorted(set(params) - set(described))}"
    assert not set(described) - set(params), f"{name}: documents parameters it does not take: {sorted(set(described) - set(params))}"
    assert ">>> " in "\n".join(_section(fn.__doc__, "Examples")), f"{name} has no runnable example"


@pytest.mark.parametrize("name", PUBLIC)
def test_builders_take_their_parameters_by_name(name):
    """Only ``build_noise`` keeps ``**params``: its two methods take different parameters."""
    kinds = {p.kind for p in inspect.signature(getattr(hetbench, name)).parameters.values()}
    assert (inspect.Parameter.VAR_KEYWORD in kinds) == (name == "build_noise")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_cli_passes_the_same_names_and_defaults(name):
    from hetbench.cli.build import build

    command = build.commands[COMMANDS[name]]
    signature = inspect.signature(getattr(hetbench, name)).parameters
    options = {p.name: p for p in command.params}
    cli_only = {"engine", "ray_address", "ray_inputs", "synthetic_color", "dataset", "label_col"}  # devices: --synthetic-color
    # the licence options reach every builder the same way: the command runs it inside
    # hetbench.publish.licence.licensed(...), which make_split reads (tests/publish/test_licence.py)
    cli_only |= {"license", "license_name", "license_link", "attribution"}
    for option, param in options.items():
        if option in cli_only and option not in signature:
            continue
        assert option in signature, f"{COMMANDS[name]}: --{option.replace('_', '-')} has no parameter in {name}"
        default = signature[option].default
        if (name, option) in CLI_DEFAULTS_DIFFER or default is inspect.Parameter.empty:
            continue
        cli_default = param.default if not getattr(param, "is_flag", False) else False
        assert cli_default == default, f"{name}({option}={default!r}) but --{option} defaults to {cli_default!r}"
    documented_in = re.findall(r"``hetbench build\s+([a-z-]+)", getattr(hetbench, name).__doc__)
    assert documented_in[:1] == [COMMANDS[name]]
