"""Min et al. 2024 (early alignment): datasets, MNIST loader, geometry/theory functions, observables
and events, checked against hand-computed cases, brute force and closed forms."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from twolayer.activations import make_activation
from twolayer.data import build_dataset
from twolayer.data import mnist
from twolayer.data.alignment import OrthogonalParams, SeparableCapParams, Toy2dParams
from twolayer.events import EVENTS
from twolayer.losses import LOSSES
from twolayer.nets import NETS
from twolayer.observe import CONTEXT, evaluate
from twolayer.problem import Problem, make_context
from twolayer.theory import alignment as th

SHARED_MNIST = Path(__file__).resolve().parents[3] / "shared" / "data" / "mnist"


@pytest.fixture(scope="module")
def toy():
    return build_dataset(Toy2dParams())


# -- datasets and geometry ----------------------------------------------------------------------

def test_toy_a_matches_the_spec_numbers(toy):
    xp, xn = th.class_sums(toy.X, toy.y)
    assert toy.info["mu"] == pytest.approx(math.cos(math.radians(55)), abs=1e-12)
    assert np.linalg.norm(xp) == pytest.approx(2.932, abs=1e-3)
    assert np.linalg.norm(xn) == pytest.approx(1.983, abs=1e-3)
    assert th.cosine(xp, xn) == pytest.approx(-0.843, abs=1e-3)
    cp, cn = th.class_centers(toy.X, toy.y)
    np.testing.assert_allclose(cp * 3, xp)
    np.testing.assert_allclose(cn * 2, xn)


def _brute_cone(w, X, y):
    """The §2.3 definitions, written with loops."""
    act = [float(np.dot(x, w)) > 0 for x in X]
    if not any(act):
        return th.CONE_DEAD
    if all(a == (lab > 0) for a, lab in zip(act, y)):
        return th.CONE_POS
    if all(a == (lab < 0) for a, lab in zip(act, y)):
        return th.CONE_NEG
    return th.CONE_NONE


def test_cones_in_2d_match_brute_force_and_the_spec_arcs(toy):
    deg = np.arange(0.25, 360, 0.5)  # avoid the boundaries themselves
    U = np.stack([np.cos(np.radians(deg)), np.sin(np.radians(deg))], axis=1)
    codes = th.cone_membership(U, toy.X, toy.y)
    assert codes.tolist() == [_brute_cone(u, toy.X, toy.y) for u in U]
    wrapped = np.where(deg > 180, deg - 360, deg)
    np.testing.assert_array_equal(codes == th.CONE_POS, (wrapped > -15) & (wrapped < 110))
    np.testing.assert_array_equal(codes == th.CONE_NEG, (deg > 165) & (deg < 290))
    np.testing.assert_array_equal(codes == th.CONE_DEAD, (deg > 140) & (deg < 150))


def test_x_a_hand_case_of_fig1():
    X = np.array([[1.0, 0.2], [0.3, 1.0], [-1.0, 0.1]])  # x1 (+1), x2 (-1), x3 (-1)
    y = np.array([1.0, -1.0, -1.0])
    w = np.array([1.0, 1.0])  # activates x1 and x2 only
    np.testing.assert_allclose(th.x_a(w, X, y), X[0] - X[1])
    np.testing.assert_allclose(th.x_a(w, X, y, slope=0.5), X[0] - X[1] - 0.5 * X[2])
    np.testing.assert_allclose(th.x_a(np.stack([w, -w]), X, y), [X[0] - X[1], -X[2]])


def test_separable_cap_properties_lemmas_5_7_8_11():
    data = build_dataset(SeparableCapParams(n=25, d=6, mu=0.4, radii=(0.5, 2.0), seed=3))
    X, y = data.X, data.y
    mu = th.separability(X, y)
    assert mu >= 0.4 - 1e-12 and data.info["mu"] == pytest.approx(mu)
    assert 0 < np.sum(y > 0) < len(y)
    rng = np.random.default_rng(0)
    Z = y[:, None] * X
    combos = rng.random((300, len(y))) ** 4 @ Z  # random conic combinations
    cos = th.cosine(combos[:, None, :], combos[None, :, :])
    assert cos.min() >= mu - 1e-12  # Lemma 5
    assert np.all(th.cone_membership(combos, X, y) == th.CONE_POS)  # Lemma 7
    assert np.all(th.cone_membership(-combos, X, y) == th.CONE_NEG)
    assert np.all(th.cone_membership(X, X, y) == np.where(y > 0, th.CONE_POS, th.CONE_NEG))
    W = rng.normal(size=(500, 6))  # Lemma 11
    n_a = (W @ X.T > 0).sum(axis=1)
    norm_xa = np.linalg.norm(th.x_a(W, X, y), axis=1)
    assert np.all(norm_xa >= math.sqrt(mu) * n_a * np.linalg.norm(X, axis=1).min() - 1e-12)
    z1 = th.zeta1(X, y)  # Lemma 8: the cap of half-angle acos(sqrt(1 - zeta1)) lies inside S+
    xp = th.class_sums(X, y)[0]
    e = rng.normal(size=(400, 6))
    e -= (e @ xp)[:, None] * xp / (xp @ xp)
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    a = math.acos(math.sqrt(1 - z1))
    boundary = math.cos(a) * xp / np.linalg.norm(xp) + math.sin(a) * e
    assert np.all(th.cone_membership(boundary, X, y) == th.CONE_POS)
    assert np.all(th.in_cap(boundary, xp, z1 * 1.0001))


def test_orthogonal_and_two_point_data():
    d = build_dataset(OrthogonalParams(n=3, d=5, labels=(1, -1, 1)))
    np.testing.assert_allclose(d.X @ d.X.T, np.eye(3))
    assert d.info["mu"] == pytest.approx(0.0) and d.y.tolist() == [1, -1, 1]
    with pytest.raises(ValueError, match="n <= d"):
        OrthogonalParams(n=3, d=2)


def test_zeta_xi_and_theorem_quantities_on_toy_a(toy):
    assert th.zeta1(toy.X, toy.y) == pytest.approx(0.456, abs=1e-3)
    est = th.xi(toy.X, toy.y)
    assert est.exact and est.value == pytest.approx(1 - math.cos(math.radians(35)) ** 2, abs=1e-4)
    # W0 with V+ along x+ and V- along x- makes Assumption 2 slack: zeta2 = 1, zeta = zeta1
    xp, xn = th.class_sums(toy.X, toy.y)
    W0 = np.stack([xp / np.linalg.norm(xp), xn / np.linalg.norm(xn)])
    q = th.theorem_quantities(toy.X, toy.y, W0, np.array([1.0, -1.0]), eps=1e-8)
    assert q.zeta2 == 1.0 and q.zeta == q.zeta1
    m = min(q.zeta, q.xi)
    assert q.t1 == pytest.approx(103.3, abs=0.1)  # spec §5 item 14
    assert q.rate_const == pytest.approx(0.0103, abs=1e-4)
    assert q.log_eps2 == pytest.approx(-0.5 * math.log(2) - 64 * 5 * math.log(5) / (m * math.sqrt(q.mu)), rel=1e-12)
    assert q.log_eps_bound == pytest.approx(-2067, abs=1)  # "about exp(-2067)"
    assert q.T == pytest.approx(math.log(1 / (math.sqrt(2) * 1e-8)) / 20)
    assert q.T_Pmax == pytest.approx(4 / (m * math.sqrt(q.mu)) * (1.5 + 0.5 + 1.5))  # H(2) + 1/2 + H(2)
    lead = 4 / (math.sqrt(q.mu) * 3) * (math.log(2 / (1e-16 * math.sqrt(q.mu))) + 20 * q.t1)
    assert q.t2_bound_pos == pytest.approx(q.t1 + 6 / (math.sqrt(q.mu) * 3) + lead)
    assert q.delta_t(2) == pytest.approx(2 / (m * math.sqrt(q.mu)))


def test_xi_two_points_closed_form_and_high_d_estimate():
    for theta in (0.3, 0.05):
        X = np.array([[1.0, 0.0], [math.sin(theta), math.cos(theta)]])
        assert th.xi(X, np.ones(2)).value == pytest.approx(math.sin(theta) ** 2, rel=1e-3)
    data = build_dataset(SeparableCapParams(n=10, d=4, mu=0.5, seed=1))
    est = th.xi(data.X, data.y, samples=400)
    assert not est.exact and "estimate" in est.method and 0 < est.value <= 1


def test_two_point_closed_forms():
    for (theta, phi), t in {(0.3, 0.5): 0.524, (0.1, 0.5): 1.630, (0.01, 0.5): 3.933, (0.001, 1.55): 7.580}.items():
        assert th.two_point_crossing_time(theta, phi) == pytest.approx(t, abs=2e-3)
    assert th.two_point_crossing_time(0.1, 0.5, c=0.5) == pytest.approx(2 * 1.630, abs=4e-3)
    assert np.isinf(th.two_point_crossing_time(0.0, 0.5))
    p = th.two_point_end_probabilities(0.1)
    assert p["pos"] + p["dead"] == pytest.approx(1) and p["pos"] == pytest.approx(0.75 - 0.1 / (2 * math.pi))
    assert th.two_point_end_probabilities(0.0) == {"pos": 0.25, "only_x1": 0.25, "only_x2": 0.25, "dead": 0.25}
    assert th.sum_time(10.0, n=5, reduction="mean", loss="logistic") == pytest.approx(1.0)
    assert th.loss_rate_bound(2.0, 0.5, 3.0) == pytest.approx(2.0 / 4.0)


# -- MNIST ----------------------------------------------------------------------------------------

def test_idx_roundtrip_and_errors(tmp_path):
    a = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    for name in ("a-idx3-ubyte", "a-idx3-ubyte.gz"):
        mnist.write_idx(tmp_path / name, a)
        np.testing.assert_array_equal(mnist.read_idx(tmp_path / name), a)
    raw = gzip.decompress((tmp_path / "a-idx3-ubyte.gz").read_bytes())
    assert raw[:4] == bytes([0, 0, 8, 3]) and raw[4:8] == (2).to_bytes(4, "big")
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(ValueError, match="magic"):
        mnist.read_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes(raw[:-5])
    with pytest.raises(ValueError, match="header says"):
        mnist.read_idx(tmp_path / "short")


def test_mnist_pair_on_tiny_files(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(12, 28, 28), dtype=np.uint8)
    labels = np.array([0, 1, 2, 1, 0, 1, 7, 0, 1, 3, 0, 1], dtype=np.uint8)
    mnist.write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", images)
    mnist.write_idx(tmp_path / "t10k-labels-idx1-ubyte", labels)  # uncompressed works too
    monkeypatch.delenv(mnist.ENV_VAR, raising=False)
    d = build_dataset(mnist.MnistPairParams(digits=(1, 0), split="auto", data_dir=str(tmp_path)))
    assert d.info["split"] == "test" and d.X.shape == (9, 784)
    assert d.y.tolist() == [-1 if lab == 0 else 1 for lab in labels if lab in (0, 1)]
    raw = images[np.isin(labels, (0, 1))].reshape(9, -1) / 255.0
    np.testing.assert_allclose(d.X, raw - raw.mean(axis=0))
    d2 = build_dataset(mnist.MnistPairParams(digits=(0, 1), split="test", center="none", max_per_class=2,
                                             data_dir=str(tmp_path)))
    np.testing.assert_allclose(d2.X, images[[0, 1, 3, 4]].reshape(4, -1) / 255.0)
    assert d2.y.tolist() == [1, -1, -1, 1]


def test_missing_mnist_error_says_where_and_how(tmp_path, monkeypatch):
    monkeypatch.setenv(mnist.ENV_VAR, str(tmp_path / "env"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with pytest.raises(mnist.MnistNotFoundError) as err:
        build_dataset(mnist.MnistPairParams(split="train", data_dir=str(tmp_path / "cfg")))
    msg = str(err.value)
    for where in ("cfg", "env", "home"):
        assert str(tmp_path / where) in msg
    assert "twolayer data download mnist" in msg and "train-images-idx3-ubyte.gz" in msg
    assert mnist.available(str(tmp_path / "cfg")) is None
    assert mnist.candidate_dirs(str(tmp_path / "cfg"))[0] == tmp_path / "cfg"


@pytest.mark.skipif(not (SHARED_MNIST / "t10k-images-idx3-ubyte.gz").is_file(), reason="shared MNIST test split absent")
def test_mnist_shared_test_split(monkeypatch):
    monkeypatch.setenv(mnist.ENV_VAR, str(SHARED_MNIST.parent))  # the folder above mnist/ also works
    d = build_dataset(mnist.MnistPairParams(digits=(1, 0), split="auto" if mnist.available() == "test" else "test"))
    assert d.X.shape == (2115, 784) and d.info["split"] == "test"
    assert int(np.sum(d.y > 0)) == 1135 and int(np.sum(d.y < 0)) == 980
    xp, xn = th.class_sums(d.X, d.y)
    np.testing.assert_allclose(xp + xn, 0, atol=1e-9)
    assert th.cosine(xp, xn) == pytest.approx(-1.0)
    X_all, labels = mnist.load_split(*mnist.locate("test"))
    assert X_all.shape == (10000, 784) and X_all.dtype == np.uint8 and np.bincount(labels).sum() == 10000


# -- observables and events ---------------------------------------------------------------------

def _ctx(data, loss="exponential", reduction="mean", names=("x_pos", "x_neg")):
    problem = Problem(NETS.get("two_layer"), make_activation("relu"), LOSSES.get(loss), reduction)
    arrays = {"X": data.X, "y": data.y, **{n: CONTEXT.get(n)(data, None) for n in names}}
    return make_context(problem, arrays, jnp.float64)


def _params(h, d, seed=0, scale=0.7):
    rng = np.random.default_rng(seed)
    return {"W": jnp.asarray(scale * rng.normal(size=(h, d))), "v": jnp.asarray(scale * rng.normal(size=h))}


def test_observables_on_toy_data_match_numpy(toy):
    ctx, p = _ctx(toy), _params(9, 2)
    names = ["cos_pos", "cos_neg", "cone", "activation_counts", "activation_pattern", "signed_preact",
             "spectral_norm_sq", "stable_rank", "center_pos", "center_neg", "margin_min", "subnet_fit", "neuron_weights"]
    out = {k: np.asarray(v) for k, v in jax.jit(lambda q: evaluate(names, q, ctx))(p).items()}
    W, v, X, y = np.asarray(p["W"]), np.asarray(p["v"]), toy.X, toy.y
    xp, xn = th.class_sums(X, y)
    np.testing.assert_allclose(out["cos_pos"], th.cosine(W, xp), rtol=1e-12)
    np.testing.assert_allclose(out["cos_neg"], th.cosine(W, xn), rtol=1e-12)
    np.testing.assert_array_equal(out["cone"], th.cone_membership(W, X, y))
    A = W @ X.T > 0
    np.testing.assert_array_equal(out["activation_pattern"], A)
    np.testing.assert_array_equal(out["active_pos"], A[:, y > 0].sum(1))
    np.testing.assert_array_equal(out["active_neg"], A[:, y < 0].sum(1))
    np.testing.assert_allclose(out["signed_preact"], np.sign(v)[:, None] * (W @ X.T) * y)
    s = np.linalg.svd(W, compute_uv=False)
    assert out["spectral_norm_sq"] == pytest.approx(s[0] ** 2, rel=1e-12)
    assert out["stable_rank"] == pytest.approx(th.stable_rank(W), rel=1e-12)
    np.testing.assert_allclose(out["center_pos"], W[v > 0].mean(0))
    assert out["center_cos_neg"] == pytest.approx(th.cosine(W[v < 0].mean(0), xn))
    f = np.maximum(X @ W.T, 0) @ v
    assert out["margin_min"] == pytest.approx(np.min(y * f))
    cone = th.cone_membership(W, X, y)
    f_pos = np.maximum(X @ W[cone == 1].T, 0) @ v[cone == 1]
    assert out["fit_pos"] == pytest.approx(np.max(np.abs(f_pos[y > 0])) if (cone == 1).any() else 0.0)
    np.testing.assert_allclose(out["neuron_weights"], W)


def test_gradient_observables_match_closed_form_and_gd_identity(toy):
    ctx, p = _ctx(toy), _params(7, 2, seed=1)
    W, v, X, y = np.asarray(p["W"]), np.asarray(p["v"]), toy.X, toy.y
    f = np.maximum(X @ W.T, 0) @ v
    r = y * np.exp(-y * f) / len(y)  # -dL/df_i for the mean exponential loss
    negW = v[:, None] * ((X @ W.T > 0).T * r) @ X  # spec §1.3
    negv = np.maximum(X @ W.T, 0).T @ r
    out = {k: np.asarray(val) for k, val in evaluate(["norm_change", "direction_change", "grad_imbalance"], p, ctx).items()}
    assert out["norm_change"] == pytest.approx(2 * np.sum(negW * W), rel=1e-10)
    U = W / np.linalg.norm(W, axis=1, keepdims=True)
    P = negW - np.sum(negW * U, 1, keepdims=True) * U
    assert out["direction_change"] == pytest.approx(np.sum(np.linalg.norm(P, axis=1) / np.linalg.norm(W, axis=1)), rel=1e-10)
    np.testing.assert_allclose(out["grad_imbalance"], negv**2 - np.sum(negW**2, 1), rtol=1e-10)
    lr = 0.3  # P1: one GD step changes v^2 - ||w||^2 by exactly lr^2 (g_v^2 - ||g_w||^2)
    W1, v1 = W + lr * negW, v + lr * negv
    d0, d1 = v**2 - np.sum(W**2, 1), v1**2 - np.sum(W1**2, 1)
    np.testing.assert_allclose(d1 - d0, lr**2 * out["grad_imbalance"], rtol=1e-9, atol=1e-15)


def test_lemma1_direction_error_and_output_max_match_closed_form(toy):
    """direction_error = ||s (v_j/||w_j||) P_w sum_i (r_i - y_i) 1[<x_i,w_j> > 0] x_i|| (spec §1.3, eq. 4);
    for a balanced tiny init it is O(eps^2) and within Lemma 1's O(eps) bound, for logistic2 too;
    with plain logistic it is O(1) (the factor-1/2 mismatch of Lemma 2)."""
    W, v, X, y = *(np.asarray(a) for a in _params(6, 2, seed=3).values()), toy.X, toy.y
    for loss, reduction in (("exponential", "mean"), ("logistic2", "sum"), ("square", "sum")):
        ctx = _ctx(toy, loss=loss, reduction=reduction)
        p = {"W": jnp.asarray(W), "v": jnp.asarray(v)}
        out = {k: np.asarray(val) for k, val in evaluate(["direction_error", "output_max"], p, ctx).items()}
        f = np.maximum(X @ W.T, 0) @ v
        r = {"exponential": y * np.exp(-y * f), "logistic2": 2 * y / (1 + np.exp(y * f)), "square": y - f}[loss]
        s = 1.0 if reduction == "sum" else 1.0 / len(y)
        nrm = np.linalg.norm(W, axis=1, keepdims=True)
        E = s * (v[:, None] / nrm) * (((X @ W.T > 0).T * (r - y)) @ X)
        U = W / nrm
        P = E - np.sum(E * U, 1, keepdims=True) * U
        np.testing.assert_allclose(out["direction_error"], np.linalg.norm(P, axis=1), rtol=1e-9, atol=1e-15)
        assert out["output_max"] == pytest.approx(np.max(np.abs(f)), rel=1e-12)
    rng = np.random.default_rng(0)
    eps, h = 1e-6, 20
    W0 = rng.normal(size=(h, 2)) / math.sqrt(2)
    sign = np.where(np.arange(h) % 2 == 0, 1.0, -1.0)
    p = {"W": jnp.asarray(eps * W0), "v": jnp.asarray(sign * eps * np.linalg.norm(W0, axis=1))}
    q = th.theorem_quantities(X, y, W0, sign, eps)
    for loss in ("exponential", "logistic2"):
        err = np.asarray(evaluate(["direction_error"], p, _ctx(toy, loss=loss, reduction="sum"))["direction_error"])
        assert 0 < err.max() <= q.direction_error_bound
    err = np.asarray(evaluate(["direction_error"], p, _ctx(toy, loss="logistic", reduction="sum"))["direction_error"])
    assert err.max() > 0.1 > q.direction_error_bound


def test_logistic2_and_lemma2():
    """logistic2 = 2 log(1 + e^-m) (App. B); Lemma 2 holds for exp, logistic2, square, not for logistic."""
    y, f = jnp.asarray([1.0, -1.0, 1.0]), jnp.asarray([0.0, 3.0, -800.0])
    np.testing.assert_allclose(LOSSES.get("logistic2").per_sample(y, f), 2 * LOSSES.get("logistic").per_sample(y, f))
    assert np.isfinite(float(LOSSES.get("logistic2").per_sample(y, f)[2]))  # logaddexp: no overflow
    assert float(LOSSES.get("logistic2").per_sample(y, f)[2]) == pytest.approx(1600.0)
    for name in ("exponential", "logistic2", "square"):
        assert th.lemma2_gap(name) <= 1e-12, name
    assert th.lemma2_gap("logistic") == pytest.approx(0.5)
    assert th.lemma2_gap("exponential", np.linspace(-2, 2, 401)) > 0  # the property is only claimed for |yhat| <= 1
    assert LOSSES.get("logistic2").slope_at_zero == th.early_rate(1, "sum", "logistic2") == 1.0


def test_sharp_drops_counts_distinct_steep_decreases():
    t = np.geomspace(1, 100, 400)
    one = 1 / (1 + np.exp((t - 30) / 2)) + 1e-3
    two = (0.5 + 0.5 / (1 + np.exp((t - 20) / 1.5))) * (1 / (1 + np.exp((t - 50) / 2)) + 1e-3)
    merged = (0.5 + 0.5 / (1 + np.exp((t - 30) / 3))) * (1 / (1 + np.exp((t - 31) / 3)) + 1e-3)
    assert len(th.sharp_drops(t, one)) == 1
    drops = th.sharp_drops(t, two)
    assert len(drops) == 2 and 18 < drops[0] < 30 < 48 < drops[1] < 65  # rate of log L peaks after each midpoint
    assert len(th.sharp_drops(t, merged)) == 1
    assert th.sharp_drops(t, np.ones_like(t)) == []


def test_events_on_synthetic_trajectories():
    t = np.arange(6.0)
    cone = np.array([[2, 1], [2, -1], [0, -1], [0, -1], [0, 1], [0, 1]])
    v = np.array([[1.0, 1.0]] * 6)
    assert EVENTS.get("t1").fn({"t": t, "cone": cone, "v": v}, None) == {"t1": 4.0}  # V+ in S- is not aligned
    assert EVENTS.get("t1_cones").fn({"t": t, "cone": cone}, None) == {"t1_cones": 2.0}
    assert EVENTS.get("t1").fn({"t": t, "cone": cone, "v": -v}, None) == {"t1": 2.0}
    assert EVENTS.get("t1").fn({"t": t, "cone": np.full((6, 2), 2), "v": v}, None) == {"t1": None}
    w = np.array([1e-6, 1e-6, 2e-6, 1e-4, 1e-2, 1.0])[:, None] * np.ones((1, 2))
    assert EVENTS.get("norm_growth").fn({"t": t, "w_norm": w}, None) == {"norm_growth": 4.0}  # F^2 = 2e-4 >= sqrt(F0^2 = 2e-12)
    fit_pos, fit_neg = np.array([0, 0.1, 0.3, 1, 1, 1]), np.array([0, 0, 0.1, 0.2, 0.5, 1])
    out = EVENTS.get("t2").fn({"t": t, "fit_pos": fit_pos, "fit_neg": fit_neg}, None)
    assert out == {"t2_pos": 2.0, "t2_neg": 4.0, "t2": 4.0}
    out = EVENTS.get("t2").fn({"t": t, "fit_pos": fit_pos, "fit_neg": np.zeros(6)}, None)
    assert out["t2"] == 2.0 and out["t2_neg"] is None  # no S- subnetwork: t2 = t2+
    from twolayer.observe.alignment import activation_pattern_changes

    pattern = np.array([[[1, 0]], [[1, 1]], [[0, 1]], [[0, 1]]])  # [T, h, n]
    assert activation_pattern_changes(pattern).tolist() == [2]


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize("name", ["cos_pos", "cos_neg", "center_pos", "center_neg"])
def test_context_observables_conformance(toy, name, dtype):
    """The shared conformance test skips observables that need context arrays: the same checks here
    (jit + vmap over seeds, dtype, finite values, batched == single) with x_pos / x_neg from their providers."""
    from twolayer.observe import OBSERVABLES

    problem = Problem(NETS.get("two_layer"), make_activation("relu"), LOSSES.get("exponential"), "mean")
    needs = OBSERVABLES.get(name).needs
    ctx = make_context(problem, {"X": toy.X, "y": toy.y, **{n: CONTEXT.get(n)(toy, None) for n in needs}}, dtype)
    rng = np.random.default_rng(0)
    params = {"W": jnp.asarray(rng.normal(size=(3, 5, 2)), dtype=dtype), "v": jnp.asarray(rng.normal(size=(3, 5)), dtype=dtype)}
    out = jax.jit(jax.vmap(lambda p, c: evaluate([name], p, c), in_axes=(0, None)))(params, ctx)
    assert name in out
    for key, value in out.items():
        assert value.shape[0] == 3 and value.dtype == dtype and bool(jnp.all(jnp.isfinite(value)))
        if OBSERVABLES.get(name).per_neuron:
            assert value.shape[1:] == (5,)
        single = evaluate([name], jax.tree_util.tree_map(lambda x: x[1], params), ctx)[key]
        np.testing.assert_allclose(np.asarray(value[1]), np.asarray(single), rtol=1e-5 if dtype == jnp.float32 else 1e-12)


def test_regular_solution_on_the_dead_boundary(tmp_path):
    """App. E.3/E.4: with sigma'(0) = 0 a neuron on the boundary of S_dead (<w, x> = 0) gets zero
    update, so GD follows the regular, stay-put solution (for y = +1 and for y = -1)."""
    import twolayer

    np.savez(tmp_path / "init.npz", W=np.array([[0.0, 1.0]]), v=np.array([1.0]))
    for label in (1, -1):
        np.savez(tmp_path / "data.npz", X=np.array([[1.0, 0.0]]), y=np.array([float(label)]))
        run = twolayer.run({"name": f"e4-{label + 1}", "data": {"kind": "file", "path": str(tmp_path / "data.npz")},
                            "model": {"width": 1}, "init": {"kind": "file", "path": str(tmp_path / "init.npz")},
                            "loss": {"kind": "exponential", "reduction": "sum"},
                            "train": {"method": "gd", "lr": 0.1, "steps": 50},
                            "observe": {"schedule": "every", "every": 10, "metrics": ["loss", "cone"]}},
                           out=tmp_path / "runs")
        np.testing.assert_array_equal(run.final_params["W"], [[0.0, 1.0]])
        np.testing.assert_array_equal(run.final_params["v"], [1.0])
        assert np.all(run.trajectory["cone"] == th.CONE_DEAD)
