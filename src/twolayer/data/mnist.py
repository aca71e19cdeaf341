"""MNIST digit pairs (Min, Mallada & Vidal 2024, Figs. 5, 10-13) from standard IDX files.

No file is downloaded at run time. The data directory is looked up in order: the config field
``data.data_dir``, the environment variable ``TWOLAYER_DATA`` (the folder itself or its ``mnist/``
subfolder), then ``~/.cache/twolayer/mnist``. ``download(dest)`` (``twolayer data download mnist``)
fetches the four canonical files for online machines and checks their sha256.

A pair ``digits: [a, b]`` labels digit a with y = +1 and digit b with y = -1; pixels are scaled to
[0, 1] and, by default, centred by the mean of the pair (so x_+ + x_- = 0, spec §3 Fig. 5).
"""

from __future__ import annotations

import gzip
import os
import struct
import urllib.request
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from twolayer.fileio import sha256_of
from twolayer.data.registry import DataParams, Dataset, register_dataset
from twolayer.fields import field_errors

ENV_VAR = "TWOLAYER_DATA"
DEFAULT_DIR = Path("~/.cache/twolayer/mnist")
FILES = {  # split -> (images, labels)
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
SHA256 = {  # the canonical gzip files (as served by the mirrors below)
    "train-images-idx3-ubyte.gz": "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
    "train-labels-idx1-ubyte.gz": "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
    "t10k-images-idx3-ubyte.gz": "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    "t10k-labels-idx1-ubyte.gz": "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
}
MIRRORS = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "https://storage.googleapis.com/cvdf-datasets/mnist/")
HOW_TO_GET = (f"get the files with `twolayer data download mnist` (online machines), or copy the IDX files "
              f"({', '.join(SHA256)}) into one of these folders, or point {ENV_VAR} or data.data_dir at them")


class MnistNotFoundError(FileNotFoundError):
    """The MNIST IDX files were not found; the message lists where we looked and how to get them."""


def candidate_dirs(data_dir: str | Path | None = None) -> list[Path]:
    """The data directories searched, in order: ``data_dir``, $TWOLAYER_DATA (and its mnist/),
    ~/.cache/twolayer/mnist."""
    out = []
    if data_dir:
        out.append(Path(data_dir).expanduser())
    env = os.environ.get(ENV_VAR)
    if env:
        out += [Path(env).expanduser(), Path(env).expanduser() / "mnist"]
    out.append(DEFAULT_DIR.expanduser())
    return list(dict.fromkeys(out))


def _present(folder: Path, name: str) -> Path | None:
    for candidate in (folder / name, folder / name.removesuffix(".gz")):
        if candidate.is_file():
            return candidate
    return None


def find_split(split: str, data_dir: str | Path | None = None) -> tuple[Path, Path] | None:
    """(images, labels) paths of ``split`` in the first directory holding both, or None."""
    images, labels = FILES[split]
    for folder in candidate_dirs(data_dir):
        pi, pl = _present(folder, images), _present(folder, labels)
        if pi and pl:
            return pi, pl
    return None


def available(data_dir: str | Path | None = None, splits=("train", "test")) -> str | None:
    """The first split among ``splits`` whose files are found, or None."""
    return next((s for s in splits if find_split(s, data_dir)), None)


def locate(split: str, data_dir: str | Path | None = None) -> tuple[Path, Path]:
    """Like ``find_split`` but raises ``MnistNotFoundError`` saying where it looked and how to fix it."""
    found = find_split(split, data_dir)
    if found is None:
        looked = ", ".join(str(p) for p in candidate_dirs(data_dir))
        raise MnistNotFoundError(f"MNIST {split} split not found: looked for {' and '.join(FILES[split])} "
                                 f"(or uncompressed) in {looked}; {HOW_TO_GET}")
    return found


