"""Errors in Python terms: a library caller reads the parameter's Python name, the command line its flag
(``hetbench.errors``, ``hetbench.cli.flags``), and no library error is written with a ``--flag``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import click
import pytest

from hetbench.errors import HetbenchError

ROOT = Path(__file__).resolve().parents[1]
FLAG = re.compile(r"(?<![\w`-])--[a-z][a-z0-9-]*")
#: the error classes whose messages a user reads
ERRORS = {"HetbenchError", "ClientExecRefused", "TrainingDiverged", "SourceChanged", "UnknownNameError",
          "ImageTooLarge", "UnreadableImage"}
#: an error message may quote a shell command for the user to run (its flags are that program's)
SHELL_COMMANDS = ("huggingface-cli download",)


def _library_error_strings():
    for folder in ("hetbench", "builders", "isp"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name not in ERRORS:
                    continue
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    text = "".join(p.value for p in ast.walk(arg) if isinstance(p, ast.Constant) and isinstance(p.value, str))
                    if text:
                        yield f"{path.relative_to(ROOT)}:{arg.lineno}", text


def test_no_library_error_names_a_flag():
    flagged = [f"{where}: {text!r}" for where, text in _library_error_strings()
               if FLAG.search(text) and not any(c in text for c in SHELL_COMMANDS)]
    assert not flagged, "name the Python parameter as `name` (the CLI prints its flag):\n" + "\n".join(flagged[:20])


@pytest.mark.parametrize("call, python_name", [
    (lambda: __import__("hetbench.partitioners", fromlist=["x"]).DirichletPartitioner(4, -1.0), "alpha must be >= 0"),
    (lambda: __import__("hetbench.partitioners", fromlist=["x"]).DirichletPartitioner(0, 0.5), "num_clients must be at least 1"),
    (lambda: __import__("hetbench.seeding", fromlist=["x"]).check_seed(-3), "seed must be"),
    (lambda: __import__("hetbench.pipeline", fromlist=["x"]).make_split(
        "builtin:digits", __import__("hetbench.partitioners", fromlist=["x"]).IIDPartitioner(4), "never-written",
        test_fraction=1.5, quiet=True), "test_fraction"),
])
def test_a_python_caller_reads_the_parameter_not_a_flag(call, python_name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(HetbenchError) as err:
        call()
    assert python_name in str(err.value) and "--" not in str(err.value) and "`" not in str(err.value)
    assert not (tmp_path / "never-written").exists()


@pytest.mark.parametrize("args, flag_line", [
    (("partition", "dirichlet", "--alpha", "-1"), "hetbench: error: --alpha must be >= 0"),
    (("partition", "iid", "--clients", "0"), "hetbench: error: --clients must be at least 1"),
    (("partition", "iid", "--test-fraction", "1.5", "--out", "x"), "--test-fraction"),
])
def test_the_command_line_names_the_same_errors_by_flag(args, flag_line, run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(*args)
    assert code == 2 and flag_line in err and len(err.strip().splitlines()) == 1, err
    assert "`" not in err


def test_every_renamed_parameter_is_a_flag_some_command_declares():
    from hetbench.cli.flags import RENAMED
    from hetbench.cli.main import _register, cli

    _register()
    declared = set()

    def walk(command: click.Command) -> None:
        declared.update(o for p in command.params for o in getattr(p, "opts", ()))
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    walk(cli)
    assert set(RENAMED.values()) <= declared, set(RENAMED.values()) - declared


def test_an_error_wrapped_in_another_keeps_its_flags_on_the_command_line():
    from hetbench.cli.flags import cli_message
    from hetbench.errors import marked

    inner = HetbenchError("`crop_size` must be at least 32")
    outer = HetbenchError(f"claim settings: {marked(inner)}")
    assert str(outer) == "claim settings: crop_size must be at least 32"
    assert cli_message(outer) == "claim settings: --crop-size must be at least 32"
