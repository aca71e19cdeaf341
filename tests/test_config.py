"""Config validation: every malformed config gives an error that names the field."""

from __future__ import annotations

import copy

import pytest

from conftest import base_config
from twolayer.config import ConfigError, load_config

MALFORMED = [
    # (description, mutation applied to a valid config, field path, fragment of the message)
    ("unknown activation", {"model.activation": "relu2"}, "model.activation", "is not one of relu, leaky_relu"),
    ("leaky slope out of range", {"model.activation": {"name": "leaky_relu", "slope": 2.0}}, "model.activation", "slope"),
    ("unknown activation parameter", {"model.activation": {"name": "relu", "gain": 2}}, "model.activation", "gain"),
    ("negative width", {"model.width": -3}, "model.width", "greater than 0"),
    ("unknown net", {"model.kind": "three_layer"}, "model.kind", "is not one of two_layer, mean_field"),
    ("unknown loss", {"loss.kind": "hinge"}, "loss.kind", "is not one of exponential, logistic, logistic2, square"),
    ("bad reduction", {"loss.reduction": "median"}, "loss.reduction", "'median' is not allowed"),
    ("unknown data kind", {"data": {"kind": "cifar"}}, "data", "is not one of"),
    ("data parameter of wrong type", {"data.angle": "wide"}, "data.angle", "must be a number, not the string 'wide'"),
    ("unknown data parameter", {"data.radius": 2}, "data.radius", "unknown field"),
    ("bad labels", {"data.labels": [1, 0]}, "data.labels.1", "0 is not allowed: expected -1 or 1"),
    ("unknown init kind", {"init.kind": "xavier"}, "init", "is not one of gaussian, balanced, standard, file"),
    ("non-positive init scale", {"init.scale": 0}, "init.scale", "greater than 0"),
    ("missing init file", {"init": {"kind": "file", "path": "nope.npz"}}, "init.path", "file not found"),
    ("missing data file", {"data": {"kind": "file", "path": "nope.npz"}}, "data.path", "file not found"),
    ("balanced init on mean-field", {"model.kind": "mean_field", "init.kind": "balanced"}, "init.kind",
     "does not apply to model.kind 'mean_field'"),
    ("unknown method", {"train.method": "adam"}, "train.method", "is not one of gd, sgd, flow"),
    ("gd without lr", {"train": {"method": "gd", "steps": 10}}, "train.lr", "is required"),
    ("steps and time", {"train.time": 1.0}, "train.steps", "exactly one of train.steps or train.time"),
    ("sgd without batch size", {"train.method": "sgd"}, "train.batch_size", "is required for method sgd"),
    ("flow with lr", {"train": {"method": "flow", "time": 1.0, "lr": 0.1}}, "train.lr", "not used by method flow"),
    ("flow without time", {"train": {"method": "flow"}}, "train.time", "is required for method flow"),
    ("bad layers", {"train.layers": "second"}, "train.layers", "'second' is not allowed"),
    ("negative weight decay", {"train.weight_decay": -1}, "train.weight_decay", "greater than or equal to 0"),
    ("unknown metric", {"observe.metrics": ["loss", "margin2"]}, "observe.metrics", "'margin2' is not one of loss"),
    ("metric for another net", {"model.kind": "mean_field", "init.kind": "standard", "observe.metrics": ["v"]},
     "observe.metrics", "defined for model.kind two_layer"),
    ("every without interval", {"observe.schedule": "every"}, "observe.every", "required by schedule 'every'"),
    ("unknown schedule", {"observe.schedule": "linear"}, "observe.schedule", "'linear' is not allowed"),
    ("too few points", {"observe.points": 1}, "observe.points", "greater than or equal to 2"),
    ("fractional every for gd", {"observe": {"schedule": "every", "every": 2.5}}, "observe.every", "whole number"),
    ("observation past the end", {"observe": {"schedule": "at", "at": [0, 500]}}, "observe.at", "past the end"),
    ("seed and seeds", {"seeds": 4, "seed": 1}, "seeds", "either seed or seeds"),
    ("zero seeds", {"seeds": 0}, "seeds", "positive count"),
    ("duplicate seeds", {"seeds": [1, 1]}, "seeds", "distinct"),
    ("population on non-Gaussian data", {"objective": "population"}, "objective", "has no population form"),
    ("bad precision", {"precision": "float16"}, "precision", "'float16' is not allowed"),
    ("unknown top-level key", {"optimizer": "adam"}, "optimizer", "unknown field"),
    ("bad name", {"name": "my run/1"}, "name", "pattern"),
]


