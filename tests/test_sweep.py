"""Sweeps: expansion and validation, the results table, resume, failure isolation, phase plots."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import yaml

pd = pytest.importorskip("pandas")

from twolayer.cli import main  # noqa: E402
from twolayer.sweep.phase import (  # noqa: E402
    AGGREGATES, THEORIES, fit_theory, is_scale, plot_sweep,
)
from twolayer.store import RunStore  # noqa: E402
from twolayer.theory.alignment import separability  # noqa: E402
from twolayer.sweep import SweepError, expand, load_sweep, read_table, run_sweep  # noqa: E402

BASE = {
    "data": {"kind": "two_points", "angle": math.pi, "labels": [1, -1]},
    "model": {"kind": "two_layer", "activation": {"name": "leaky_relu", "slope": 0.2}, "width": 4},
    "init": {"kind": "balanced", "scale": 1e-2},
    "loss": {"kind": "logistic", "reduction": "mean"},
    "train": {"method": "gd", "lr": 0.1, "steps": 60},
    "observe": {"schedule": "every", "every": 10, "metrics": ["loss", "accuracy"]},
}


def sweep(**kw) -> dict:
    return {"name": "s", "base": BASE, **kw}


# -- expansion and validation -----------------------------------------------------------------

def test_grid_is_cartesian_and_zip_runs_in_lock_step():
    spec = load_sweep(sweep(grid={"init.scale": [1e-2, 1e-3], "model.width": [2, 3, 4]},
                            zip={"train.lr": [0.1, 0.2], "train.steps": [20, 10]}, seeds=3))
    points = expand(spec)
    assert len(points) == 2 * 3 * 2
    combos = {(p.values["init.scale"], p.values["model.width"], p.values["train.lr"], p.values["train.steps"])
              for p in points}
    assert len(combos) == 12
    assert all((lr, st) in {(0.1, 20), (0.2, 10)} for *_, lr, st in combos)  # zip never crossed with itself
    p = points[5]
    assert p.config["init"]["scale"] == p.values["init.scale"] and p.config["train"]["lr"] == p.values["train.lr"]
    assert p.config["seeds"] == 3 and "seed" not in p.config
    assert p.config["name"] == f"s-scale{p.values['init.scale']:g}-width{p.values['model.width']}-lr{p.values['train.lr']:g}-steps{p.values['train.steps']}"
    assert len({q.config["name"] for q in points}) == 12  # distinct, readable run names
    assert p.config["train"]["method"] == "gd" and BASE["init"]["scale"] == 1e-2  # base untouched
    assert [q.index for q in points] == list(range(12))


def test_a_swept_key_that_is_no_config_field_is_a_sweep_error(tmp_path):
    with pytest.raises(SweepError) as info:
        run_sweep(sweep(grid={"train.lrr": [0.1, 0.2]}), out=tmp_path)
    assert info.value.errors == [("grid.train.lrr", "unknown field 'lrr' (did you mean 'lr'?) in the run config")]


def test_run_names_fall_back_to_a_hash():
    # values that print alike once the name's characters are cleaned (0.1 and "0.1" are refused: mixed kinds)
    points = expand(load_sweep(sweep(grid={"model.activation": ["relu", "re lu"]})))
    names = [p.config["name"] for p in points]
    assert len(set(names)) == 2 and all(n.startswith("s-") and len(n) == 10 for n in names)
    long = expand(load_sweep(sweep(name="x" * 60, grid={"model.activation": [{"name": "leaky_relu", "slope": 0.5}]})))
    assert len(long[0].config["name"]) <= 80


def test_base_from_a_path_and_no_grid_is_one_point(tmp_path):
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(BASE))
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"name": "p", "base": "base.yaml"}))
    points = expand(load_sweep(tmp_path / "s.yaml"))
    assert len(points) == 1 and points[0].config["data"]["kind"] == "two_points" and points[0].values == {}


@pytest.mark.parametrize("raw, field, words", [
    (sweep(zip={"train.lr": [0.1, 0.2], "train.steps": [10]}), "zip.train.steps", "equal lengths"),
    (sweep(grid={"trian.lr": [0.1]}), "grid.trian.lr", "unknown config section 'trian'"),
    (sweep(grid={"train.lr": []}), "grid.train.lr", "at least one value"),
    (sweep(grid={"train.lr": 0.1}), "grid.train.lr", "list"),
    (sweep(grid={"seed": [0, 1]}), "grid.seed", "seeds"),
    (sweep(grid={"train.lr": [0.1]}, zip={"train.lr": [0.2]}), "zip.train.lr", "not both"),
    (sweep(seeds=0), "seeds", "positive"),
    (sweep(grdi={}), "grdi", "unknown field"),
    ({"name": "s"}, "base", "Field required"),
    ({"name": "bad name", "base": BASE}, "name", "pattern"),
    ({"name": "s", "base": "missing.yaml"}, "base", "file not found"),
])
def test_validation_errors_name_the_field(raw, field, words):
    with pytest.raises(SweepError) as info:
        load_sweep(raw)
    paths = [p for p, _ in info.value.errors]
    assert field in paths, info.value.errors
    assert words in dict(info.value.errors)[field]
    assert str(info.value).startswith("invalid sweep:")


@pytest.mark.parametrize("raw, field, words", [
    (sweep(grid={"train.lr": [0.01], "train": [{"method": "gd", "lr": 0.1, "steps": 10}]}), "grid.train",
     "overlaps grid.train.lr (train holds train.lr)"),
    (sweep(grid={"init": [{"kind": "gaussian", "scale": 0.1}]}, zip={"init.scale": [0.2]}), "zip.init.scale",
     "overlaps grid.init"),
    (sweep(zip={"model": [{"width": 3}], "model.width": [4]}), "zip.model.width", "overlaps zip.model"),
    (sweep(grid={"train.lr": [0.1, 0.2, 0.1]}), "grid.train.lr", "lists 0.1 twice"),
    (sweep(grid={"model.width": [3, 3.0]}), "grid.model.width", "lists 3 twice"),
    (sweep(grid={"init": [{"kind": "gaussian", "scale": 1}, {"scale": 1.0, "kind": "gaussian"}]}), "grid.init", "twice"),
    (sweep(zip={"train.lr": [0.1, 0.2, 0.1], "train.steps": [10, 10, 10]}), "zip", "appears twice"),
])
def test_a_sweep_whose_table_would_not_match_its_runs_is_refused(raw, field, words):
    """Overlapping keys (the run takes one value, the table shows the other) and values listed twice
    (two table rows for one run)."""
    with pytest.raises(SweepError) as info:
        load_sweep(raw)
    assert field in dict(info.value.errors), info.value.errors
    assert words in dict(info.value.errors)[field]


def test_a_zip_list_may_repeat_a_value_in_distinct_rows():
    assert len(expand(load_sweep(sweep(zip={"train.lr": [0.1, 0.1], "train.steps": [10, 20]})))) == 2


def test_numpy_grid_values_are_their_values():
    as_arrays = expand(load_sweep(sweep(grid={"init.scale": np.array([1e-2, 1e-3]), "model.width": np.arange(2, 4)},
                                        seeds=np.int64(2))))
    as_lists = expand(load_sweep(sweep(grid={"init.scale": [1e-2, 1e-3], "model.width": [2, 3]}, seeds=2)))
    assert [p.config for p in as_arrays] == [p.config for p in as_lists]


def test_plot_refuses_the_same_key_on_both_axes(tmp_path, capsys):
    assert main(["plot", str(tmp_path), "--x", "init.scale", "--y", "init.scale", "--metric", "loss"]) == 2
    assert "--y: is 'init.scale', the key of --x too" in capsys.readouterr().err


# -- running, table, resume, failures ---------------------------------------------------------

def test_sweep_table_one_row_per_point_and_seed(tmp_path):
    res = run_sweep(sweep(grid={"init.scale": [1e-2, 1e-3]}, zip={"model.width": [3, 5]}, seeds=[0, 4]), out=tmp_path)
    assert res.exit_code == 0 and not res.failures
    df, keys = read_table(tmp_path / "s")
    assert keys == ["init.scale", "model.width"]
    assert len(df) == 2 * 2 * 2 and sorted(set(df["seed"])) == [0, 4]
    assert df.groupby(["point", "seed"]).size().max() == 1
    assert {"point", "init.scale", "model.width", "seed", "run_id", "status", "message", "cached", "wall_seconds",
            "task_seconds", "final.loss", "final.accuracy", "event.loss_halved"} <= set(df.columns)
    csv = pd.read_csv(tmp_path / "s" / "results.csv")
    assert list(csv.columns) == list(df.columns) and len(csv) == len(df)
    # every row agrees with its run's stored summary (seed k of the batch)
    store = RunStore(tmp_path)
    for _, row in df.iterrows():
        s = store.read_summary(tmp_path / row["run_id"])
        k = s["seeds"].index(row["seed"])
        assert row["final.loss"] == s["final"]["loss"][k]
        assert s["final"]["loss"][k] < math.log(2)  # training made progress
        loaded = yaml.safe_load((tmp_path / row["run_id"] / "config.yaml").read_text())
        assert loaded["init"]["scale"] == row["init.scale"] and loaded["model"]["width"] == row["model.width"]


def test_resume_skips_finished_points_and_force_redoes(tmp_path):
    spec = sweep(grid={"init.scale": [1e-2, 1e-3, 1e-4]}, seeds=2)
    first = run_sweep(spec, out=tmp_path)
    assert [r["cached"] for r in first.results.values()] == [False] * 3
    # an interrupted point: its summary says so (as after Ctrl-C); the others are finished
    interrupted = first.results[1]["run_id"]
    store = RunStore(tmp_path)
    summary = store.read_summary(tmp_path / interrupted)
    store.write_summary(tmp_path / interrupted, {**summary, "status": "interrupted"})
    mtimes = {r["run_id"]: (tmp_path / r["run_id"] / "trajectory.npz").stat().st_mtime_ns for r in first.results.values()}
    second = run_sweep(spec, out=tmp_path)
    assert {i: r["cached"] for i, r in second.results.items()} == {0: True, 1: False, 2: True}
    assert all(r["status"] == "completed" for r in second.results.values())
    for r in second.results.values():
        changed = (tmp_path / r["run_id"] / "trajectory.npz").stat().st_mtime_ns != mtimes[r["run_id"]]
        assert changed == (r["run_id"] == interrupted)
    third = run_sweep(spec, out=tmp_path, force=True)
    assert not any(r["cached"] for r in third.results.values())
    np.testing.assert_array_equal(third.table()["final.loss"], first.table()["final.loss"])
    assert len(store.list()) == 3  # the index holds each point once


def test_interrupted_sweep_writes_its_table_and_resumes(tmp_path):
    from twolayer.sweep import SweepProgress

    class StopAfterFirst(SweepProgress):
        def point_done(self, point, result, counts):
            if counts["done"] == 1:
                raise KeyboardInterrupt

    spec = sweep(grid={"init.scale": [1e-2, 1e-3, 1e-4]})
    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, out=tmp_path, progress=StopAfterFirst())
    df, _ = read_table(tmp_path / "s")
    assert list(df["status"]) == ["completed", "not run", "not run"]
    resumed = run_sweep(spec, out=tmp_path)
    assert [r["cached"] for _, r in sorted(resumed.results.items())] == [True, False, False]
    assert resumed.exit_code == 0 and list(resumed.table()["status"]) == ["completed"] * 3


def test_failure_isolation(tmp_path):
    spec = sweep(zip={
        "model.width": [3, -1, 3, 3],
        "loss.kind": ["logistic", "logistic", "square", "logistic"],
        "train.lr": [0.1, 0.1, 50.0, None],
        "train.method": ["gd", "gd", "gd", "flow"],
        "train.max_solver_steps": [None, None, None, 1],  # None: not set (gd has no solver)
        "train.time": [None, None, None, 5.0],
        "train.steps": [60, 60, 60, None],
    }, seeds=2)
    res = run_sweep(spec, out=tmp_path)
    status = {i: r["status"] for i, r in res.results.items()}
    assert status == {0: "completed", 1: "invalid", 2: "diverged", 3: "failed"}
    assert res.exit_code == 1 and [p.index for p, _ in res.failures] == [1, 2, 3]
    assert "model.width" in res.results[1]["message"]
    assert "non-finite" in res.results[2]["message"] or "diverg" in res.results[2]["message"].lower()
    df = res.table()
    assert len(df) == 8 and set(df[df["point"] == 1]["status"]) == {"invalid"}
    assert df[df["point"] == 0]["final.loss"].notna().all()


@pytest.fixture
def cli():
    return main


def test_cli_sweep_exit_codes_and_plot(tmp_path, cli):
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(sweep(name="g", grid={"init.scale": [1e-2, 1e-3]}, seeds=2)))
    assert main(["sweep", str(good), "--out", str(tmp_path / "o")]) == 0
    assert main(["plot", str(tmp_path / "o" / "g"), "--x", "init.scale", "--metric", "loss"]) == 0
    assert (tmp_path / "o" / "g" / "loss_vs_init.scale.png").stat().st_size > 1000
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(sweep(name="b", grid={"model.width": [3, 0]})))
    assert main(["sweep", str(bad), "--out", str(tmp_path / "o")]) == 1
    assert (tmp_path / "o" / "b" / "results.parquet").is_file()
    invalid = tmp_path / "invalid.yaml"
    invalid.write_text(yaml.safe_dump(sweep(grid={"nope.x": [1]})))
    assert main(["sweep", str(invalid), "--out", str(tmp_path / "o")]) == 2
    assert main(["sweep", str(good), "--executor", "slurm"]) == 2
    assert main(["sweep", str(good), "--workers", "3"]) == 2  # --workers needs --executor dask
    assert main(["plot", str(tmp_path / "o" / "g"), "--x", "init.scale", "--metric", "nope"]) == 2
    assert main(["plot", str(tmp_path / "o" / "g"), "--x", "init.scale", "--metric", "loss", "--theory", "x"]) == 2


# -- phase plots and theory overlays -----------------------------------------------------------

def test_aggregates_on_known_values():
    v = np.array([1.0, 2.0, 4.0, np.nan])
    assert AGGREGATES.get("median").fn(v) == (2.0, 1.0, 4.0)
    m, lo, hi = AGGREGATES.get("mean").fn(v)
    se = np.std([1, 2, 4], ddof=1) / np.sqrt(3)
    assert m == pytest.approx(7 / 3) and hi - m == pytest.approx(2 * se) and m - lo == pytest.approx(2 * se)
    p, lo, hi = AGGREGATES.get("fraction").fn(np.array([1.0, 0.0, np.nan, 3.0]))
    assert p == 0.5 and 0.0 < lo < 0.5 < hi < 1.0
    # Wilson interval for 0 of 10 has lower end 0 and upper end z^2 / (n + z^2)
    p, lo, hi = AGGREGATES.get("fraction").fn(np.zeros(10))
    assert (p, lo) == (0.0, 0.0) and hi == pytest.approx(1.96**2 / (10 + 1.96**2))


def test_theory_fits_recover_constants():
    g = np.array([1.0, 2.0, 4.0, 8.0])
    pred, fit = fit_theory("scale", g, 3.0 * g)
    assert fit["C"] == pytest.approx(3.0) and fit["slope"] == pytest.approx(1.0)
    np.testing.assert_allclose(pred, 3.0 * g)
    pred, fit = fit_theory("offset", g, g + 5.0)
    assert fit["c"] == pytest.approx(5.0) and fit["slope"] == pytest.approx(1.0)
    _, fit = fit_theory("scale", g, g**2)
    assert fit["slope"] == pytest.approx(2.0)  # a wrong power law is visible in the slope
    pred, fit = fit_theory("none", g, g)
    assert fit == {} and pred is g or np.array_equal(pred, g)


def test_theory_closed_forms():
    from twolayer.sweep.phase import TheoryInputs

    inp = TheoryInputs({"model.width": np.array([1.0, 2.0, 5.0])}, [None] * 3)
    np.testing.assert_allclose(THEORIES.get("success_probability").basis(inp), [0.0, 0.5, 1 - 2.0**-4])
    # mu of two unit points at angle a with equal labels is cos(a); with labels (1, -1), cos(pi - a)
    a = 0.3
    X = np.array([[1.0, 0.0], [np.cos(a), np.sin(a)]])
    assert separability(X, np.array([1.0, 1.0])) == pytest.approx(np.cos(a))
    assert separability(np.array([[1.0, 0.0], [-np.cos(a), -np.sin(a)]]), np.array([1.0, -1.0])) == pytest.approx(np.cos(a))
    assert is_scale([1e-2, 1e-3, 1e-4]) and is_scale([2, 4, 8, 16, 32]) and not is_scale([1, 2, 3, 4])
    assert is_scale([2, 4, 8]) and not is_scale([0.15, 0.35, 0.7]) and not is_scale([1, 2, 3, 4, 6])
    assert not is_scale([0.1, 0.2]) and not is_scale([-1.0, 10.0])


def test_fit_time_matches_the_closed_form_slope(tmp_path):
    """Lyu et al. 2021 Thm E.4: t_fit = ln(1/scale) / lambda + O(1), lambda = (1 + alpha) ||mu|| / 4.

    Symmetric pair x, -x (||mu|| = 1), leaky ReLU alpha = 0.2: 1/lambda = 4 / 1.2. The fitted
    slope of the measured loss-halving time against ln(1/scale)/lambda must be 1 within 3 %.
    """
    spec = sweep(name="fit", grid={"init.scale": [1e-3, 1e-5, 1e-7]}, seeds=2)
    spec["base"] = {**BASE, "train": {"method": "gd", "lr": 0.1, "steps": 700},
                    "observe": {"schedule": "every", "every": 2, "metrics": ["loss"]}}
    run_sweep(spec, out=tmp_path)
    path, fitted, _ = plot_sweep(tmp_path / "fit", x="init.scale", metric="loss_halved", theory="fit_time")
    assert path.is_file() and fitted["slope"] == pytest.approx(1.0, abs=0.03)
    df, _ = read_table(tmp_path / "fit")
    t = df.groupby("init.scale")["event.loss_halved"].median()
    per_decade = (t[1e-7] - t[1e-3]) / 4
    assert per_decade == pytest.approx(np.log(10) * 4 / 1.2, rel=0.03)
    path2, _, _ = plot_sweep(tmp_path / "fit", x="init.scale", y="seed", metric="loss_halved", theory="fit_time",
                          output=tmp_path / "hm.png")
    assert path2.stat().st_size > 1000


def test_example_sweeps_reproduce_and_pass(tmp_path):
    """The registered example sweeps run through `reproduce` like any experiment: each point is a
    run, claims read the results table, figures are drawn."""
    from twolayer.claims import reproduce
    from twolayer.report import write_report

    rep = reproduce(["sweeps/fit-time", "sweeps/success-width"], scale="quick", out=tmp_path)
    assert [c.passed for c in rep.claims] == [True] * 3, [(c.id, c.measured, c.details) for c in rep.claims]
    assert sum(len(e.runs) for e in rep.experiments) == 10
    index = write_report(rep)
    figures = sorted(p.name for p in (index.parent / "figures").iterdir())
    assert figures == ["sweeps_fit-time_fit-time.png", "sweeps_success-width_success.png"]


def test_resources_option_parsing():
    from twolayer.cli.sweep import parse_resources

    assert parse_resources(["GPU=1", "MEM=2.5", "TPU"]) == {"GPU": 1.0, "MEM": 2.5, "TPU": 1.0}
    with pytest.raises(SweepError, match="--resources"):
        parse_resources(["GPU=one"])


def test_phase_figure_lines_heatmap_and_categories_from_a_table():
    from twolayer.sweep.phase import phase_figure

    rows = []
    for i, (act, scale) in enumerate([(a, s) for a in ("relu", "abs", '{"name": "leaky_relu"}') for s in (1e-2, 1e-4)]):
        for seed in range(3):
            rows.append({"point": i, "model.activation": act, "init.scale": scale, "seed": seed, "run_id": f"r{i}",
                         "status": "completed" if seed < 2 else "diverged", "run_status": "diverged",
                         "final.loss": 10.0 * i + seed})
    df = pd.DataFrame(rows)
    keys = ["model.activation", "init.scale"]
    fig, _ = phase_figure(df, x="model.activation", metric="loss", keys=keys)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["abs", "relu", '{"name": "leaky_relu"}']
    assert len(ax.get_lines()) == 2  # one line per init.scale
    fig, _ = phase_figure(df, x="init.scale", y="model.activation", metric="final.loss", keys=keys)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    mesh = ax.collections[0].get_array()
    # median over the completed seeds 0 and 1 only (seed 2 diverged): 10 i + 0.5
    assert sorted(np.asarray(mesh).ravel().tolist()) == [0.5, 10.5, 20.5, 30.5, 40.5, 50.5]
    with pytest.raises(KeyError, match="--x"):
        phase_figure(df, x="model.width", metric="loss", keys=keys)
    # a third swept key gives one heatmap per value
    two = pd.concat([df.assign(**{"train.lr": 0.1}), df.assign(**{"train.lr": 0.2}, **{"final.loss": -df["final.loss"]})])
    fig, _ = phase_figure(two, x="init.scale", y="model.activation", metric="loss", keys=[*keys, "train.lr"])
    heat = [a for a in fig.axes if a.collections and a.get_title()]
    assert sorted(a.get_title() for a in heat) == ["train.lr=0.1", "train.lr=0.2"]
    assert min(np.asarray(heat[1].collections[0].get_array()).ravel()) == -50.5


def test_unbatched_points_keep_the_base_seed(tmp_path):
    res = run_sweep(sweep(base={**BASE, "seed": 5}, grid={"train.lr": [0.1, 0.05]}), out=tmp_path)
    df = res.table()
    assert list(df["seed"]) == [5, 5] and list(df["point"]) == [0, 1]
    store = RunStore(tmp_path)
    for _, row in df.iterrows():
        s = store.read_summary(tmp_path / row["run_id"])
        assert s["seeds"] == [5] and row["final.loss"] == s["final"]["loss"]  # a float, not a list


def test_example_sweep_files_via_the_cli(tmp_path, cli):
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples" / "sweeps"
    assert len(expand(load_sweep(examples / "width-and-scale.yaml"))) == 3 * 4 * 2
    assert main(["sweep", str(examples / "fit-time.yaml"), "--out", str(tmp_path)]) == 0
    assert main(["plot", str(tmp_path / "fit-time"), "--x", "init.scale", "--metric", "fit_time",
                 "--theory", "fit_time"]) == 0
    fitted = yaml.safe_load((tmp_path / "fit-time" / "fit_time_vs_init.scale.json").read_text())["fitted"]
    assert fitted["slope"] == pytest.approx(1.0, abs=0.03)


def test_a_theory_drawn_outside_its_assumptions_is_warned_about(tmp_path, capsys):
    """Issue 30: `--theory fit_time` (Lyu et al.: leaky ReLU, logistic loss, symmetric data) fitted to ReLU runs
    with exponential loss on non-symmetric data was drawn without a word."""
    base = {**BASE, "data": {"kind": "two_points", "angle": 1.2, "labels": [1, -1]},
            "model": {**BASE["model"], "activation": "relu"}, "loss": {"kind": "exponential", "reduction": "mean"}}
    run_sweep({"name": "off", "base": base, "grid": {"init.scale": [1e-2, 1e-3]}, "seeds": 2}, out=tmp_path)
    _, _, broken = plot_sweep(tmp_path / "off", x="init.scale", metric="loss", theory="fit_time")
    assert [b.split(" (")[0] for b in broken] == ["leaky ReLU activation, 0 < alpha < 1", "logistic loss",
                                                  "symmetric data"]
    assert all("2 of 2 runs break it" in b for b in broken)
    assert json.loads((tmp_path / "off" / "loss_vs_init.scale.json").read_text())["assumptions_broken"] == broken
    assert main(["plot", str(tmp_path / "off"), "--x", "init.scale", "--metric", "loss", "--theory", "fit_time"]) == 0
    assert capsys.readouterr().err.count("warning: --theory fit_time assumes") == 3


def test_the_paper_setting_breaks_no_assumption_of_its_theory(tmp_path):
    run_sweep({"name": "on", "base": BASE, "grid": {"init.scale": [1e-2, 1e-3]}, "seeds": 1}, out=tmp_path)
    _, fitted, broken = plot_sweep(tmp_path / "on", x="init.scale", metric="loss", theory="fit_time")
    assert broken == []  # two points at angle pi: x and -x with labels 1, -1
    assert fitted["c_lo"] <= fitted["c"] <= fitted["c_hi"]


def test_points_not_reached_and_seed_counts_are_marked():
    """A median over 1 of 2 seeds says 1/2, and a point where no seed reached the event is drawn as
    "not reached, 0/2" instead of being left out."""
    import pandas as pd

    from twolayer.sweep.phase import phase_figure

    df = pd.DataFrame({"init.scale": [1e-1, 1e-1, 1e-2, 1e-2, 1e-3, 1e-3], "seed": [0, 1] * 3,
                       "run_id": ["a", "a", "b", "b", "c", "c"], "status": ["completed"] * 6,
                       "event.t1": [1.0, 1.2, 2.0, np.nan, np.nan, np.nan]})
    fig, _ = phase_figure(df, x="init.scale", metric="t1", keys=["init.scale"])
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "2/2" in texts and "1/2" in texts and "not reached, 0/2" in texts
    assert "not reached (0 seeds)" in fig.axes[0].get_legend_handles_labels()[1]
    fig_hm, _ = phase_figure(df, x="init.scale", y="seed", metric="t1", keys=["init.scale", "seed"])
    assert any("not reached" in t.get_text() for t in fig_hm.axes[0].texts)
