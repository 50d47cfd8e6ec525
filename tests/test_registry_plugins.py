"""Registries that take plugins (issue 48, item 3): entry points of a group are loaded the first time the
registry is read and checked by its ``validate`` hook; partitioners and embedders refuse what is not theirs."""

from __future__ import annotations

import pytest

from hetbench.errors import HetbenchError
from hetbench.registry import Registry


def _dist(site, group: str, lines: str) -> None:
    info = site / "someplugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: someplugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}\n")


def test_entry_points_join_after_the_built_ins_and_are_validated(tmp_path, monkeypatch):
    _dist(tmp_path, "hetbench.test_shapes", "cube = someplugin_shapes:cube\nbad = someplugin_shapes:NOT_CALLABLE")
    (tmp_path / "someplugin_shapes.py").write_text("def cube(side):\n    return side ** 3\nNOT_CALLABLE = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []

    def validate(name, impl):
        seen.append(name)
        if not callable(impl):
            raise HetbenchError(f"shape plugin '{name}' is not callable")

    shapes = Registry("shape", {"square": lambda side: side * side}, plugins="hetbench.test_shapes", validate=validate)
    with pytest.raises(HetbenchError, match="shape plugin 'bad' is not callable"):
        shapes.names()
    with pytest.raises(HetbenchError, match="shape plugin 'bad' is not callable"):  # says so on every read
        shapes["cube"]
    (tmp_path / "someplugin_shapes.py").write_text("def cube(side):\n    return side ** 3\nNOT_CALLABLE = abs\n")
    monkeypatch.delitem(__import__("sys").modules, "someplugin_shapes")
    assert shapes.names() == ("square", "bad", "cube") and shapes.call("cube", side=2) == 8
    assert seen.count("cube") >= 1


def test_a_partitioner_plugin_must_be_a_partitioner_named_as_it_registers():
    from hetbench.partitioners import REGISTRY, IIDPartitioner

    class Mine(IIDPartitioner):
        name = "mine-iid"

    with pytest.raises(HetbenchError, match="is named 'mine-iid' but registers as 'other'"):
        REGISTRY._validate("other", Mine)
    with pytest.raises(HetbenchError, match="not a subclass of hetbench.partitioners.base.Partitioner"):
        REGISTRY._validate("x", object)
    REGISTRY._validate("mine-iid", Mine)  # passes


def test_an_embedder_plugin_must_be_callable_under_a_plain_name():
    from hetbench.embed import EMBEDDERS

    with pytest.raises(HetbenchError, match="must be a callable under a name without ':'"):
        EMBEDDERS._validate("a:b", lambda table, split, arg: None)
    with pytest.raises(HetbenchError, match="must be a callable"):
        EMBEDDERS._validate("x", 3)
