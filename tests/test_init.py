"""Initializations: balanced signs, scales, and a file with one init per seed."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import twolayer
from conftest import base_config
from twolayer.config import load_config
from twolayer.init import INITS
from twolayer.nets import NETS


def test_balanced_init_is_balanced_with_given_signs():
    cfg = load_config(base_config(model={"width": 4}, init={"kind": "balanced", "scale": 1e-3, "signs": [1, -1, -1, 1]}))
    p = INITS.get("balanced").fn(cfg.init, jax.random.PRNGKey(0), NETS.get("two_layer"), 4, 2)
    norms = np.linalg.norm(p["W"], axis=1)
    np.testing.assert_allclose(p["v"], np.array([1, -1, -1, 1]) * norms, rtol=1e-15)
    assert 1e-4 < norms.mean() < 1e-2


def test_init_scales():
    d, h = 400, 300
    key = jax.random.PRNGKey(0)
    std = INITS.get("standard").fn(load_config(base_config(init={"kind": "standard"})).init, key, NETS.get("two_layer"), h, d)
    np.testing.assert_allclose(np.mean(np.sum(np.asarray(std["W"]) ** 2, axis=1)), 1.0, rtol=0.02)
    gauss = INITS.get("gaussian").fn(load_config(base_config(init={"kind": "gaussian", "scale": 1e-6})).init,
                                         key, NETS.get("two_layer"), h, d)
    np.testing.assert_allclose(np.std(np.asarray(gauss["W"])), 1e-6, rtol=0.02)
    assert "v" not in INITS.get("standard").fn(load_config(base_config(init={"kind": "standard"})).init,
                                                   key, NETS.get("mean_field"), h, d)


def test_init_file_with_seed_axis(out, tmp_path):
    W = np.random.default_rng(0).normal(size=(2, 3, 2))
    v = np.random.default_rng(1).normal(size=(2, 3))
    np.savez(tmp_path / "i.npz", W=W, v=v)
    cfg = base_config(seeds=2, model={"activation": "relu"}, init={"kind": "file", "path": str(tmp_path / "i.npz")},
                      train={"method": "gd", "lr": 0.1, "steps": 0}, observe={"schedule": "at", "at": [0]})
    run = twolayer.run(cfg, out=out)
    np.testing.assert_array_equal(run.final_params["W"], W)


def test_init_values_written_in_the_config(out):
    """``init: {kind: values}``: W and v from the config (App. E.3's neuron), width implied; bad shapes name the field."""
    from twolayer.config import ConfigError

    cfg = base_config(model={"activation": "relu"}, init={"kind": "values", "W": [[0, 1]], "v": [1]},
                      train={"method": "gd", "lr": 0.1, "steps": 0}, observe={"schedule": "at", "at": [0]})
    assert load_config(cfg).width() == 1
    run = twolayer.run(cfg, out=out)
    np.testing.assert_array_equal(run.final_params["W"], [[0.0, 1.0]])
    np.testing.assert_array_equal(run.final_params["v"], [1.0])
    for init, field in (({"kind": "values", "W": [[0, 1], [1]], "v": [1, 1]}, "init.W"),
                        ({"kind": "values", "W": [[0, 1]]}, "init.v"),
                        ({"kind": "values", "W": [[0, 1]], "v": [1]}, "model.width")):
        bad = {**cfg, "init": init, "model": {"activation": "relu", "width": 3 if field == "model.width" else None}}
        with pytest.raises(ConfigError) as err:
            load_config(bad)
        assert any(path == field for path, _ in err.value.errors), err.value.errors


def test_an_all_zero_init_is_warned_about(tmp_path, capsys):
    """Every weight zero is an exact saddle (sigma(0) = 0: the gradient vanishes): the run works but
    never moves, so a ``ConfigWarning`` names the field that holds the weights."""
    import warnings

    import yaml

    from twolayer.cli import main
    from twolayer.errors import ConfigWarning
    from twolayer.train import Simulation

    zero = base_config(init={"kind": "values", "W": [[0.0, 0.0]] * 3, "v": [0.0] * 3}, model={"activation": "relu"})
    with pytest.warns(ConfigWarning, match=r"init\.W: every initial weight is zero: an exact saddle"):
        Simulation(load_config(zero))
    W = np.stack([np.ones((3, 2)), np.zeros((3, 2))])
    np.savez(tmp_path / "i.npz", W=W, v=np.zeros((2, 3)))
    per_seed = base_config(seeds=2, init={"kind": "file", "path": str(tmp_path / "i.npz")}, model={"activation": "relu"})
    with pytest.warns(ConfigWarning, match=r"init\.path: every initial weight is zero in seed\(s\) 1 of the given 2"):
        Simulation(load_config(per_seed))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfigWarning)
        Simulation(load_config(base_config(init={"kind": "values", "W": [[0.0, 0.0]] * 3, "v": [1.0] * 3},
                                           model={"activation": "relu"})))  # v moves: no saddle of every weight
        Simulation(load_config(base_config()))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(zero))
    assert main(["run", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "out")]) == 0
    assert "warning: init.W: every initial weight is zero" in capsys.readouterr().err


