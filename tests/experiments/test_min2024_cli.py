"""MNIST data requirement: reproduce skips (or, with --require-data, refuses) experiments whose IDX
files are missing; `twolayer data download` validates names and checksums (no network used)."""

from __future__ import annotations

import json

import pytest

from twolayer.cli import main
from twolayer.data import mnist
from twolayer.claims import load, reproduce
from twolayer.claims.reproduce import MissingDataError


@pytest.fixture
def no_mnist(tmp_path, monkeypatch):
    monkeypatch.setenv(mnist.ENV_VAR, str(tmp_path / "nowhere"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_reproduce_skips_mnist_experiments_with_a_note(no_mnist):
    out = no_mnist / "out"
    rep = reproduce(["min2024/fig5-mnist-0-1"], out=out)
    (e,) = rep.experiments
    assert e.skipped and "twolayer data download mnist" in e.skipped and not e.runs and not e.claims
    assert rep.exit_code == 0
    from twolayer.report import write_report

    html = write_report(rep).read_text()
    assert "skipped: MNIST IDX files not found" in html
    again = load(out)
    assert again.experiments[0].skipped == e.skipped
    assert json.loads((out / "report" / "summary.json").read_text())["experiments"][0]["skipped"] == e.skipped
    with pytest.raises(MissingDataError, match="min2024/fig5-mnist-0-1"):
        reproduce(["min2024/fig5-mnist-0-1"], out=out, require_data=True)


def test_cli_require_data_and_data_dir(no_mnist, capsys, tmp_path):
    out = str(no_mnist / "out")
    assert main(["reproduce", "min2024/fig12-13-sgd", "--out", out]) == 0
    assert "skipped min2024/fig12-13-sgd" in capsys.readouterr().out
    assert main(["reproduce", "min2024/fig12-13-sgd", "--out", out, "--require-data"]) == 2
    err = capsys.readouterr().err
    assert "--require-data" in err and "twolayer data download mnist" in err
    folder = tmp_path / "idx"
    folder.mkdir()
    for split in ("train", "test"):
        for name in mnist.FILES[split]:
            (folder / name).write_bytes(b"")
    assert mnist.available(None) is None  # env points nowhere
    assert mnist.available(str(folder)) == "train"


def test_data_download_rejects_unknown_names_and_bad_checksums(tmp_path, capsys):
    assert main(["data", "download", "cifar"]) == 2
    assert "mnist" in capsys.readouterr().err
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    for name in mnist.SHA256:
        (mirror / name).write_bytes(b"not the real file")
    with pytest.raises(OSError, match="sha256"):
        mnist.download(tmp_path / "dest", splits=("test",), mirrors=(mirror.as_uri() + "/",))
    assert not list((tmp_path / "dest").glob("*"))  # nothing half-written is left
