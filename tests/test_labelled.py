"""Labelled results (Run.to_xarray, open_run, runs), quick plots and the notebook summary."""

from __future__ import annotations

import json

import matplotlib
import numpy as np
import pytest

import twolayer
from twolayer.observe.planes import plane_basis
from twolayer.sweep import run_sweep

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

BASE = {
    "name": "lab",
    "data": {"kind": "two_points", "angle": 1.2, "labels": [1, -1]},
    "model": {"kind": "two_layer", "activation": "relu", "width": 6},
    "init": {"kind": "gaussian", "scale": 1e-4},
    "loss": {"kind": "exponential", "reduction": "mean"},
    "train": {"method": "gd", "lr": 0.05, "steps": 400},
    "observe": {"schedule": "log", "points": 12,
                "metrics": ["loss", "w_norm", "v", "cone", "cos_pos", "activation_pattern", "neuron_weights",
                            "neuron_plane_pm"]},
}


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("labelled") / "out"


@pytest.fixture(scope="module")
def batched(out):
    return twolayer.run({**BASE, "seeds": [3, 5]}, out=out)


@pytest.fixture(scope="module")
def single(out):
    return twolayer.run({**BASE, "name": "lab1", "seed": 2, "model": {**BASE["model"], "width": 4}}, out=out)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


# -- to_xarray -------------------------------------------------------------------------------------

def test_to_xarray_names_every_axis(batched):
    ds = batched.to_xarray()
    traj = batched.trajectory
    assert ds["loss"].dims == ("seed", "t")
    assert ds["w_norm"].dims == ("seed", "t", "neuron")
    assert ds["activation_pattern"].dims == ("seed", "t", "neuron", "sample")
    assert ds["neuron_weights"].dims == ("seed", "t", "neuron", "input")
    assert ds["neuron_plane_pm"].dims == ("seed", "t", "neuron", "plane")
    assert ds["final_W"].dims == ("seed", "neuron", "input") and ds["final_v"].dims == ("seed", "neuron")
    assert ds.sizes == {"seed": 2, "t": len(traj["t"]), "neuron": 6, "sample": 2, "input": 2, "plane": 2,
                        "reference": 2}
    assert ds["seed"].values.tolist() == [3, 5]
    np.testing.assert_array_equal(ds["t"].values, traj["t"])
    assert ds["step"].dims == ("t",)
    np.testing.assert_array_equal(ds["step"].values, traj["step"])
    for key in traj:
        if key not in ("t", "step"):
            np.testing.assert_array_equal(ds[key].values, traj[key])
            assert ds[key].dtype == traj[key].dtype
    np.testing.assert_array_equal(ds["final_W"].values, batched.final_params["W"])
    assert json.loads(ds.attrs["config"]) == batched.config
    assert twolayer.labelled.attrs_json(ds, "summary") == batched.summary
    assert ds.attrs["run_id"] == batched.path.name and ds.attrs["status"] == "completed"
    # label-based selection works: seed 5 is the second row of the trajectory
    np.testing.assert_array_equal(ds["w_norm"].sel(seed=5).isel(t=-1).values, traj["w_norm"][1, -1])


def test_to_xarray_single_seed_has_a_scalar_seed(single):
    ds = single.to_xarray()
    assert "seed" not in ds.dims and int(ds["seed"]) == 2
    assert ds["loss"].dims == ("t",) and ds["w_norm"].dims == ("t", "neuron")
    assert ds.sizes["neuron"] == 4


def _assert_exact(a, b):
    """Identical datasets with identical dtypes and bitwise-equal values (NaN where NaN)."""
    import xarray as xr

    xr.testing.assert_identical(a, b)
    for name in a.variables:
        assert a[name].dtype == b[name].dtype, name
        np.testing.assert_array_equal(a[name].values, b[name].values)
    assert a.attrs == b.attrs


