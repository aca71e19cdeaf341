"""docs/walkthrough.md runs as written: every command of its bash blocks (in a copy of examples/study), then its
Python block; the figures, the tables, the sweep page and the numbers the page quotes come out."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "walkthrough.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(), re.S)


def test_the_walkthrough_runs_as_written(tmp_path, monkeypatch, capsys):
    from twolayer.cli import main

    shutil.copytree(ROOT / "examples" / "study", tmp_path / "examples" / "study",
                    ignore=shutil.ignore_patterns("data.npz"))
    monkeypatch.chdir(tmp_path)
    commands = [line for block in _blocks("bash") for line in block.strip().splitlines()]
    assert [c.split()[:2] for c in commands][:3] == [["python", "examples/study/make_data.py"],
                                                     ["twolayer", "run"], ["twolayer", "run"]]
    for line in commands:
        args = shlex.split(line)
        if args[0] == "python":
            subprocess.run([sys.executable, *args[1:]], check=True)
        else:
            assert main(args[1:]) == 0, line
    printed = capsys.readouterr().out
    assert "[0.05]" in printed and "(t - w, t]" in printed
    assert (tmp_path / "study-out" / "scale-sweep" / "t1_vs_init.scale.png").is_file()
    assert (tmp_path / "study-out" / "scale-sweep" / "norm_growth_vs_init.scale.png").is_file()
    assert (tmp_path / "study-out" / "explore" / "sweep-scale-sweep.html").is_file()

    (code,) = _blocks("python")
    namespace: dict = {}
    exec(compile(code, str(PAGE), "exec"), namespace)  # noqa: S102 (the page's own example)
    table = namespace["table"]
    assert len(table) == 16 and set(table["sweep"]) == {"scale-sweep"}
    medians = table.groupby("init.scale")["event.norm_growth"].median()
    quoted = [float(x) for x in re.search(r"median\(\)\s+# ([\d., ]+) from", code).group(1).split(",")]
    np.testing.assert_allclose(medians.to_numpy(), quoted, rtol=0.02)  # the numbers the page quotes
    assert np.all(np.diff(medians.to_numpy()) < 0)  # norm growth starts later from a smaller init
    assert len(namespace["small"]) == 4
    # GD's t1 within one step of the exact flow's, as the page says
    runs = __import__("twolayer").runs("study-out", name="my-study")
    by = {m: runs[runs["train.method"] == m].sort_values("seed")["event.t1"].to_numpy() for m in ("gd", "flow_exact")}
    assert np.all(np.abs(by["gd"] - by["flow_exact"]) <= 0.05 + 1e-9)