@pytest.mark.parametrize(("description", "mutation", "path", "fragment"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_config_names_the_field(description, mutation, path, fragment):
    with pytest.raises(ConfigError) as info:
        load_config(base_config(), overrides=copy.deepcopy(mutation))
    paths = [p for p, _ in info.value.errors]
    assert path in paths, info.value.errors
    message = dict(info.value.errors)[path]
    assert fragment in message, (path, message)
    assert f"{path}: " in str(info.value)


def test_at_least_twenty_malformed_cases():
    assert len(MALFORMED) >= 20


def test_missing_data_section():
    with pytest.raises(ConfigError, match="data: is required"):
        load_config({"model": {"width": 3}})


def test_yaml_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("data: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    bad.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_config(bad)


def test_overrides_parse_yaml_values_and_time_resolves_to_steps():
    cfg = load_config(base_config(), overrides=["train.lr=0.5", "train.time=2.0", "train.steps=null",
                                                "model.activation={name: leaky_relu, slope: 0.2}"])
    assert cfg.train.lr == 0.5 and cfg.train.steps == 4 and cfg.train.time is None
    assert cfg.model.activation == {"name": "leaky_relu", "slope": 0.2}


def test_relative_paths_resolve_from_config_folder_and_hash_tracks_file_content(tmp_path):
    import numpy as np
    import yaml

    np.savez(tmp_path / "d.npz", X=np.eye(2), y=np.array([1.0, -1.0]))
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**base_config(), "data": {"kind": "file", "path": "d.npz"}}))
    a = load_config(path)
    assert a.data.path == str(tmp_path / "d.npz") and len(a.data.sha256) == 64
    np.savez(tmp_path / "d.npz", X=2 * np.eye(2), y=np.array([1.0, -1.0]))
    assert load_config(path).config_hash() != a.config_hash()


def test_resolved_config_round_trips_to_same_hash():
    cfg = load_config(base_config(seeds=3))
    again = load_config(cfg.resolved())
    assert again.config_hash() == cfg.config_hash()
    assert cfg.resolved()["model"]["width"] == 8


# -- strict inputs: quoted numbers, YAML duplicates, NumPy arrays, overrides ---------------------------

@pytest.mark.parametrize("mutation, path", [
    ({"model.width": "10"}, "model.width"),
    ({"train.steps": "100"}, "train.steps"),
    ({"train.lr": "0.05"}, "train.lr"),
    ({"init.scale": "1e-3"}, "init.scale"),
    ({"observe.points": "10"}, "observe.points"),
    ({"seeds": "3"}, "seeds"),
    ({"data.labels": ["1", -1]}, "data.labels.0"),
])
def test_a_quoted_number_is_refused_naming_the_field(mutation, path):
    with pytest.raises(ConfigError) as info:
        load_config(base_config(), overrides=mutation)
    assert dict(info.value.errors)[path].startswith("must be a number, not the string")


def test_yaml_exponents_without_a_dot_are_numbers(tmp_path):
    """YAML 1.1 reads ``1e-3`` as a string; the loader reads it as YAML 1.2 does (so refusing quoted
    numbers does not refuse ``lr: 1e-3``)."""
    path = tmp_path / "c.yaml"
    path.write_text("data: {kind: two_points}\ntrain: {method: gd, lr: 1e-3, steps: 100}\ninit: {kind: gaussian, scale: 2E-4}\n")
    cfg = load_config(path, overrides=["observe.every=1e1", "observe.schedule=every"])
    assert (cfg.train.lr, cfg.init.scale, cfg.observe.every) == (1e-3, 2e-4, 10.0)


@pytest.mark.parametrize("text, words", [
    ("name: a\ndata: {kind: two_points}\nname: b\n", "duplicate key 'name' at lines 1 and 3"),
    ("data: {kind: two_points}\ndata: {kind: two_points}\n", "duplicate key 'data' at lines 1 and 2"),
    ("data: {kind: two_points, angle: 1, angle: 2}\n", "duplicate key 'data.angle' at line 1, columns 26 and 36"),
    ("data:\n  kind: two_points\n  'angle': 1\n  angle: 2\n", "duplicate key 'data.angle' at lines 3 and 4"),
])
def test_a_key_given_twice_is_refused_naming_it_and_both_lines(tmp_path, text, words):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.errors[0][0] == "config" and words in info.value.errors[0][1], info.value.errors
    with pytest.raises(ConfigError, match="duplicate key 'angle'"):
        load_config(base_config(), overrides=["data={kind: two_points, angle: 1, angle: 2}"])


def test_merge_keys_and_shared_aliases_are_no_duplicates():
    from twolayer.fileio import load_yaml

    assert load_yaml("a: &a {x: 1}\nb:\n  <<: *a\n  x: 2\nc: [*a, *a]\n") == {"a": {"x": 1}, "b": {"x": 2},
                                                                               "c": [{"x": 1}, {"x": 1}]}


