"""A researcher's own study through the API (issue 30, section 4): ``twolayer.runs`` knows the sweeps, filters on
dotted fields (and mappings such as an activation), and a stored run's config has attribute access."""

from __future__ import annotations

import pickle

import pytest
import yaml

import twolayer
from conftest import base_config
from twolayer.sweep import run_sweep


def _sweep(name, scales):
    return {"name": name, "base": base_config(train={"method": "gd", "lr": 0.05, "steps": 20}),
            "grid": {"init.scale": scales}}


def test_runs_has_the_sweep_of_every_run_and_selects_by_sweep_name(tmp_path):
    run_sweep(_sweep("scan", [0.1, 0.3]), out=tmp_path)
    run_sweep(_sweep("again", [0.3, 0.5]), out=tmp_path)
    loose = twolayer.run(base_config(name="loose"), out=tmp_path)
    table = twolayer.runs(tmp_path)
    where = {(row["sweep"], row["init.scale"]): row["sweep_point"] for _, row in table.iterrows()
             if isinstance(row["sweep"], str)}
    assert where == {("scan", 0.1): 0, ("scan", 0.3): 1, ("again", 0.3): 0, ("again", 0.5): 1}
    assert table.loc[table["run_id"] == loose.path.name, "sweep"].isna().all()
    assert sorted(twolayer.runs(tmp_path, sweep="scan")["init.scale"]) == [0.1, 0.3]
    assert sorted(twolayer.runs(tmp_path, sweep="again")["init.scale"]) == [0.3, 0.5]
    assert sorted(twolayer.runs(tmp_path, sweep=["again", "nothing"])["init.scale"]) == [0.3, 0.5]
    assert twolayer.runs(tmp_path, sweep="sca").empty  # a name, not a prefix


def test_runs_filters_on_dotted_fields_and_mappings(tmp_path):
    twolayer.run(base_config(model={"kind": "two_layer", "activation": {"name": "leaky_relu", "slope": 0.2},
                                    "width": 4}), out=tmp_path)
    twolayer.run(base_config(), out=tmp_path)
    assert list(twolayer.runs(tmp_path, **{"model.width": 4})["model.width"]) == [4]
    assert list(twolayer.runs(tmp_path, model__width=8)["model.width"]) == [8]
    leaky = twolayer.runs(tmp_path, **{"model.activation": {"slope": 0.2, "name": "leaky_relu"}})
    assert list(leaky["model.width"]) == [4]
    assert twolayer.runs(tmp_path, **{"model.activation": {"name": "leaky_relu", "slope": 0.3}}).empty
    assert list(twolayer.runs(tmp_path, **{"model.activation.name": "leaky_relu"})["model.width"]) == [4]
    with pytest.raises(ValueError, match="did you mean model.width"):
        twolayer.runs(tmp_path, **{"model.widht": 4})


def test_a_stored_runs_config_has_attribute_access(tmp_path):
    run = twolayer.run(base_config(train={"method": "gd", "lr": 0.05, "time": 1.0}), out=tmp_path)
    stored = twolayer.open_run(run.path.name, out=tmp_path)
    for config in (run.config, stored.config):
        assert config.train.lr == 0.05 and config.train.steps == 20 and config.model.width == 8
        assert config["train"]["lr"] == config.train.lr and config.get("seeds") is None
        assert config.validated().train.steps == 20  # the RunConfig
        with pytest.raises(AttributeError, match="did you mean 'train'"):
            config.trian
    assert yaml.safe_load(yaml.safe_dump(stored.config)) == dict(stored.config)
    assert pickle.loads(pickle.dumps(stored.config)) == stored.config
