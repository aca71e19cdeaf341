"""Order-parameter ODEs of one-pass (online) SGD for a two-layer student learning a two-layer teacher in high
dimension (Saad & Solla 1995; Biehl & Schwarze 1995; Goldt et al. 2019, NeurIPS, eqs. (7)-(9), with the eta^2
term that a finite learning rate adds).

Setting (Goldt et al. 2019, eqs. (1)-(3)): x ~ N(0, I_d); student phi(x) = sum_k v_k g(lambda_k), teacher
y = sum_n v*_n g(nu_n) + sigma zeta, with local fields lambda_k = W_k.x / sqrt(d), nu_n = W*_n.x / sqrt(d). One
SGD step on the sample (x, y), Delta = phi(x) - y, updates W_k -= (eta / sqrt d) v_k g'(lambda_k) Delta x and
v_k -= (eta / d) g(lambda_k) Delta (both layers, or the first only). In twolayer's parametrization
(``two_layer``: f = sum_k v_k g(w_k.x) with w_k = W_k / sqrt d) both layers take the step lr = eta / d.

As d -> infinity with t = k / d (samples per input dimension), Q = W W' / d, R = W W*' / d, T = W* W*' / d and
v follow deterministic ODEs. With u = (lambda, nu) ~ N(0, Omega), Omega = [[Q, R], [R', T]], and
c = (v, -v*) (so Delta = sum_a c_a g(u_a) - sigma zeta), in Goldt time t:

    dR_in/dt = -eta v_i sum_a c_a I3(i, n, a)
    dQ_ik/dt = -eta v_i sum_a c_a I3(i, k, a) - eta v_k sum_a c_a I3(k, i, a)
               + (eta^2 / B) v_i v_k [ sum_{a,b} c_a c_b I4(i, k, a, b) + sigma^2 J2(i, k) ]
    dv_i/dt  = -eta sum_a c_a I2(i, a)              (0 when only the first layer is trained)

(``twolayer.theory.gaussian_integrals``: I3(i, n, a) = E[g'(u_i) u_n g(u_a)], ...), and the generalization error

    eps_g = (1/2) E[(phi - y_noiseless)^2] = (1/2) sum_{a,b} c_a c_b I2(a, b).

The eta^2 term comes from ||x||^2 / d = 1 in the update of Q; a batch of B fresh samples divides it by B (the
cross terms of distinct samples are O(1/d)). Without it (``eta2=False``) the ODE is gradient flow on the
population loss at time eta t (the small-learning-rate limit).

Everything is pure JAX; ``integrate`` solves with diffrax's Tsit5 (adaptive, the default) or the Rosenbrock-W
method ROS34PW2 (``theory.rosenbrock_w``, for the stiff approach to a fixed point) and is compiled once per
(activation, K, M, solver): the layers trained and the eta^2 term are traced numbers.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from twolayer.theory import rosenbrock_w
from twolayer.theory.gaussian_integrals import INTEGRALS

LAYERS = ("both", "first")


@dataclass(frozen=True)
class OrderParameters:
    """Order parameters along time ``t`` (Goldt time, samples / d): Q [T, K, K], R [T, K, M], v [T, K], the fixed
    teacher overlaps ``T`` [M, M] and weights ``vstar`` [M], and ``eps_g`` [T]; ``steps`` the solver's steps
    (accepted and rejected; Tsit5 evaluates the field 6 times per step, ROS34PW2 4 times)."""

    t: np.ndarray
    Q: np.ndarray
    R: np.ndarray
    v: np.ndarray
    T: np.ndarray
    vstar: np.ndarray
    eps_g: np.ndarray
    steps: int = -1


def omega(Q, R, T):
    """The covariance of the local fields (lambda, nu): [[Q, R], [R', T]]."""
    return jnp.block([[Q, R], [R.T, T]])


def _blocks(O, index):
    """O restricted to the index tuples ``index`` [..., n]: [..., n, n]."""
    return O[index[..., :, None], index[..., None, :]]


@functools.lru_cache(maxsize=64)
def _indices(K: int, M: int):
    N = K + M
    a = np.arange(N)
    i = np.arange(K)
    pairs = np.stack(np.meshgrid(a, a, indexing="ij"), axis=-1)  # [N, N, 2]
    triples = np.stack(np.meshgrid(i, a, a, indexing="ij"), axis=-1)  # [K, N, N, 3]: (i, b, alpha)
    quads = np.stack(np.meshgrid(i, i, a, a, indexing="ij"), axis=-1)  # [K, K, N, N, 4]
    student_pairs = np.stack(np.meshgrid(i, i, indexing="ij"), axis=-1)  # [K, K, 2]
    return pairs, triples, quads, student_pairs


@functools.lru_cache(maxsize=64)
def _unordered(K: int, M: int):
    """The distinct I4 index tuples: unordered student pairs i <= k [P] and unordered pairs a <= b of all K + M
    fields [Pn], with the multiplicity 2 - delta_ab of (a, b) in sum_{a,b} (I4 is symmetric in (i, k) and in
    (a, b) separately)."""
    ip, kp = np.triu_indices(K)
    aq, bq = np.triu_indices(K + M)
    return ip, kp, aq, bq, np.where(aq == bq, 1.0, 2.0)


def pair_entries(O, rows=None):
    """Covariance entries of the pairs (a, b) of fields, a over ``rows`` (default all), b over all: [A, N]."""
    d = jnp.diagonal(O)
    r = slice(None) if rows is None else rows
    return {(0, 0): d[r, None], (0, 1): O[r], (1, 1): d[None, :]}


def triple_entries(O, K: int):
    """Covariance entries of the I3 tuples (i, b, a), i a student, b and a any field: [K, N, N]."""
    d = jnp.diagonal(O)
    return {(0, 0): d[:K, None, None], (0, 1): O[:K, :, None], (0, 2): O[:K, None, :], (1, 1): d[None, :, None],
            (1, 2): O[None, :, :], (2, 2): d[None, None, :]}


def quad_entries(O, K: int, M: int):
    """Covariance entries of the distinct I4 tuples (i, k, a, b) of ``_unordered``: [P, Pn]."""
    ip, kp, aq, bq, _ = _unordered(K, M)
    d = jnp.diagonal(O)
    Oi, Ok = O[ip], O[kp]
    return {(0, 0): d[ip, None], (0, 1): O[ip, kp][:, None], (1, 1): d[kp, None],
            (0, 2): Oi[:, aq], (0, 3): Oi[:, bq], (1, 2): Ok[:, aq], (1, 3): Ok[:, bq],
            (2, 2): d[None, aq], (2, 3): O[aq, bq][None, :], (3, 3): d[None, bq]}


def generalization_error(Q, R, T, v, vstar, activation: str):
    """eps_g = (1/2) c' I2(Omega) c with c = (v, -v*) (Goldt et al. 2019, eq. (4))."""
    I2 = INTEGRALS.get(activation).entries["i2"](pair_entries(omega(Q, R, T)))
    c = jnp.concatenate([v, -vstar])
    return 0.5 * c @ I2 @ c


@functools.lru_cache(maxsize=64)
def _triples(K: int, M: int):
    """Masks [P, Pn] of the distinct I4 tuples (i, k, a, b) where three arguments coincide, and the indices of the
    closed forms that replace I4 there for relu and abs (g'^2 g = g, g' g^2 = z g): i = k = a (or b) gives
    I2(u_i, u_other); a = b = i (or k) gives I3(u_other_student, u_a, u_a) = E[g'(u_k) u_a g(u_a)]."""
    ip, kp, aq, bq, _ = _unordered(K, M)
    i, k, a, b = ip[:, None], kp[:, None], aq[None, :], bq[None, :]
    two = (i == k) & ((a == i) | (b == i))  # fields 1, 2 and one of 3, 4 coincide
    other = np.where(a == i, b, a) + 0 * i
    three = ~two & (a == b) & ((a == i) | (a == k))  # fields 3, 4 and one of 1, 2
    student = np.where(a == i, k, i) + 0 * a
    return two, other, three, student, np.broadcast_to(a, two.shape), np.broadcast_to(i, two.shape)


@functools.lru_cache(maxsize=64)
def _batched(K: int, M: int):
    """Static index lists of the batched I4 (``_i4_sum`` with i4="sets"), over the flattened [P * Pn] grid of the
    distinct tuples of ``_unordered``: ``triple`` (flat positions where three arguments coincide: closed I2 / I3);
    ``copy`` (two coincide) with the tuples' fields [Nc, 4] and the other two positions [Nc, 2]; ``distinct``
    (four different fields) with ``sets`` [Ns, 4] (each set of four fields once, sorted), the set of every distinct
    tuple and its split (the index in ``PAIRS4`` of the positions of (i, k) in the sorted set)."""
    from twolayer.theory.gaussian_integrals import PAIRS4

    ip, kp, aq, bq, _ = _unordered(K, M)
    two, _, three, _, _, _ = _triples(K, M)
    F = np.stack(np.broadcast_arrays(ip[:, None], kp[:, None], aq[None, :], bq[None, :]), axis=-1).reshape(-1, 4)
    equal = np.stack([F[:, p] == F[:, q] for p, q in PAIRS4], axis=-1)  # [P * Pn, 6]
    triple = (two | three).ravel()
    distinct = ~equal.any(axis=-1)
    copy = ~distinct & ~triple
    rest = np.array([[m for m in range(4) if m not in pq] for pq in PAIRS4])[np.argmax(equal[copy], axis=-1)]
    quad = np.sort(F[distinct], axis=-1)
    sets, set_of = np.unique(quad, axis=0, return_inverse=True)
    pos_i = np.argmax(quad == F[distinct, :1], axis=-1)
    pos_k = np.argmax(quad == F[distinct, 1:2], axis=-1)
    split = np.array([PAIRS4.index((int(a), int(b))) for a, b in zip(pos_i, pos_k)], dtype=np.int64)
    return (np.flatnonzero(triple), np.flatnonzero(copy), F[copy], rest, np.flatnonzero(distinct), sets,
            set_of.ravel(), split)


def _field_entries(O, F):
    """Covariance entries {(a, b): O[F[:, a], F[:, b]]} of the field tuples F [n, m]."""
    m = F.shape[1]
    return {(a, b): O[F[:, a], F[:, b]] for a in range(m) for b in range(a, m)}


def _i4_sets(ints, O, K: int, M: int):
    """I4 over the grid [P, Pn] of ``_unordered`` in batches by repeat pattern (``_batched``): each set of four
    distinct fields once (its D4 integral and six pair weights shared by its splits, "i4_sets"), the tuples with a
    copy by "i4_copy" (D4 closed), three coinciding arguments by the closed I2 / I3 of ``_triples``."""
    P, Pn = len(_unordered(K, M)[0]), len(_unordered(K, M)[2])
    tri_at, copy_at, Fc, rest, dist_at, sets, set_of, split = _batched(K, M)
    two, other, three, student, a, i = _triples(K, M)
    d = jnp.diagonal(O)
    I2 = ints["i2"]({(0, 0): d[i], (0, 1): O[i, other], (1, 1): d[other]})
    I3 = ints["i3"]({(0, 0): d[student], (0, 1): O[student, a], (0, 2): O[student, a], (1, 1): d[a],
                     (1, 2): d[a], (2, 2): d[a]})
    tri = jnp.where(two, I2, I3).ravel()[tri_at]
    z, w = Fc[np.arange(len(Fc)), rest[:, 0]], Fc[np.arange(len(Fc)), rest[:, 1]]
    cop = ints["i4_copy"](_field_entries(O, Fc), {(0, 0): d[z], (0, 1): O[z, w], (1, 1): d[w]})
    dist = ints["i4_sets"](_field_entries(O, sets))[set_of, split]
    out = jnp.zeros(P * Pn, O.dtype).at[tri_at].set(tri).at[copy_at].set(cop).at[dist_at].set(dist)
    return out.reshape(P, Pn)


I4_PATHS = ("sets", "tuples", "general")


def _i4_sum(ints, O, K: int, M: int, c, i4: str):
    """S[P] = sum_{a,b} c_a c_b I4(i, k, a, b) over the distinct tuples. For relu and abs, ``i4`` picks the path:
    "sets" (batched by repeat pattern, ``_i4_sets``), "tuples" (the orthant reduction "i4_pairs" per tuple, with the
    closed forms of ``_triples`` where three arguments coincide), "general" (the interpolation integral per tuple);
    closed-form activations take "i4" per tuple on every path."""
    ip, kp, aq, bq, mult = _unordered(K, M)
    if i4 == "sets" and "i4_sets" in ints:
        I4 = _i4_sets(ints, O, K, M)
    elif i4 == "tuples" and "i4_pairs" in ints:
        entries = quad_entries(O, K, M)
        two, other, three, student, a, i = _triples(K, M)
        d = jnp.diagonal(O)
        I4 = ints["i4_pairs"](entries)
        I2 = ints["i2"]({(0, 0): d[i], (0, 1): O[i, other], (1, 1): d[other]})
        I3 = ints["i3"]({(0, 0): d[student], (0, 1): O[student, a], (0, 2): O[student, a], (1, 1): d[a],
                         (1, 2): d[a], (2, 2): d[a]})
        I4 = jnp.where(two, I2, jnp.where(three, I3, I4))
    else:
        I4 = ints["i4"](quad_entries(O, K, M))
    return I4 @ (mult * c[aq] * c[bq])


def vector_field(state: dict, T, vstar, eta, noise_var, batch, *, activation: str, layers=1.0, eta2=1.0,
                 i4: str = "general") -> dict:
    """d(Q, R, v)/dt of the module docstring, in Goldt time (samples per dimension). ``layers`` 1 trains both
    layers, 0 the first only; ``eta2`` 1 keeps the eta^2 term, 0 drops it (numbers, so that one compiled
    program serves every variant).

    The integrals take covariance entries built by broadcasting Omega (no [..., n, n] blocks), and I4 is
    evaluated once per distinct tuple: I4(i, k, a, b) = I4(k, i, a, b) = I4(i, k, b, a), so K (K + 1) / 2 student
    pairs times (K + M)(K + M + 1) / 2 field pairs instead of K^2 (K + M)^2. ``vector_field_blocks`` is the
    direct transcription (every ordered tuple, gathered blocks) that tests compare against. ``i4`` picks how relu
    and abs evaluate I4 (``_i4_sum``): "general" (default) is the interpolation integral per tuple, the one path that
    holds near the K = M fixed point, where a student's field is nearly (or exactly) a copy of a teacher's: against an
    independent reference (``tests/test_i4_reference.py``) it is within 2e-8 of every I4 and 5e-9 of the eta^2 sum
    there (16 nodes, s = 1 - tau^4; the 24-node s = 1 - tau^2 rule before: 2e-7 and 2e-8). "tuples" (the field "orthant") is the orthant reduction per tuple: 2x cheaper and equal to the reference to
    1e-10 on well-conditioned covariances, but its 16-node Plackett integral of D4 does not resolve phi2(s rho) with
    rho -> 1, so near copies it is off by up to 3e-4 per I4 (1.3e-4 of the eta^2 sum, relu, |w - w*|^2 = 1e-6) and, where
    three arguments are one field under distinct indices (students equal to teachers), by up to 0.6. "sets" (the field
    "sets") batches the tuples by repeat pattern and evaluates each set of four distinct fields once, with the same D4
    (equal to "tuples" to 1e-16 away from copies, as wrong near them)."""
    Q, R, v = state["Q"], state["R"], state["v"]
    K, M = Q.shape[0], T.shape[0]
    ints = INTEGRALS.get(activation).entries
    O = omega(Q, R, T)
    c = jnp.concatenate([v, -vstar])
    dQ, dR, dv = _first_order(ints, O, v, c, K, eta, layers)
    ip, kp = _unordered(K, M)[:2]
    S = _i4_sum(ints, O, K, M, c, i4)  # [P]: sum_{a,b} c_a c_b I4(i, k, a, b)
    S4 = jnp.zeros((K, K), O.dtype).at[ip, kp].set(S).at[kp, ip].set(S)
    J2 = ints["j2"]({(0, 0): jnp.diagonal(Q)[:, None], (0, 1): Q, (1, 1): jnp.diagonal(Q)[None, :]})
    dQ = dQ + eta2 * (eta ** 2 / batch) * v[:, None] * v[None, :] * (S4 + noise_var * J2)
    return {"Q": 0.5 * (dQ + dQ.T), "R": dR, "v": dv}


def _first_order(ints, O, v, c, K: int, eta, layers):
    """The terms of order eta of (dQ, dR, dv) (module docstring; dQ not yet symmetrized): closed-form I2 and I3."""
    A = jnp.einsum("iba,a->ib", ints["i3"](triple_entries(O, K)), c)  # A[i, b] = sum_a c_a I3(i, b, a)
    first = v[:, None] * A
    dR = -eta * first[:, K:]
    dQ = -eta * (first[:, :K] + first[:, :K].T)
    dv = -layers * eta * ints["i2"](pair_entries(O, slice(0, K))) @ c
    return dQ, dR, dv


def first_order_field(state: dict, T, vstar, eta, *, activation: str, layers=1.0) -> dict:
    """``vector_field`` without the eta^2 term: gradient flow on the population loss at time eta t, from the closed
    forms of I2 and I3 only (no I4), so cheap; near a stable fixed point it carries the stiff part of the field."""
    Q, R, v = state["Q"], state["R"], state["v"]
    K = Q.shape[0]
    dQ, dR, dv = _first_order(INTEGRALS.get(activation).entries, omega(Q, R, T), v, jnp.concatenate([v, -vstar]), K,
                              eta, layers)
    return {"Q": 0.5 * (dQ + dQ.T), "R": dR, "v": dv}


def vector_field_blocks(state: dict, T, vstar, eta, noise_var, batch, *, activation: str, layers=1.0,
                        eta2=1.0) -> dict:
    """``vector_field`` transcribed directly: every ordered index tuple, its covariance block gathered from Omega
    (the reference the fast path is tested against; about 4x the I4 evaluations)."""
    Q, R, v = state["Q"], state["R"], state["v"]
    K, M = Q.shape[0], T.shape[0]
    gi = INTEGRALS.get(activation)
    pairs, triples, quads, student_pairs = (jnp.asarray(x) for x in _indices(K, M))
    O = omega(Q, R, T)
    c = jnp.concatenate([v, -vstar])
    A = jnp.einsum("iba,a->ib", gi.i3(_blocks(O, triples)), c)
    first = v[:, None] * A
    dR = -eta * first[:, K:]
    dQ = -eta * (first[:, :K] + first[:, :K].T)
    I4 = gi.i4(_blocks(O, quads))
    J2 = gi.j2(_blocks(O, student_pairs))
    second = jnp.einsum("ikab,a,b->ik", I4, c, c) + noise_var * J2
    dQ = dQ + eta2 * (eta ** 2 / batch) * v[:, None] * v[None, :] * second
    dv = -layers * eta * gi.i2(_blocks(O, pairs))[:K] @ c
    return {"Q": 0.5 * (dQ + dQ.T), "R": dR, "v": dv}


# the same ODE; "blocks" is the reference; for relu and abs "distinct" (= "interpolation") is the interpolation I4 per
# tuple, "orthant" the orthant reduction per tuple and "sets" the batched one (both cheaper, not valid near copies:
# ``vector_field``)
FIELDS = {"distinct": vector_field, "orthant": functools.partial(vector_field, i4="tuples"),
          "sets": functools.partial(vector_field, i4="sets"),
          "interpolation": functools.partial(vector_field, i4="general"), "blocks": vector_field_blocks}


def _tsit5(field, y0, times, args, rtol, atol, max_steps: int, activation: str):
    """diffrax's Tsit5 (explicit Runge-Kutta 5(4)) with a PID step controller: (ys, reached, steps)."""
    import diffrax

    sol = diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, a: field(y, a)), diffrax.Tsit5(), t0=times[0],
                              t1=times[-1], dt0=None, y0=y0, args=args, saveat=diffrax.SaveAt(ts=times),
                              stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol), max_steps=max_steps,
                              throw=False)
    return sol.ys, sol.result == diffrax.RESULTS.successful, sol.stats["num_steps"]