def test_numpy_arrays_and_scalars_are_taken_as_their_values():
    np = pytest.importorskip("numpy")
    W, v = 0.1 * np.arange(16.0).reshape(8, 2), np.linspace(-1, 1, 8)
    as_lists = load_config(base_config(init={"kind": "values", "W": W.tolist(), "v": v.tolist()},
                                       data={"kind": "two_points", "angle": 1.2, "radii": [1.0, 2.0], "labels": [1, -1]}))
    as_arrays = load_config(base_config(init={"kind": "values", "W": W, "v": v},
                                        data={"kind": "two_points", "angle": np.float64(1.2),
                                              "radii": np.array([1.0, 2.0]), "labels": np.array([1, -1])},
                                        model={"kind": "two_layer", "activation": "relu", "width": np.int64(8)}))
    assert as_arrays.config_hash() == as_lists.config_hash()
    overridden = load_config(base_config(), overrides={"init": {"kind": "values", "W": W, "v": v},
                                                       "data.radii": np.array([1.0, 2.0])})
    assert overridden.config_hash() == as_lists.config_hash()
    with pytest.raises(ConfigError, match="data.labels.0: must be a number, not true"):
        load_config(base_config(data={"kind": "two_points", "labels": np.array([True, False])}))


@pytest.mark.parametrize("overrides, words", [
    ("train.lr=0.1", "not str 'train.lr=0.1' (write ['train.lr=0.1'])"),
    ([1, 2], "1 is not a 'key=value' string"),
    (["train.lr=0.1", None], "None is not a 'key=value' string"),
    ({1: 2}, "key 1 is not a dotted config key"),
    (5, "must be a list of 'key=value' strings or a mapping"),
])
def test_overrides_of_the_wrong_type_are_a_config_error_naming_overrides(overrides, words):
    with pytest.raises(ConfigError) as info:
        load_config(base_config(), overrides=overrides)
    assert info.value.errors[0][0] == "overrides" and words in info.value.errors[0][1], info.value.errors


@pytest.mark.parametrize("init, path, fragment", [
    ({"kind": "values", "W": [[1.0, 2.0], 3.0]}, "init.W.1", "valid list"),
    ({"kind": "values", "W": [[[1.0, 2.0]], [[1.0, {}]]]}, "init.W.1.0.1", "valid number"),
    ({"kind": "balanced", "scale": 0.1, "signs": [1, 2, 1, 1, 1, 1, 1, 1]}, "init.signs.1", "expected -1 or 1"),
])
def test_union_members_are_left_out_of_field_paths(init, path, fragment):
    """Of a union that refused a value, only the closest member's errors, without pydantic's member tags
    (``init.W.list[list[float]].1``)."""
    with pytest.raises(ConfigError) as info:
        load_config(base_config(init=init, seeds=2))
    assert [p for p, _ in info.value.errors] == [path] and fragment in info.value.errors[0][1], info.value.errors


@pytest.mark.parametrize("data, path", [
    ({"kind": "two_points", "radii": [0, 0]}, "data.radii"),
    ({"kind": "multi_index", "d": 3, "r": 5}, "data.r"),
    ({"kind": "multi_index", "d": 3, "r": 2, "coefs": [1.0]}, "data.coefs"),
    ({"kind": "orthogonal", "n": 3, "d": 2}, "data.d"),
    ({"kind": "orthogonal", "n": 2, "labels": [1]}, "data.labels"),
    ({"kind": "toy2d", "pos_angles": [], "neg_angles": []}, "data.pos_angles"),
    ({"kind": "separable_cap", "radii": [0.0, 1.0]}, "data.radii"),
    ({"kind": "mnist_pair", "digits": [1, 1]}, "data.digits"),
    ({"kind": "hinted", "w_perp": [0.0, 0.0]}, "data.w_perp"),
])
def test_dataset_cross_field_checks_name_their_field(data, path):
    with pytest.raises(ConfigError) as info:
        load_config(base_config(data=data))
    assert [p for p, _ in info.value.errors] == [path], info.value.errors


@pytest.mark.parametrize("section, field, meant", [
    ("init", "scal", "scale"), ("data", "angel", "angle"), ("model", "widht", "width"), ("train", "stpes", "steps"),
    (None, "observ", "observe"),
])
def test_an_unknown_field_suggests_the_closest_known_one(section, field, meant):
    cfg = base_config()
    if section is None:
        cfg[field] = {"points": 3}
    else:
        cfg[section] = {**cfg[section], field: 1}
    with pytest.raises(ConfigError) as e:
        load_config(cfg)
    where = field if section is None else f"{section}.{field}"
    assert (where, f"unknown field {field!r} (did you mean {meant!r}?)") in e.value.errors


def test_an_unknown_field_far_from_any_gets_no_suggestion():
    with pytest.raises(ConfigError) as e:
        load_config({**base_config(), "zzzz": 1})
    assert ("zzzz", "unknown field 'zzzz'") in e.value.errors