def test_standard_init_on_a_support():
    """``support`` k: rows N(0, I_k/k) on the first k coordinates, exactly 0 elsewhere, the same mean norm; the
    resolved config leaves ``support`` out while unset (existing run hashes are kept); k > d is refused."""
    d, h, k = 40, 500, 6
    key = jax.random.PRNGKey(1)
    cfg = load_config(base_config(init={"kind": "standard", "support": k}))
    W = np.asarray(INITS.get("standard").fn(cfg.init, key, NETS.get("mean_field"), h, d)["W"])
    assert np.all(W[:, k:] == 0.0) and np.all(W[:, :k] != 0.0)
    np.testing.assert_allclose(np.mean(np.sum(W**2, axis=1)), 1.0, rtol=0.05)
    assert cfg.resolved()["init"]["support"] == k
    assert "support" not in load_config(base_config(init={"kind": "standard"})).resolved()["init"]
    with pytest.raises(ValueError, match="init.support"):
        INITS.get("standard").fn(cfg.init, key, NETS.get("mean_field"), h, k - 1)


def test_drawn_seeds_are_kept_and_equal_a_fresh_draw(monkeypatch):
    """A process keeps the per-seed draws (premise worlds draw the same seeds again): a kept draw is the init's own
    draw bit for bit, read-only, and the stacked parameters are the process's own arrays; past the byte budget the
    least recently used draws go."""
    from twolayer import init as init_module
    from twolayer.init import sample_seeds

    monkeypatch.setattr(init_module, "_draws", type(init_module._draws)())
    monkeypatch.setattr(init_module, "_draws_bytes", [0])
    p = load_config(base_config(init={"kind": "balanced", "scale": 1e-3})).init
    net, keys = NETS.get("two_layer"), [jax.random.fold_in(jax.random.PRNGKey(s), 1) for s in (4, 5, 6)]
    first = sample_seeds(p, keys, net, 7, 3, np.float64)
    assert len(init_module._draws) == 3
    again = sample_seeds(p, keys[1:], net, 7, 3, np.float64)  # two kept draws, nothing drawn
    assert len(init_module._draws) == 3
    for k in ("W", "v"):
        fresh = np.stack([np.asarray(INITS.get("balanced").fn(p, key, net, 7, 3)[k]) for key in keys])
        np.testing.assert_array_equal(np.asarray(first[k]), fresh)
        np.testing.assert_array_equal(np.asarray(again[k]), fresh[1:])
    kept = next(iter(init_module._draws.values()))["W"]
    assert not kept.flags.writeable
    other = load_config(base_config(init={"kind": "balanced", "scale": 2e-3})).init  # another init: another draw
    np.testing.assert_array_equal(np.asarray(sample_seeds(other, keys[:1], net, 7, 3, np.float64)["W"]),
                                  2 * np.asarray(first["W"][:1]))
    assert len(init_module._draws) == 4
    monkeypatch.setattr(init_module, "DRAWS_KEPT_BYTES", kept.nbytes + 8 * 7 + 1)  # one seed's W and v, not two
    sample_seeds(p, [jax.random.PRNGKey(7)], net, 7, 3, np.float64)  # a new draw: the older ones go
    assert len(init_module._draws) == 1 and init_module._draws_bytes[0] == kept.nbytes + 8 * 7