def _ros34pw2(field, y0, times, args, rtol, atol, max_steps: int, activation: str):
    """The Rosenbrock-W method ROS34PW2 (``theory.rosenbrock_w``) on the flattened (Q, R, v), with W the Jacobian of
    ``first_order_field`` by central differences (refreshed every 20 accepted steps): it carries the stiffness near
    the fixed point, where the eta^2 term is O(eps_g), and costs no I4. Central differences because forward-mode
    derivatives of the closed forms are NaN on the diagonal pairs (arcsin' at correlation 1, times a zero tangent).
    (ys, reached, steps)."""
    from jax.flatten_util import ravel_pytree

    x0, unravel = ravel_pytree(y0)
    T, vstar, eta, _, _, layers, _ = args

    def flat_field(x):
        return ravel_pytree(field(unravel(x), args))[0]

    def first_order(x):
        return ravel_pytree(first_order_field(unravel(x), T, vstar, eta, activation=activation, layers=layers))[0]

    def jacobian(x):
        steps = 1e-6 * jnp.maximum(1.0, jnp.abs(x))
        shifts = jnp.diag(steps)
        return (jax.vmap(first_order)(x + shifts) - jax.vmap(first_order)(x - shifts)).T / (2.0 * steps)

    xs, steps, reached = rosenbrock_w.solve(flat_field, jacobian, x0, times, rtol=rtol, atol=atol,
                                            max_steps=max_steps)
    return jax.vmap(unravel)(xs), reached, steps