def test_netcdf_round_trip_is_lossless(batched, tmp_path):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    ds = batched.to_xarray()
    ds.to_netcdf(tmp_path / "run.nc", engine="h5netcdf")
    with xr.open_dataset(tmp_path / "run.nc", engine="h5netcdf") as back:
        _assert_exact(ds, back.load())


def test_zarr_round_trip_is_lossless(batched, tmp_path):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("zarr")
    ds = batched.to_xarray()
    ds.to_zarr(tmp_path / "run.zarr", consolidated=False)
    _assert_exact(ds, xr.open_zarr(tmp_path / "run.zarr", consolidated=False).load())


# -- open_run and runs -----------------------------------------------------------------------------

def test_open_run_by_path_id_and_prefix(batched, out):
    for ref in (batched.path, batched.path.name, batched.path.name[:-3]):
        assert twolayer.open_run(ref, out=out).path == batched.path
    with pytest.raises(FileNotFoundError, match="no run matches"):
        twolayer.open_run("nope", out=out)


def test_runs_filters_on_dotted_config_fields(batched, single, out):
    table = twolayer.runs(out)
    assert set(table["run_id"]) == {batched.path.name, single.path.name}
    assert len(table) == 3  # one row per run and seed
    wide = twolayer.runs(out, **{"model.width": 6}, status="completed")
    assert wide["run_id"].tolist() == [batched.path.name] * 2
    assert wide["seed"].tolist() == [3, 5]
    np.testing.assert_allclose(wide["final.loss"], batched.summary["final"]["loss"])
    assert wide["event.norm_growth"].tolist() == pytest.approx(batched.summary["events"]["norm_growth"])
    assert twolayer.runs(out, **{"model.width": [4, 6]}).shape[0] == 3
    assert twolayer.runs(out, **{"model.width": lambda w: w < 5})["run_id"].tolist() == [single.path.name]
    assert twolayer.runs(out, status="diverged").empty
    assert twolayer.runs(out, seed=2)["run_id"].tolist() == [single.path.name]
    with pytest.raises(ValueError, match="did you mean model.width"):
        twolayer.runs(out, **{"model.widht": 6})


def test_runs_of_an_empty_folder(tmp_path):
    assert twolayer.runs(tmp_path / "none").empty


def test_sweep_table_has_the_form_of_runs(tmp_path):
    out = tmp_path / "out"
    base = {**BASE, "observe": {"schedule": "log", "points": 6, "metrics": ["loss", "w_norm"]}}
    sweep = run_sweep({"name": "sw", "base": base, "grid": {"model.width": [3, 5]}, "seeds": 2}, out=out)
    table = sweep.table()
    listed = twolayer.runs(out)
    shared = [c for c in table.columns if c not in ("point", "cached", "task_seconds")]
    assert {"model.width", "seed", "status", "final.loss", "event.norm_growth"} <= set(shared)
    assert set(shared) <= set(listed.columns)
    left = table[shared].sort_values(["run_id", "seed"]).reset_index(drop=True)
    right = listed[shared].sort_values(["run_id", "seed"]).reset_index(drop=True)
    assert left.astype(str).equals(right.astype(str))


# -- plots and the notebook summary ----------------------------------------------------------------

def test_plot_loss_is_a_band_over_seeds_on_log_time(batched):
    ax = batched.plot("loss")
    assert ax.get_xscale() == "log"  # log schedule and init scale 1e-4
    (line,) = ax.get_lines()
    t, loss = batched.trajectory["t"], batched.trajectory["loss"]
    np.testing.assert_allclose(line.get_xdata(), t[t > 0])
    np.testing.assert_allclose(line.get_ydata(), np.median(loss[:, t > 0], axis=0))
    (band,) = ax.collections  # the min-max range over the two seeds
    top = band.get_paths()[0].vertices[:, 1].max()
    assert top == pytest.approx(loss[:, t > 0].max())


