"""Datasets that can be fetched for online machines (``twolayer data download NAME``).

Each entry maps a name to ``fn(dest: Path | None) -> Path`` that downloads into ``dest`` (or the
dataset's default folder) with checksum checks and returns the folder. Nothing here runs unless
asked: runs never download.
"""

from __future__ import annotations

from twolayer.registry import Registry

DOWNLOADERS: Registry = Registry("dataset to download")


@DOWNLOADERS.register("mnist")
def _mnist(dest=None):
    """MNIST IDX files (train and test split) into ~/.cache/twolayer/mnist, sha256-checked."""
    from twolayer.data.mnist import download

    return download(dest)