# the solvers of ``integrate``: (field(y, args), y0, times, args, rtol, atol, max_steps, activation) -> (ys, reached,
# steps tried)
SOLVERS = {"tsit5": _tsit5, "ros34pw2": _ros34pw2}


@functools.lru_cache(maxsize=64)
def _solver(activation: str, max_steps: int, field_name: str = "distinct", solver: str = "tsit5"):
    vf = FIELDS[field_name]
    method = SOLVERS[solver]

    def field(y, args):
        T, vstar, eta, noise_var, batch, layers, eta2 = args
        return vf(y, T, vstar, eta, noise_var, batch, activation=activation, layers=layers, eta2=eta2)

    @jax.jit
    def solve(y0, times, args, rtol, atol):
        ys, reached, steps = method(field, y0, times, args, rtol, atol, max_steps, activation)
        eps = jax.vmap(lambda Q, R, v: generalization_error(Q, R, args[0], v, args[1], activation))(
            ys["Q"], ys["R"], ys["v"])
        return ys, eps, reached, steps

    return solve


@contextlib.contextmanager
def single_threaded_blas():
    """One BLAS / LAPACK thread for the block (threadpoolctl; restored after). ROS34PW2 factors a matrix every
    step through LAPACK, and OpenBLAS's own threads then compete with XLA's for the cores: relu K = M = 10 to t = 1e4
    takes 72 s with OpenBLAS's default threads and 41 s with one on 2 cores (docs/online_sgd.md). scipy.linalg is
    imported first so that its OpenBLAS, which JAX's CPU LAPACK calls, is loaded when the limit is set."""
    with _blas_controller().limit(limits=1, user_api="blas"):
        yield