def test_plot_seeds_neurons_and_split(batched):
    assert len(batched.plot("loss", seeds="all").get_lines()) == 2
    assert len(batched.plot("loss", seeds=5).get_lines()) == 1
    ax = batched.plot("w_norm", seeds=3, neurons="all")
    assert len(ax.get_lines()) == 6
    np.testing.assert_allclose(ax.get_lines()[2].get_ydata(), batched.trajectory["w_norm"][0, 1:, 2])
    assert ax.get_yscale() == "log"  # norms grow from 1e-4 to O(1)
    pooled = batched.plot("w_norm")  # median and min-max over neurons and seeds
    np.testing.assert_allclose(pooled.get_lines()[0].get_ydata(),
                               np.median(np.moveaxis(batched.trajectory["w_norm"][:, 1:], 1, -1).reshape(-1, 11), axis=0))
    split = batched.plot("cos_pos", split="sign")
    assert [t.get_text() for t in split.get_legend().get_texts()] == ["v > 0", "v < 0"]
    events = batched.plot("loss", events=["norm_growth"])
    assert any(np.allclose(l.get_xdata(), np.median(batched.summary["events"]["norm_growth"])) for l in events.get_lines())


def test_plot_rejects_what_it_cannot_draw(batched):
    with pytest.raises(ValueError, match=r"not recorded in .*\(recorded: .*cos_pos, loss"):
        batched.plot("stable_rank")
    with pytest.raises(ValueError, match="axes"):
        batched.plot("activation_pattern")
    with pytest.raises(ValueError, match=r"seed\(s\) \[7\] not in this run"):
        batched.plot("loss", seeds=7)


def test_repr_html_summarizes_the_run(batched):
    html = batched._repr_html_()
    assert batched.path.name in html and "completed" in html
    assert "two_points" in html and "width 6" in html and "gaussian (scale=0.0001)" in html
    median = float(np.median(batched.summary["final"]["loss"]))
    assert f"{median:.4g}" in html
    assert 'src="data:image/png;base64,' in html


# -- reference planes ------------------------------------------------------------------------------

def test_plane_basis_is_orthonormal_and_places_the_references():
    rng = np.random.default_rng(0)
    r1, r2 = rng.normal(size=5), rng.normal(size=5)
    basis, refs = plane_basis(r1, r2)
    np.testing.assert_allclose(basis @ basis.T, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(refs[0], [1, 0])
    cos = r1 @ r2 / np.linalg.norm(r1) / np.linalg.norm(r2)
    np.testing.assert_allclose(refs[1], [cos, np.sqrt(1 - cos**2)], atol=1e-12)
    basis, refs = plane_basis(r1, -3 * r1)  # parallel references (symmetric data): still a plane
    np.testing.assert_allclose(basis @ basis.T, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(refs[1], [-1, 0], atol=1e-12)
    with pytest.raises(ValueError, match="zero"):
        plane_basis(np.zeros(3), r2[:3])


def test_neuron_plane_pm_matches_numpy(batched):
    """The recorded coordinates are <w_j/||w_j||, e_k> on the basis of span(x+, x-)."""
    angle = BASE["data"]["angle"]
    x_pos, x_neg = np.array([1.0, 0.0]), np.array([np.cos(angle), np.sin(angle)])  # x1 has label 1, x2 label -1
    basis, refs = plane_basis(x_pos, x_neg)
    W = batched.trajectory["neuron_weights"]
    U = W / np.linalg.norm(W, axis=-1, keepdims=True)
    np.testing.assert_allclose(batched.trajectory["neuron_plane_pm"], U @ basis.T, atol=1e-12)
    np.testing.assert_allclose(batched.trajectory["neuron_plane_pm_refs"][0, 0], refs, atol=1e-12)
    # in 2-D the plane is the whole space: every direction lies on the unit circle
    np.testing.assert_allclose(np.linalg.norm(batched.trajectory["neuron_plane_pm"], axis=-1), 1.0, atol=1e-12)