def read_idx(path: str | Path) -> np.ndarray:
    """Read an IDX file (optionally gzip-compressed): magic 0x0000TTDD with type TT (0x08 =
    ubyte, ...) and DD dimensions, then DD big-endian uint32 sizes, then the data."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path} is not an IDX file (bad magic number)")
    types = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
    if raw[2] not in types:
        raise ValueError(f"{path}: unknown IDX data type 0x{raw[2]:02x}")
    ndim = raw[3]
    shape = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=types[raw[2]], offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says {shape} ({int(np.prod(shape))} values), file holds {data.size}")
    return data.reshape(shape)


def write_idx(path: str | Path, array: np.ndarray) -> None:
    """Write a uint8 array as an IDX file (gzip-compressed when the name ends in .gz)."""
    a = np.ascontiguousarray(array, dtype=np.uint8)
    payload = bytes([0, 0, 0x08, a.ndim]) + struct.pack(f">{a.ndim}I", *a.shape) + a.tobytes()
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(payload)


@lru_cache(maxsize=4)
def load_split(images: Path, labels: Path) -> tuple[np.ndarray, np.ndarray]:
    """Images [N, 28*28] uint8 and labels [N] of one split (cached per path)."""
    X, y = read_idx(images), read_idx(labels)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"{images} holds {X.shape[0]} images but {labels} holds {y.shape[0]} labels")
    return X.reshape(X.shape[0], -1), y.astype(np.int64)


class MnistPairParams(DataParams):
    """Two MNIST digits: ``digits[0]`` labelled +1, ``digits[1]`` labelled -1 (default [1, 0]: Fig. 5).

    ``split``: train, test, or auto (train when present, else test; ``info.split`` says which).
    ``center``: pair (subtract the mean of the two-digit set, spec default), split (the mean of the
    whole split) or none. ``max_per_class`` keeps the first images of each digit (None: all)."""

    kind: Literal["mnist_pair"] = "mnist_pair"
    digits: tuple[int, int] = (1, 0)
    split: Literal["train", "test", "auto"] = "auto"
    center: Literal["pair", "split", "none"] = "pair"
    max_per_class: int | None = Field(default=None, gt=0)
    data_dir: str | None = None

    @model_validator(mode="after")
    def _check(self):
        a, b = self.digits
        if not (0 <= a <= 9 and 0 <= b <= 9) or a == b:
            raise field_errors(type(self).__name__, [("digits", f"must be two different digits in 0..9, got "
                                                                f"{list(self.digits)}")])
        return self


def resolve_split(p: MnistPairParams) -> str:
    """The split to read: ``train`` or ``test`` as given; for ``auto`` the train split when its files are
    here, else the test split.
    """
    if p.split != "auto":
        return p.split
    return available(p.data_dir) or "train"  # "train" makes locate() report the missing files


@register_dataset("mnist_pair", MnistPairParams)
def mnist_pair(p: MnistPairParams) -> Dataset:
    """The two digits of an MNIST split as a +-1 classification set, centred as ``center`` says."""
    split = resolve_split(p)
    images, labels = locate(split, p.data_dir)
    X_all, digit = load_split(images, labels)
    keep = []
    for d in p.digits:
        idx = np.flatnonzero(digit == d)
        keep.append(idx if p.max_per_class is None else idx[:p.max_per_class])
    idx = np.sort(np.concatenate(keep))
    X = X_all[idx].astype(np.float64) / 255.0
    y = np.where(digit[idx] == p.digits[0], 1.0, -1.0)
    if p.center == "pair":
        X = X - X.mean(axis=0)
    elif p.center == "split":
        X = X - (X_all.astype(np.float64) / 255.0).mean(axis=0)
    info = {"split": split, "images": str(images), "digits": list(p.digits), "n_pos": int(np.sum(y > 0)),
            "n_neg": int(np.sum(y < 0)), "center": p.center}
    return Dataset(X, y, info)


def download(dest: str | Path | None = None, *, splits=("train", "test"), mirrors=MIRRORS, force: bool = False) -> Path:
    """Fetch the MNIST IDX files into ``dest`` (default ~/.cache/twolayer/mnist), checking each
    file's sha256; a file already present with the right checksum is kept. Returns ``dest``."""
    dest = (Path(dest) if dest else DEFAULT_DIR).expanduser()
    dest.mkdir(parents=True, exist_ok=True)
    for split in splits:
        for name in FILES[split]:
            target = dest / name
            if target.is_file() and not force and sha256_of(target) == SHA256[name]:
                continue
            errors = []
            for mirror in mirrors:
                tmp = target.with_suffix(".part")
                try:
                    urllib.request.urlretrieve(mirror + name, tmp)
                except OSError as e:
                    errors.append(f"{mirror}: {e}")
                    continue
                digest = sha256_of(tmp)
                if digest != SHA256[name]:
                    tmp.unlink(missing_ok=True)
                    errors.append(f"{mirror}: sha256 {digest} != expected {SHA256[name]}")
                    continue
                tmp.replace(target)
                break
            else:
                raise OSError(f"could not download {name}: " + "; ".join(errors))
    return dest