@functools.lru_cache(maxsize=1)
def _blas_controller():
    """threadpoolctl's view of the loaded BLAS libraries, made once: a ``threadpool_limits`` call scans every loaded
    library again (~5 ms in a process that has imported JAX, paid by every ODE solve of a claim)."""
    import scipy.linalg  # noqa: F401
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


class ODEError(RuntimeError):
    """The ODE solver could not reach the end time (max_steps exhausted, a blow-up)."""


def integrate(Q0, R0, v0, T, vstar, times, *, activation: str, eta: float, layers: str = "both",
              eta2: bool = True, noise: float = 0.0, batch: int = 1, rtol: float = 1e-8, atol: float = 1e-10,
              max_steps: int = 1_000_000, field: str = "distinct", solver: str = "tsit5") -> OrderParameters:
    """Solve the order-parameter ODEs from (Q0, R0, v0) with teacher (T, vstar), saving at ``times`` (Goldt time,
    increasing, starting at the initial time). ``noise`` is the label-noise standard deviation sigma; ``batch`` B
    divides the eta^2 term; ``field`` picks the implementation of the vector field (``FIELDS``: "distinct", the
    fast one, or "blocks", the direct reference); ``solver`` the integrator (``SOLVERS``): "tsit5" (explicit, the
    default) or "ros34pw2" (Rosenbrock-W, for the stiff approach to a fixed point: docs/online_sgd.md). Raises
    ``ODEError`` when the solver fails."""
    if activation not in INTEGRALS:
        raise ValueError(f"activation {activation!r} is not one of {', '.join(INTEGRALS.names())}")
    if layers not in LAYERS:
        raise ValueError(f"layers {layers!r} is not one of {', '.join(LAYERS)}")
    if field not in FIELDS:
        raise ValueError(f"field {field!r} is not one of {', '.join(FIELDS)}")
    if solver not in SOLVERS:
        raise ValueError(f"solver {solver!r} is not one of {', '.join(SOLVERS)}")
    ts = np.asarray(times, dtype=np.float64)
    if ts.ndim != 1 or ts.size < 2 or not np.all(np.isfinite(ts)) or np.any(np.diff(ts) < 0):
        raise ValueError(f"times must be at least two finite, non-decreasing Goldt times (got {ts.shape} values "
                         f"from {ts.min() if ts.size else None} to {ts.max() if ts.size else None})")
    f64 = functools.partial(np.asarray, dtype=np.float64)  # numpy inputs: the compiled solve takes them as they are
    y0 = {"Q": f64(Q0), "R": f64(R0), "v": f64(v0)}
    args = (f64(T), f64(vstar), f64(eta), np.square(f64(noise)), f64(batch), f64(layers == "both"), f64(bool(eta2)))
    with single_threaded_blas():
        ys, eps, ok, steps = jax.block_until_ready(
            _solver(activation, int(max_steps), field, solver)(y0, ts, args, f64(rtol), f64(atol)))
    if not bool(ok):
        raise ODEError(f"the order-parameter ODE ({activation}, eta={eta}) did not reach t={float(ts[-1]):g} "
                       f"in {int(steps)} steps")
    if not all(np.all(np.isfinite(np.asarray(a))) for a in ys.values()):  # a failed check of diffrax (backend)
        raise ODEError(f"the order-parameter ODE ({activation}, eta={eta}) returned non-finite order parameters")
    return OrderParameters(np.asarray(ts), np.asarray(ys["Q"]), np.asarray(ys["R"]), np.asarray(ys["v"]),
                           np.asarray(T, dtype=np.float64), np.asarray(vstar, dtype=np.float64), np.asarray(eps),
                           int(steps))


