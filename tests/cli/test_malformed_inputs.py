"""Malformed inputs: every user error exits 2, prints no traceback, and names the field.

Each case builds its files in a temporary folder and returns the command line. The assertion is the
same for all: exit code 2, no "Traceback" in the output, a line of the error message that starts
with ``FIELD:`` (the message format is ``  field: what is wrong``; ``error: field: ...`` for a usage
error), no pydantic union tag (``list[list[float]]``) in a field path, and the case's words in the
message (printed literally: no rich markup may eat brackets such as ``[h, d]``).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import base_config
from twolayer.cli import main

CASES: dict[str, tuple[str, tuple[str, ...], object]] = {}


def case(name: str, field: str, *words: str):
    """Register ``fn(tmp_path) -> argv`` as a malformed-input case."""
    def register(fn):
        assert name not in CASES
        CASES[name] = (field, words, fn)
        return fn
    return register


def config_case(name: str, field: str, *words: str, set_: tuple[str, ...] = (), **sections):
    """A `twolayer run` case on the small base config with ``sections`` replaced."""
    def argv(tmp_path):
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(base_config(**sections)))
        return run_argv(path, tmp_path, *[a for s in set_ for a in ("--set", s)])
    CASES[name] = (field, words, argv)


def run_argv(path, tmp_path, *extra) -> list[str]:
    return ["run", str(path), "--out", str(tmp_path / "out"), *extra]


def text_config(text: str):
    def argv(tmp_path):
        path = tmp_path / "c.yaml"
        path.write_text(text)
        return run_argv(path, tmp_path)
    return argv


def alias_bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


TRAIN = {"method": "gd", "lr": 0.05, "steps": 100}
OBS = {"schedule": "log", "points": 10, "metrics": ["loss"]}
FLOW = {"method": "flow", "time": 1.0}

# -- the config file and YAML -------------------------------------------------------------------
case("config-missing", "config", "file not found")(lambda t: run_argv(t / "missing.yaml", t))
case("config-is-a-folder", "config", "is not a file")(lambda t: run_argv(t, t))
CASES["config-binary"] = ("config", ("not a text",), lambda t: run_argv(_write(t / "c.yaml", b"\xff\xfe\x00\x81garbage"), t))
CASES["config-bad-yaml"] = ("config", ("not valid YAML",), text_config("name: x\ndata: [1\n"))
CASES["config-a-list"] = ("config", ("must be a mapping",), text_config("- 1\n- 2\n"))
CASES["config-alias-bomb"] = ("config", ("alias",), text_config(alias_bomb()))
CASES["config-contains-itself"] = ("config", ("contain itself",), text_config("data: &d {kind: two_points, x: *d}\n"))
CASES["config-nested-too-deep"] = ("config", ("nested",), text_config("data: " + "[" * 150 + "]" * 150 + "\n"))
CASES["config-no-data"] = ("data", ("is required",), text_config("name: x\n"))
CASES["config-duplicate-key"] = ("config", ("duplicate key 'name'", "lines 1 and 3"),
                                 text_config("name: a\ndata: {kind: two_points}\nname: b\n"))
CASES["config-duplicate-nested-key"] = ("config", ("duplicate key 'train.lr'", "lines 3 and 5"), text_config(
    "data: {kind: two_points}\ntrain:\n  lr: 0.1\n  steps: 10\n  lr: 0.2\n"))
CASES["config-duplicate-section"] = ("config", ("duplicate key 'data'", "lines 1 and 3"), text_config(
    "data: {kind: two_points}\ntrain: {lr: 0.1, steps: 10}\ndata: {kind: two_points, angle: 1.0}\n"))
CASES["config-duplicate-key-in-a-list"] = ("config", ("duplicate key 'data.labels.0.a'",), text_config(
    "data: {kind: two_points, labels: [{a: 1, a: 2}, 1]}\n"))
config_case("unknown-section", "trian", "unknown field", trian={"lr": 1})
config_case("unknown-field", "train.lrr", "unknown field", train={**TRAIN, "lrr": 1})

# -- --set overrides --------------------------------------------------------------------------------
config_case("set-unclosed-list", "--set train.lr", "not a valid YAML value", set_=("train.lr=[1",))
config_case("set-unclosed-quote", "--set name", "not a valid YAML value", set_=("name='abc",))
config_case("set-not-key-value", "--set", "not key=value", set_=("novalue",))
config_case("set-empty-key", "--set", "empty key", set_=("=3",))
config_case("set-inside-a-number", "train.lr.x", "cannot set inside", set_=("train.lr.x=1",))
config_case("set-width-true", "model.width", "must be a number", set_=("model.width=true",))
config_case("set-width-quoted", "model.width", "not the string '10'", set_=("model.width='10'",))
config_case("set-duplicate-key", "--set data", "duplicate key 'angle'", "columns",
            set_=("data={kind: two_points, angle: 1, angle: 2}",))
config_case("set-nested-3000-levels", "--set data.radii", "nested too deeply",
            set_=("data.radii=" + "[" * 3000 + "]" * 3000,))
config_case("set-alias-bomb", "--set data", "alias",
            set_=("data=" + "[&a [x,x,x,x,x,x,x,x,x,x], " + ", ".join(
                f"&{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]" for i in range(7)) + "]",))

# -- numbers: booleans, NaN/inf, sizes ------------------------------------------------------------
config_case("width-true", "model.width", "must be a number, not true",
            model={"kind": "two_layer", "activation": "relu", "width": True})
config_case("seeds-true", "seeds", "must be a number, not true", seeds=True)
config_case("seed-true", "seed", "must be a number", seed=True)
config_case("steps-true", "train.steps", "must be a number", train={**TRAIN, "steps": True})
config_case("lr-true", "train.lr", "must be a number", train={**TRAIN, "lr": True})
config_case("points-false", "observe.points", "must be a number", observe={**OBS, "points": False})
config_case("labels-true", "data.labels.0", "must be a number", data={"kind": "two_points", "labels": [True, 1]})
config_case("seed-2-to-70", "seed", "too large", "at most 2^63 - 1", seed=2**70)
config_case("seeds-10-to-9", "seeds", "at most", seeds=10**9)
config_case("seeds-list-huge-value", "seeds.1", "too large", seeds=[0, 2**70])
config_case("seeds-zero", "seeds", "positive", seeds=0)
config_case("seeds-repeated", "seeds", "distinct", seeds=[1, 1])
config_case("steps-2-to-62", "train.steps", "2^53", train={**TRAIN, "steps": 2**62})
config_case("width-quoted", "model.width", "must be a number, not the string '10'", "without quotes",
            model={"kind": "two_layer", "activation": "relu", "width": "10"})
config_case("lr-quoted", "train.lr", "not the string '0.1'", train={**TRAIN, "lr": "0.1"})
config_case("at-quoted", "observe.at.1", "not the string '3'", observe={"schedule": "at", "at": [1, "3"], "metrics": ["loss"]})
config_case("radii-quoted", "data.radii.0", "not the string", data={"kind": "two_points", "radii": ["1", 1]})
BIG = 10**400  # 401 digits: float() of it overflows
config_case("width-400-digits", "model.width", "401-digit integer is too large",
            model={"kind": "two_layer", "activation": "relu", "width": BIG})
config_case("steps-400-digits", "train.steps", "too large", train={**TRAIN, "steps": BIG})
config_case("points-400-digits", "observe.points", "too large", observe={**OBS, "points": BIG})
config_case("seeds-400-digits", "seeds", "too large", seeds=BIG)
config_case("lr-400-digits", "train.lr", "too large", train={**TRAIN, "lr": BIG})
config_case("batch-size-400-digits", "train.batch_size", "too large",
            train={"method": "sgd", "lr": 0.05, "steps": 10, "batch_size": BIG})
config_case("n-400-digits", "data.n", "too large",
            data={"kind": "multi_index", "d": 6, "r": 2, "n": BIG, "n_test": 10, "activation": "relu"})
config_case("n-too-large-for-memory", "data", "does not fit in this machine's memory",
            data={"kind": "multi_index", "d": 6, "r": 2, "n": 2**62, "n_test": 10, "activation": "relu"},
            loss={"kind": "square", "reduction": "mean"})
config_case("gd-time-inf", "train.time", "finite", train={"method": "gd", "lr": 0.05, "time": math.inf})
config_case("flow-time-inf", "train.time", "finite", train={"method": "flow", "time": math.inf})
config_case("gd-time-too-long", "train", "2^53", train={"method": "gd", "lr": 1e-3, "time": 1e300})
config_case("at-nan", "observe.at.0", "finite", observe={"schedule": "at", "at": [math.nan], "metrics": ["loss"]})
config_case("at-inf", "observe.at.1", "finite", observe={"schedule": "at", "at": [1, math.inf], "metrics": ["loss"]})
config_case("points-10-to-9", "observe.points", "less than or equal", observe={**OBS, "points": 10**9})
config_case("every-step-of-10-to-12", "observe.every", "observation points",
            train={**TRAIN, "steps": 10**12}, observe={"schedule": "every", "every": 1, "metrics": ["loss"]})
config_case("flow-every-tiny", "observe.every", "observation points", train={"method": "flow", "time": 10.0},
            observe={"schedule": "every", "every": 1e-300, "metrics": ["loss"]})
config_case("width-10-to-12", "model.width", "memory", model={"kind": "two_layer", "activation": "relu", "width": 10**12})
config_case("seeds-times-width-memory", "seeds", "memory", seeds=10**6,
            model={"kind": "two_layer", "activation": "relu", "width": 5000})
config_case("records-memory", "observe.points", "memory", model={"kind": "two_layer", "activation": "relu", "width": 10**6},
            train={**TRAIN, "steps": 10**6}, observe={"points": 10**6, "metrics": ["loss", "w_norm"]})
config_case("init-scale-nan", "init.scale", "finite", init={"kind": "gaussian", "scale": math.nan})
config_case("init-scale-float32-underflow", "init.scale", "underflows float32", init={"kind": "gaussian", "scale": 1e-40},
            precision="float32")
config_case("init-scale-float64-underflow", "init.scale", "underflows float64", init={"kind": "balanced", "scale": 1e-306})
config_case("lr-negative", "train.lr", "greater than 0", train={**TRAIN, "lr": -1})
config_case("weight-decay-nan", "train.weight_decay", "finite", train={**TRAIN, "weight_decay": math.nan})
config_case("angle-nan", "data.angle", "finite", data={"kind": "two_points", "angle": math.nan})
config_case("rtol-inf", "train.rtol", "finite", train={**FLOW, "rtol": math.inf})
config_case("labels-zero", "data.labels.1", "-1 or 1", data={"kind": "two_points", "labels": [1, 0]})


# -- data files ---------------------------------------------------------------------------------------
def data_file_case(name: str, field: str, *words: str, loss=None, write=None, **arrays):
    def argv(tmp_path):
        path = _npz_file(tmp_path / "data.npz", write, arrays)
        cfg = base_config(data={"kind": "file", "path": str(path)})
        if loss is not None:
            cfg["loss"] = {"kind": loss, "reduction": "mean"}
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
        return run_argv(tmp_path / "c.yaml", tmp_path)
    CASES[name] = (field, words, argv)


X3, Y3 = np.eye(3), np.array([1.0, -1.0, 1.0])
data_file_case("data-text-file", "data.path", "not an .npz", write=lambda p: p.write_text("X,y\n1,2\n"))
data_file_case("data-npy-file", "data.path", ".npy", write=lambda p: p.write_bytes(_npy_bytes(np.eye(2))))
data_file_case("data-truncated-npz", "data.path", "not a readable .npz", write=lambda p: p.write_bytes(_npz_bytes(X=X3, y=Y3)[:60]))
data_file_case("data-no-y", "data.path", "no array y", X=X3)
data_file_case("data-no-X", "data.path", "no array X", y=Y3)
data_file_case("data-X-1-d", "data.path", "need X [n, d] and y [n]", X=np.ones(3), y=Y3)
data_file_case("data-y-wrong-length", "data.path", "need X [n, d] and y [n]", X=X3, y=Y3[:2])
data_file_case("data-X-nan", "data.path", "non-finite", X=np.array([[1.0, np.nan]]), y=np.array([1.0]))
data_file_case("data-y-inf", "data.path", "non-finite", X=np.ones((2, 2)), y=np.array([1.0, np.inf]))
data_file_case("data-n-zero", "data.path", "at least one sample", X=np.zeros((0, 3)), y=np.zeros(0))
data_file_case("data-d-zero", "data.path", "one feature", X=np.zeros((3, 0)), y=Y3)
data_file_case("data-labels-0-1", "data.path", "-1 or +1", X=X3, y=np.array([0.0, 1.0, 1.0]), loss="logistic")
data_file_case("data-labels-2", "data.path", "-1 or +1", X=X3, y=np.array([2.0, -1.0, 1.0]), loss="exponential")
data_file_case("data-X-strings", "data.path", "need numbers", X=np.array([["a", "b"]]), y=np.array([1.0]))
data_file_case("data-X-bool", "data.path", "array X holds booleans", X=np.array([[True, False], [False, True]]),
               y=np.array([1.0, -1.0]))
data_file_case("data-y-bool", "data.path", "array y holds booleans", X=np.eye(2), y=np.array([True, False]))
data_file_case("data-random-bytes", "data.path", "is not an .npz archive", write=lambda p: p.write_bytes(
    np.random.default_rng(0).bytes(300)))
data_file_case("data-object-arrays", "data.path", "numeric arrays",
               write=lambda p: np.savez(p, X=np.array([[1, "a"]], dtype=object), y=np.array([1.0])))
case("data-missing", "data.path", "file not found")(
    lambda t: run_argv(_config(t, data={"kind": "file", "path": "nope.npz"}), t))
case("data-path-is-a-folder", "data.path", "is not a file")(
    lambda t: run_argv(_config(t, data={"kind": "file", "path": str(t)}), t))


def _npz_file(path: Path, write, arrays: dict) -> Path:
    """``path`` written by ``write(path)``, or as an .npz of ``arrays``."""
    if write is not None:
        write(path)
    else:
        np.savez(path, **arrays)
    return path


def _npz_bytes(**arrays) -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _npy_bytes(a) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


# -- init files ---------------------------------------------------------------------------------------
def init_file_case(name: str, field: str, *words: str, write=None, model=None, seeds=None, **arrays):
    def argv(tmp_path):
        path = _npz_file(tmp_path / "init.npz", write, arrays)
        cfg = base_config(init={"kind": "file", "path": str(path)},
                          model=model or {"kind": "two_layer", "activation": "relu"})
        if seeds is not None:
            cfg["seeds"] = seeds
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
        return run_argv(tmp_path / "c.yaml", tmp_path)
    CASES[name] = (field, words, argv)


W4, V4 = 0.1 * np.ones((4, 2)), 0.1 * np.ones(4)
init_file_case("init-text-file", "init.path", "not an .npz", write=lambda p: p.write_text("W = 1\n"))
init_file_case("init-no-W", "init.path", "no array W", v=V4)
init_file_case("init-W-1-d", "init.path", "need [h, d] or [seeds, h, d]", W=np.ones(4), v=V4)
init_file_case("init-W-inf", "init.path", "non-finite", W=np.full((4, 2), np.inf), v=V4)
init_file_case("init-v-nan", "init.path", "non-finite", W=W4, v=np.full(4, np.nan))
init_file_case("init-d-differs-from-data", "init.path", "input dimensions", W=0.1 * np.ones((4, 5)), v=V4)
init_file_case("init-two-layer-without-v", "init.path", "needs v with shape", W=W4)
init_file_case("init-width-differs", "model.width", "neurons", W=W4, v=V4,
               model={"kind": "two_layer", "activation": "relu", "width": 7})
init_file_case("init-seeds-differ", "init.path", "seeds", W=np.stack([W4, W4]), v=np.stack([V4, V4]), seeds=3)
init_file_case("init-W-bool", "init.path", "array W holds booleans", W=np.ones((4, 2), dtype=bool), v=V4)

# -- init values: errors name init.W / init.v (not init.path), without pydantic's union tags ------
config_case("init-values-d-differs-from-data", "init.W", "3 input dimensions",
            init={"kind": "values", "W": [[0.1, 0.1, 0.1]] * 8, "v": [0.1] * 8})
config_case("init-values-without-v", "init.v", "needs v with shape", init={"kind": "values", "W": [[0.1, 0.1]] * 8})
config_case("init-values-ragged", "init.W.1", "valid list", init={"kind": "values", "W": [[0.1, 0.1], 0.1]})
config_case("init-values-a-string", "init.W.0.1", "not the string", init={"kind": "values", "W": [[0.1, "a"]] * 8})
config_case("init-values-3-d-entry", "init.W.1.0.1", "valid number",
            init={"kind": "values", "W": [[[0.1, 0.1]], [[0.1, {}]]]}, seeds=2)
config_case("signs-not-plus-minus-one", "init.signs.1", "expected -1 or 1",
            init={"kind": "balanced", "scale": 0.1, "signs": [1, 2, 1, 1, 1, 1, 1, 1]})

# -- cross-field ------------------------------------------------------------------------------------
config_case("population-activation-mismatch", "data.activation", "model.activation",
            data={"kind": "multi_index", "d": 6, "r": 2, "n": 10, "n_test": 10, "activation": "abs"},
            model={"kind": "mean_field", "activation": "relu", "width": 5}, loss={"kind": "square", "reduction": "mean"},
            objective="population", init={"kind": "standard"})
config_case("flow-with-lr", "train.lr", "not used by method flow", train={**FLOW, "lr": 0.1})
config_case("signs-wrong-length", "init.signs", "entries", init={"kind": "balanced", "scale": 0.1, "signs": [1, -1]})
config_case("metric-unknown", "observe.metrics", "is not one of", observe={**OBS, "metrics": ["loss", "losss"]})
config_case("metric-needs-multi-index-data", "observe.metrics", "'alignment' cannot be observed here", "multi_index",
            model={"kind": "mean_field", "activation": "relu", "width": 8}, init={"kind": "standard"},
            loss={"kind": "square", "reduction": "mean"}, observe={**OBS, "metrics": ["loss", "alignment"]})
config_case("at-negative", "observe.at", "must be >= 0", observe={"schedule": "at", "at": [-1], "metrics": ["loss"]})

# -- dataset cross-field checks name their field ----------------------------------------------------
config_case("radii-zero", "data.radii", "must be positive", data={"kind": "two_points", "radii": [0, 0]})
config_case("multi-index-r-above-d", "data.r", "more than d = 3",
            data={"kind": "multi_index", "d": 3, "r": 5, "n": 10, "n_test": 10, "activation": "relu"})
config_case("orthogonal-d-below-n", "data.d", "n <= d", data={"kind": "orthogonal", "n": 3, "d": 2})
config_case("toy2d-radii-wrong-length", "data.radii", "positive numbers", data={"kind": "toy2d", "radii": [1.0]})
config_case("separable-cap-radii", "data.radii", "0 < min <= max", data={"kind": "separable_cap", "radii": [2.0, 1.0]})
config_case("hinted-w-perp-wrong-length", "data.w_perp", "has 3 entries", data={"kind": "hinted", "w_perp": [1, 0, 0]})

# -- the output folder ------------------------------------------------------------------------------
CASES["out-is-a-file"] = ("--out", ("is a file",), lambda t: [
    "run", str(_config(t)), "--out", str(_touch(t / "f"))])
CASES["out-below-a-file"] = ("--out", ("is a file, not a folder",), lambda t: [
    "run", str(_config(t)), "--out", str(_touch(t / "f") / "sub")])
CASES["out-under-proc"] = ("--out", ("cannot write",), lambda t: ["run", str(_config(t)), "--out", "/proc/twolayer-out"])
CASES["reproduce-out-is-a-file"] = ("--out", ("is a file",), lambda t: [
    "reproduce", "engine/conservation", "--out", str(_touch(t / "f"))])
CASES["index-out-missing"] = ("--out", ("is not a folder",), lambda t: ["index", "--out", str(t / "nothing")])


def _config(tmp_path, **sections) -> Path:
    return _write(tmp_path / "c.yaml", yaml.safe_dump(base_config(**sections)))


def _touch(path: Path) -> Path:
    return _write(path, "")


def _write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


# -- sweeps --------------------------------------------------------------------------------------------
def sweep_case(name: str, field: str, *words: str, text: str | None = None, out=None, **spec):
    def argv(tmp_path):
        path = tmp_path / "s.yaml"
        path.write_text(text if text is not None else yaml.safe_dump({"name": "s", "base": base_config(), **spec}))
        target = out(tmp_path) if out else tmp_path / "out"
        return ["sweep", str(path), "--out", str(target)]
    CASES[name] = (field, words, argv)


sweep_case("sweep-mixed-number-and-string", "grid.train.lr", "mixes numbers and strings", grid={"train.lr": [0.01, "0.01"]})
sweep_case("sweep-mixed-number-and-bool", "grid.model.width", "mixes numbers and booleans",
           grid={"model.width": [4, True]})
sweep_case("sweep-10-to-9-points", "grid", "at most", grid={"train.lr": [0.01 * (i + 1) for i in range(1000)],
                                                            "train.steps": list(range(1, 1001)),
                                                            "model.width": list(range(1, 1001))})
sweep_case("sweep-alias-bomb", "sweep", "alias", text="name: s\n" + alias_bomb())
sweep_case("sweep-seeds-true", "seeds", "must be a number", seeds=True)
sweep_case("sweep-bad-yaml", "sweep", "not valid YAML", text="name: [s\n")
sweep_case("sweep-zip-unequal", "zip.train.steps", "equal lengths", zip={"train.lr": [0.1, 0.2], "train.steps": [10]})
sweep_case("sweep-unknown-key", "grid.train.lrr", "unknown field", grid={"train.lrr": [1, 2]})
sweep_case("sweep-out-is-a-file", "--out", "is a file", grid={"train.lr": [0.1]}, out=lambda t: _touch(t / "f"))
sweep_case("sweep-seeds-quoted", "seeds", "not the string '2'", seeds="2")
sweep_case("sweep-duplicate-key", "sweep", "duplicate key 'name'", "lines 1 and 4",
           text="name: s\nbase: {data: {kind: two_points}}\ngrid: {train.lr: [0.1]}\nname: t\n")
sweep_case("sweep-duplicate-grid-key", "sweep", "duplicate key 'grid.train.lr'",
           text="name: s\nbase: {data: {kind: two_points}}\ngrid:\n  train.lr: [0.1]\n  train.lr: [0.2]\n")
sweep_case("sweep-grid-repeated-value", "grid.train.lr", "lists 0.01 twice", grid={"train.lr": [0.01, 0.02, 0.01]})
sweep_case("sweep-grid-repeated-number", "grid.model.width", "lists 4 twice", grid={"model.width": [4, 4.0]})
sweep_case("sweep-zip-repeated-row", "zip", "appears twice", zip={"train.lr": [0.1, 0.1], "train.steps": [10, 10]})
sweep_case("sweep-overlapping-keys", "grid.train.lr", "overlaps grid.train", "train holds train.lr",
           grid={"train.lr": [0.01], "train": [{"method": "gd", "lr": 0.1, "steps": 10}]})
sweep_case("sweep-overlapping-grid-and-zip", "zip.model.width", "overlaps grid.model",
           grid={"model": [{"kind": "two_layer", "width": 4}]}, zip={"model.width": [4]})


def _base_file_case(name: str, field: str, *words: str, base_text: str):
    def argv(tmp_path):
        (tmp_path / "base.yaml").write_text(base_text)
        (tmp_path / "s.yaml").write_text("name: s\nbase: base.yaml\n")
        return ["sweep", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out")]
    CASES[name] = (field, words, argv)


_base_file_case("sweep-base-duplicate-key", "base", "duplicate key 'data'", base_text="data: {kind: two_points}\ndata: 1\n")

# -- plot -------------------------------------------------------------------------------------------------
case("plot-x-equals-y", "--y", "the key of --x")(
    lambda t: ["plot", str(t), "--x", "init.scale", "--y", "init.scale", "--metric", "loss"])

# -- messages are literal: rich markup must not eat or choke on brackets -----------------------------
case("markup-close-tag-in-a-path", "config", "[/bold]", "file not found")(
    lambda t: run_argv(t / "x[/bold]" / "c.yaml", t))
case("markup-brackets-in-a-data-path", "data.path", "[h, d]/nope.npz")(
    lambda t: run_argv(_config(t, data={"kind": "file", "path": str(t / "[h, d]" / "nope.npz")}), t))
case("markup-brackets-in-out", "--out", "[red]x[sweep]", "is a file")(
    lambda t: ["run", str(_config(t)), "--out", str(_touch(t / "[red]x[sweep]"))])


def test_there_are_at_least_60_cases():
    assert len(CASES) >= 60, len(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_malformed_input_exits_2_naming_the_field(name, tmp_path, capsys):
    field, words, argv = CASES[name]
    code = main(argv(tmp_path))
    captured = capsys.readouterr()
    output = captured.out + captured.err
    assert code == 2, output
    assert "Traceback" not in output
    lines = captured.err.splitlines()
    assert any(line.startswith((f"  {field}:", f"error: {field}:")) for line in lines), captured.err
    fields = [line.split(": ", 1)[0] for line in captured.err.splitlines() if line.startswith("  ")]
    assert not any("[" in f for f in fields), fields  # no pydantic union tags such as list[list[float]]
    for w in words:
        assert w in captured.err, (w, captured.err)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").glob("*/summary.json"))  # nothing ran