def test_a_given_init_is_read_again_not_kept(tmp_path):
    """An init file is read at every build (its content may change between runs of one process)."""
    from twolayer import init as init_module
    from twolayer.init import sample_seeds

    path = tmp_path / "init.npz"
    np.savez(path, W=np.ones((2, 3)), v=np.ones(2))
    p = load_config(base_config(model={"width": 2}, init={"kind": "file", "path": str(path)})).init
    kept = len(init_module._draws)
    net, key = NETS.get("two_layer"), jax.random.PRNGKey(0)
    assert np.asarray(sample_seeds(p, [key], net, 2, 3, np.float64)["W"]).sum() == 6
    np.savez(path, W=2 * np.ones((2, 3)), v=np.ones(2))
    assert np.asarray(sample_seeds(p, [key], net, 2, 3, np.float64)["W"]).sum() == 12
    assert len(init_module._draws) == kept


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_a_runs_initial_parameters_are_redrawn_without_building_it(tmp_path, precision):
    """claims.runs.initial_params re-draws a stored run's initialization from its config (no data context, no
    compiled programs): bit for bit what the run started from, in its precision."""
    from twolayer.claims.runs import initial_params
    from twolayer.train import Simulation

    cfg = base_config(model={"width": 5}, init={"kind": "balanced", "scale": 1e-2}, seeds=[0, 3, 11],
                      precision=precision, train={"method": "gd", "lr": 0.05, "steps": 3})
    run = twolayer.run(cfg, out=tmp_path)
    redrawn = initial_params(run)
    started = Simulation(load_config(run.config)).initial_state().params
    assert set(redrawn) == {"W", "v"} and redrawn["W"].shape == (3, 5, 2)
    for k in redrawn:
        assert redrawn[k].dtype == np.dtype(precision)
        np.testing.assert_array_equal(redrawn[k], np.asarray(started[k]))


def test_threads_share_the_kept_draws(monkeypatch):
    """Runs built in threads draw through one kept table (locked): under evictions every draw is still the init's."""
    from concurrent.futures import ThreadPoolExecutor

    from twolayer import init as init_module
    from twolayer.init import sample_seeds

    monkeypatch.setattr(init_module, "_draws", type(init_module._draws)())
    monkeypatch.setattr(init_module, "_draws_bytes", [0])
    monkeypatch.setattr(init_module, "DRAWS_KEPT_BYTES", 3 * 8 * (4 * 3 + 4))  # three seeds: constant eviction
    p = load_config(base_config(init={"kind": "balanced", "scale": 1e-3})).init
    net = NETS.get("two_layer")
    keys = [jax.random.fold_in(jax.random.PRNGKey(s), 1) for s in range(12)]
    fresh = np.stack([np.asarray(INITS.get("balanced").fn(p, k, net, 4, 3)["W"]) for k in keys])

    def draw(i):
        order = [(i + j) % len(keys) for j in range(len(keys))]
        return order, np.asarray(sample_seeds(p, [keys[o] for o in order], net, 4, 3, np.float64)["W"])

    with ThreadPoolExecutor(8) as pool:
        for order, W in pool.map(draw, range(40)):
            np.testing.assert_array_equal(W, fresh[order])
    assert len(init_module._draws) <= 3


def test_a_sampler_registered_again_draws_afresh(monkeypatch):
    """The kept draws are keyed by the sampler too: an init kind whose function is replaced (a study reloaded in one
    process) never serves the old function's draws."""
    import dataclasses

    from twolayer.init import sample_seeds

    p = load_config(base_config(init={"kind": "gaussian", "scale": 0.5})).init
    net, key = NETS.get("two_layer"), jax.random.PRNGKey(3)
    first = np.asarray(sample_seeds(p, [key], net, 2, 2, np.float64)["W"])
    entry = INITS.get("gaussian")
    monkeypatch.setitem(INITS._items, "gaussian", dataclasses.replace(
        entry, fn=lambda p, key, net, width, d: {"W": np.full((width, d), 7.0), "v": np.zeros(width)}))
    assert (np.asarray(sample_seeds(p, [key], net, 2, 2, np.float64)["W"]) == 7.0).all()
    monkeypatch.undo()
    np.testing.assert_array_equal(np.asarray(sample_seeds(p, [key], net, 2, 2, np.float64)["W"]), first)