def order_parameters(W, Wstar):
    """(Q, R, T) of first layers in twolayer's parametrization (rows w = W / sqrt d): Q = w w', R = w w*', T = w* w*'."""
    W, Wstar = np.asarray(W, dtype=np.float64), np.asarray(Wstar, dtype=np.float64)
    return W @ W.T, W @ Wstar.T, Wstar @ Wstar.T


# -- linear activation: the exact solution --------------------------------------------------------------

def linear_solution(Q0, R0, T, vstar, times, *, v=None, eta: float, noise: float = 0.0, batch: int = 1,
                    eta2: bool = True):
    """Closed form for g(x) = x with the first layer trained and the second fixed at ``v`` (default all ones).

    The student is then linear in x: phi = s.x with s = sum_k v_k w_k, and the teacher s* = sum_n v*_n w*_n. With
    m = s.s* = v'R v*, q = s.s = v'Q v, t* = v*'T v* and V = |v|^2 (every row's step is v_k times the same vector,
    so s moves by V times it) the ODEs close:
        dm/dt = -eta V (m - t*),   dq/dt = -2 eta V (q - m) + eta^2 V^2 / B (q - 2 m + t* + sigma^2),
    so e = q - 2m + t* = 2 eps_g obeys de/dt = -(2 eta V - eta^2 V^2 / B) e + eta^2 V^2 sigma^2 / B, and
        eps_g(t) = eps_inf + (eps_g(0) - eps_inf) exp(-(2 eta V - eta^2 V^2 / B) t),
        eps_inf = eta V sigma^2 / (2 (2 B - eta V))      (stable for eta < 2 B / V).
    Returns eps_g at ``times`` [T]."""
    Q0, R0, T = (np.asarray(a, dtype=np.float64) for a in (Q0, R0, T))
    v = np.ones(Q0.shape[0]) if v is None else np.asarray(v, dtype=np.float64)
    vstar = np.asarray(vstar, dtype=np.float64)
    V = float(v @ v)
    q, m, ts = v @ Q0 @ v, v @ R0 @ vstar, vstar @ T @ vstar
    e0 = q - 2 * m + ts
    a = (eta * V) ** 2 / batch if eta2 else 0.0
    rate = 2 * eta * V - a
    e_inf = a * noise ** 2 / rate
    t = np.asarray(times, dtype=np.float64)
    return 0.5 * (e_inf + (e0 - e_inf) * np.exp(-rate * t))


