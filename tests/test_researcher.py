"""A researcher's own study through the API (issue 30, section 4): ``twolayer.runs`` knows the sweeps, filters on
dotted fields (and mappings such as an activation), and a stored run's config has attribute access."""

from __future__ import annotations

import pickle

import numpy as np

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


@pytest.fixture(scope="module")
def cones(tmp_path_factory):
    """Three seeds on TOY-A from a small init, recording the cones: neurons move between cones over time."""
    return twolayer.run({"name": "cones", "data": {"kind": "toy2d"}, "model": {"width": 6},
                         "init": {"kind": "balanced", "scale": 1e-4}, "loss": {"kind": "exponential", "reduction": "sum"},
                         "train": {"method": "gd", "lr": 0.02, "time": 6.0},
                         "observe": {"points": 30, "metrics": ["loss", "cone", "v", "w_norm"]}, "seeds": 3},
                        out=tmp_path_factory.mktemp("cones"))


def test_plot_of_a_categorical_observable_counts_neurons_per_category(cones):
    from twolayer.theory.alignment import CONE_NAMES

    cone = cones.trajectory["cone"]  # [S, T, h] codes
    t = cones.trajectory["t"]
    ax = cones.plot("cone")
    labels = [x.get_text() for x in ax.get_legend().get_texts()]
    seen = [CONE_NAMES[c] for c in CONE_NAMES if np.any(cone == c)]
    assert labels == seen and len(seen) >= 2
    for line, code in zip(ax.get_lines(), [c for c in CONE_NAMES if np.any(cone == c)]):
        np.testing.assert_allclose(line.get_ydata(), np.median(np.sum(cone == code, axis=-1), axis=0)[t > 0])
    assert ax.get_ylabel() == "neurons per cone" and ax.get_yscale() == "linear"
    one = cones.plot("cone", seeds=1)
    assert all(line.get_ydata().max() <= 6 for line in one.get_lines())
    assert sum(np.asarray(line.get_ydata()) for line in one.get_lines()).tolist() == [6.0] * int(np.sum(t > 0))


def test_plot_draws_the_picked_seeds_event_times(cones):
    t1 = cones.summary["events"]["t1"]
    assert len({x for x in t1 if x is not None}) >= 2  # the seeds differ, so the test can tell them apart
    for seed in (0, 2):
        ax = cones.plot("loss", seeds=seed, events=["t1", "norm_growth"])
        xs = {float(line.get_xdata()[0]) for line in ax.get_lines() if len(set(line.get_xdata())) == 1}
        assert t1[seed] in xs and cones.summary["events"]["norm_growth"][seed] in xs
        others = {t1[s] for s in range(3) if s != seed} - {t1[seed]}
        assert not (others & xs)
    both = cones.plot("loss", seeds=[0, 2], events=["t1"])
    assert {x.get_text() for x in both.get_legend().get_texts()} >= {"t1 (seed 0)", "t1 (seed 2)"}


def test_plot_of_an_event_that_needs_an_unrecorded_metric_names_it(tmp_path):
    run = twolayer.run(base_config(observe={"points": 5, "metrics": ["loss"]}), out=tmp_path)
    with pytest.raises(ValueError, match=r"event 't1' was not detected in this run \(it reads 'cone', 'v': add them"):
        run.plot("loss", events=["t1"])


def test_the_notebook_extra_runs_the_notebook_headless():
    """``jupyter execute`` (nbclient's console script, which the docs name) comes with the notebook extra, so the
    notebook runs after ``make install`` without the test extra."""
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    notebook = project["project"]["optional-dependencies"]["notebook"]
    assert any(req.split(">")[0].split("[")[0].strip() == "nbclient" for req in notebook)
    guide = (Path(__file__).resolve().parents[1] / "docs" / "guide.md").read_text()
    assert "jupyter execute examples/notebook.ipynb" in guide


def test_list_shows_each_experiments_cost_from_the_last_reproduction(tmp_path, capsys):
    import json

    from twolayer.claims import catalog
    from twolayer.cli import main

    first, second = catalog()[:2]
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "summary.json").write_text(json.dumps({"scale": "quick", "experiments": [
        {"id": first["id"], "wall_seconds": 12.34, "cached_runs": 0},
        {"id": second["id"], "wall_seconds": 5.0, "cached_runs": 2}]}))
    assert main(["list", "--experiments", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "12.3 s (quick)" in printed and "5.0 s (quick, 2 cached run(s))" in printed
    assert "cost: the wall time of each experiment in the last reproduction" in printed
    assert main(["list", "--experiments", "--out", str(tmp_path / "none")]) == 0
    assert "cost: none known" in capsys.readouterr().out
