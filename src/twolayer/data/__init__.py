"""Datasets: a registry of kinds (``twolayer.data.registry``), each with a validated parameter model and
a builder, and the modules that register the built-in kinds.

A dataset is built once per run (outside the compiled loop) from its validated parameters; the
trainer only sees the arrays.
"""

from twolayer.data.registry import (  # noqa: F401
    AUGMENTATIONS, DATASETS, DataParams, Dataset, DatasetKind, build_dataset, register_dataset, resolve_path,
)
from twolayer.data import synthetic  # noqa: F401  (registers the built-in kinds)
from twolayer.data import from_file  # noqa: F401  (data from an .npz file)
from twolayer.data import multi_index  # noqa: F401
from twolayer.data import margin  # noqa: F401  (Lyu et al. 2021: symmetric_separable, hinted)
from twolayer.data import alignment  # noqa: F401  (Min et al. 2024: toy2d, orthogonal, separable_cap)
from twolayer.data import mnist  # noqa: F401  (Min et al. 2024: mnist_pair)
from twolayer.data import teacher_student  # noqa: F401  (online SGD: Goldt et al. 2019)