def noise_floor_linear(V: float, eta: float, noise: float, batch: int = 1) -> float:
    """eps_inf = eta V sigma^2 / (2 (2 B - eta V)) of ``linear_solution`` (V = |v|^2; K for v = 1): proportional to
    eta sigma^2 at small eta."""
    return eta * V * noise ** 2 / (2 * (2 * batch - eta * V))


# -- the symmetric plateau (Saad & Solla 1995) ------------------------------------------------------------

@dataclass(frozen=True)
class Plateau:
    """The symmetric fixed point of the ODEs: ``Q``, ``R``, ``v`` there, its ``height`` (eps_g), the largest real
    part ``rate`` of the Jacobian's eigenvalues (the escape rate, per unit of Goldt time), and ``length(delta0)`` the
    escape time predicted for an initial asymmetry delta0 (the time to grow to ``delta_escape``). ``eigenvalues``:
    the Jacobian's whole spectrum there (its stable part sets how fast a trajectory settles onto the plateau);
    ``rate_error``: how much the rate moved in the last Newton step (its accuracy, as far as the fixed point's)."""

    Q: np.ndarray
    R: np.ndarray
    v: np.ndarray
    height: float
    rate: float
    delta_escape: float = 0.1
    eigenvalues: np.ndarray | None = dataclass_field(default=None, compare=False)
    rate_error: float = float("nan")

    def length(self, delta0) -> np.ndarray:
        """(1 / rate) ln(delta_escape / delta0): the linear escape from the plateau (Saad & Solla 1995, Sec. IV)."""
        return np.log(self.delta_escape / np.asarray(delta0, dtype=np.float64)) / self.rate

    def slowest_stable(self, zero: float = 1e-9) -> float:
        """The smallest decay rate mu > 0 among the Jacobian's stable eigenvalues (real part < -zero * rate; the
        exact zeros of directions the ODE does not move, v with the first layer only or Q_ik - Q_ki, left out)."""
        if self.eigenvalues is None:
            return float("nan")
        re = -np.real(self.eigenvalues)
        stable = re[re > zero * abs(self.rate)]
        return float(stable.min()) if stable.size else float("nan")


