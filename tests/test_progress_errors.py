"""A step that fails leaves no progress bar behind: the error is the one line the user reads."""

from __future__ import annotations

import pytest

from hetbench.errors import HetbenchError
from hetbench.progress import progress_bar


def test_a_failed_step_prints_no_bar_line(capsys):
    with pytest.raises(HetbenchError):
        with progress_bar("embedding 30 images", 30, quiet=False) as bar:
            bar.update(3)
            raise HetbenchError("no image column")
    assert capsys.readouterr().err == ""


def test_a_finished_step_prints_its_final_line_to_a_log(capsys):
    with progress_bar("embedding 30 images", 30, quiet=False) as bar:
        bar.update(30)
    err = capsys.readouterr().err
    assert "embedding 30 images" in err and "30/30" in err