def symmetrize(Q, R, v):
    """(Q, R, v) averaged over the permutations of the student units: diagonal and off-diagonal entries of Q, every
    R_in and every v_i replaced by their means. The ODEs keep this subspace (for a teacher with T = I and equal v*),
    where the students cannot specialize."""
    Q, R, v = (np.asarray(a, dtype=np.float64) for a in (Q, R, v))
    K = Q.shape[0]
    diag, off = np.mean(np.diag(Q)), (Q.sum() - np.trace(Q)) / max(K * (K - 1), 1)
    return off * np.ones((K, K)) + (diag - off) * np.eye(K), np.full_like(R, R.mean()), np.full_like(v, v.mean())


class PlateauPrograms(NamedTuple):
    """The student-symmetric subspace of ``symmetric_plateau`` for K students and M teachers: ``reduce`` maps a state
    (Q, R, v) to y = (mean diagonal of Q, mean off-diagonal of Q, the mean row of R, the mean v), ``full`` maps y back
    (Q = q_o 1 + (q_d - q_o) I, every row of R the same r, every v_i the same); ``field`` and ``jacobian`` are the
    reduced field and its Jacobian at y, ``full_jacobian`` the full field's at the flattened (Q, R, v)."""

    reduce: Callable
    full: Callable
    field: Callable
    jacobian: Callable
    full_jacobian: Callable


@functools.lru_cache(maxsize=64)
def _plateau_programs(activation: str, K: int, M: int) -> PlateauPrograms:
    """``PlateauPrograms`` compiled once per (activation, K, M): the teacher and the learning rates are arguments
    (``args`` of ``_solver``), so every plateau of one shape shares the programs."""
    eye, off = jnp.eye(K), 1.0 - jnp.eye(K)
    pairs = max(K * (K - 1), 1)

    def field_of(Q, R, v, args):
        return vector_field({"Q": Q, "R": R, "v": v}, *args[:5], activation=activation, layers=args[5], eta2=args[6])

    def reduce(Q, R, v):
        return jnp.concatenate([jnp.array([np.trace(Q) / K, float(np.sum(Q * (1 - np.eye(K)))) / pairs]),
                                jnp.asarray(R.mean(0)), jnp.asarray([v.mean()])])

    def full(y):
        return y[1] * off + y[0] * eye, jnp.broadcast_to(y[2:2 + M], (K, M)), jnp.full((K,), y[-1])

    def reduced_field(y, args):
        out = field_of(*full(y), args)
        return jnp.concatenate([jnp.array([jnp.trace(out["Q"]) / K, jnp.sum(out["Q"] * off) / pairs]),
                                out["R"].mean(0), out["v"].mean(keepdims=True)])

    def flat_field(x, args):
        out = field_of(x[:K * K].reshape(K, K), x[K * K:K * K + K * M].reshape(K, M), x[K * K + K * M:], args)
        return jnp.concatenate([out["Q"].ravel(), out["R"].ravel(), out["v"].ravel()])

    return PlateauPrograms(reduce, full, jax.jit(reduced_field), jax.jit(jax.jacfwd(reduced_field)),
                           jax.jit(jax.jacfwd(flat_field)))


def symmetric_plateau(Q0, R0, v0, T, vstar, *, activation: str, eta: float, layers: str = "both", eta2: bool = True,
                      settle: float = 150.0, newton: int = 20) -> Plateau:
    """Integrate the symmetrized initial state to Goldt time ``settle`` (it approaches the symmetric fixed point;
    much longer and round-off, amplified along the unstable direction, breaks the symmetry), refine the fixed point
    by ``newton`` Newton steps inside the student-symmetric subspace (Q = q_o 1 + (q_d - q_o) I, every row of R the
    same r [M], every v_i the same; the ODEs keep it for any teacher), then linearize the full ODE there: the escape
    ``rate`` is the largest real eigenvalue of the Jacobian of (Q, R, v) -> d(Q, R, v)/dt (Saad & Solla 1995: the
    plateau's unstable direction breaks the symmetry). Newton on the full state instead drifts along the Jacobian's
    exact zeros (Q_12 - Q_21, a fixed v) to points with Q_12 != Q_21, where the rate is off by up to 0.2 %
    (erf K = M = 2, eta = 0.3-1.2)."""
    Qs, Rs, vs = symmetrize(Q0, R0, v0)
    sol = integrate(Qs, Rs, vs, T, vstar, np.array([0.0, settle]), activation=activation, eta=eta, layers=layers,
                    eta2=eta2)
    Q, R, v = sol.Q[-1], sol.R[-1], sol.v[-1]
    K, M = R.shape
    args = (jnp.asarray(T, dtype=jnp.float64), jnp.asarray(vstar, dtype=jnp.float64), jnp.float64(eta),
            jnp.float64(0.0), jnp.float64(1.0), jnp.float64(layers == "both"), jnp.float64(bool(eta2)))
    programs = _plateau_programs(activation, K, M)
    y = programs.reduce(Q, R, v)

    def spectrum(y):
        Qf, Rf, vf = programs.full(y)
        flat = jnp.concatenate([Qf.ravel(), Rf.ravel(), vf])
        return np.linalg.eigvals(np.asarray(programs.full_jacobian(flat, args)))

    previous = np.nan
    for i in range(newton):
        if i == newton - 1:
            previous = float(np.max(spectrum(y).real))
        y = y - jnp.asarray(np.linalg.lstsq(np.asarray(programs.jacobian(y, args)), np.asarray(programs.field(y, args)),
                                            rcond=1e-12)[0])
    eigenvalues = spectrum(y)
    rate = float(np.max(eigenvalues.real))
    Q, R, v = (np.asarray(a) for a in programs.full(y))
    height = float(generalization_error(jnp.asarray(Q), jnp.asarray(R), args[0], jnp.asarray(v), args[1], activation))
    return Plateau(Q, R, v, height, rate, eigenvalues=eigenvalues, rate_error=abs(rate - previous))
