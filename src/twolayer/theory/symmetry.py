"""The symmetry group of the multi-index target and the symmetrized network (paper §3, eq. 5, Lemma A.1).

The group P acts on coordinates in the target basis (first r relevant, last n = d - r irrelevant) by
rho(x) = (s_1 x_1, ..., s_r x_r, s_{r+1} x_{pi(r+1)}, ..., s_d x_{pi(d)}), s in {+-1}^d, pi a permutation
of the irrelevant block; |P| = 2^d (d - r)!. The symmetrized network f~(x) = E_rho f(rho x) keeps the
target part and drops the rest: L(f) = L(f~) + 1/2 ||f - f~||^2 exactly ("bias" + "variance", eq. 5).

For f = sum_i c_i sigma(u_i . x) with unit u_i, ||f~||^2 = sum_ij c_i c_j E_rho kappa(<u_i, rho u_j>) and by
kappa = sum_k sigma_hat_k^2 rho^k it splits into exact group moments K_k(u, y) = E_rho <u, rho y>^k (odd k: 0):

    K_2 = R_1 + U_1 Y_1 / n,
    K_4 = 3 [R_1^2 + 2 R_1 U_1 Y_1 / n + U_2 Y_2 / n + (U_1^2 - U_2)(Y_1^2 - Y_2) / (n (n - 1))]
          - 2 [R_2 + U_2 Y_2 / n],

R_p = sum_{l<=r} u_l^{2p} y_l^{2p}, U_p = sum_{l>r} u_l^{2p}, Y_p = sum_{l>r} y_l^{2p} (spec §3.4a), and a Monte
Carlo average over uniformly drawn group elements for the residual kernel kappa_{>K_SYM} (spec §3.4b).
``group_moment`` implements the general exact formula for every even k (signs by the log-cosh cumulants,
the irrelevant-block permutation by set partitions and Moebius inversion), so K_SYM = 8 as in spec §2.6.
Functions take coordinates Z = U B' in the target basis B (identity for the standard target).
"""

from __future__ import annotations

import functools
import itertools
import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np

K_SYM = 8  # group moments are exact up to this order (spec §2.6 default); the residual is Monte Carlo


def _set_partitions(items: tuple) -> list[list[tuple]]:
    """All set partitions of ``items`` (Bell(T) of them), each a list of blocks."""
    if not items:
        return [[]]
    first, rest = items[0], items[1:]
    out = []
    for part in _set_partitions(rest):
        out.append([(first,), *part])
        for i in range(len(part)):
            out.append([*part[:i], (first, *part[i]), *part[i + 1:]])
    return out


def _int_partitions(q: int, largest: int | None = None) -> list[tuple[int, ...]]:
    """Integer partitions of ``q`` as non-increasing tuples."""
    largest = q if largest is None else largest
    if q == 0:
        return [()]
    return [(p, *rest) for p in range(min(q, largest), 0, -1) for rest in _int_partitions(q - p, p)]


@functools.lru_cache(maxsize=None)
def _log_cosh(q: int) -> tuple[Fraction, ...]:
    """ell_1..ell_q with log cosh x = sum_p ell_p x^{2p}, from cosh = sum c_j x^{2j}, c_j = 1/(2j)!, by the
    log-series recursion p c_p = sum_{j=1}^p j ell_j c_{p-j} (spec §3.4a): 1/2, -1/12, 1/45, -17/2520, ..."""
    c = [Fraction(1, math.factorial(2 * j)) for j in range(q + 1)]
    ell = [Fraction(0)] * (q + 1)
    for p in range(1, q + 1):
        ell[p] = (p * c[p] - sum(j * ell[j] * c[p - j] for j in range(1, p))) / p
    return tuple(ell[1:])


def _injective(blocks: list[int]) -> dict[tuple[int, ...], Fraction]:
    """sum over distinct l_B of prod_B z_{l_B}^{2 P_B}, as a polynomial in the power sums Z_P = sum_l z_l^{2P}
    (Moebius inversion over set partitions tau of the blocks: prod_C (-1)^{|C|-1} (|C|-1)! Z_{P_C});
    keys are sorted tuples of P's (a monomial prod Z_P), values the coefficients."""
    out: dict[tuple[int, ...], Fraction] = {}
    for tau in _set_partitions(tuple(range(len(blocks)))):
        coef, mono = Fraction(1), []
        for C in tau:
            coef *= (-1) ** (len(C) - 1) * math.factorial(len(C) - 1)
            mono.append(sum(blocks[b] for b in C))
        key = tuple(sorted(mono))
        out[key] = out.get(key, Fraction(0)) + coef
    return out


Term = tuple[Fraction, tuple[int, ...], tuple[int, ...], tuple[int, ...]]  # (coef, rexp, umono, ymono)


@functools.lru_cache(maxsize=None)
def group_moment_terms(k: int, n: int) -> tuple[Term, ...]:
    """The exact group moment K_k(u, y) = E_{rho in P} <u, rho y>^k as a sum of terms
    ``(coef, rexp, umono, ymono)`` meaning coef * prod_p R_p^{rexp[p-1]} * prod_{P in umono} U_P * prod_{P in ymono} Y_P
    with R_p = sum_{l<=r} u_l^{2p} y_l^{2p}, U_P = sum_{l>r} u_l^{2P}, Y_P = sum_{l>r} y_l^{2P}, n = d - r
    (spec §3.4a):

    1. signs: E_s (sum_l s_l b_l)^{2q} = (2q)! sum_{lambda |- q} prod_p (ell_p S_p)^{n_p} / n_p!, S_p = sum_l b_l^{2p};
    2. S_p = R_p + I_p(pi), I_p = sum_{l>r} u_l^{2p} y_{pi(l)}^{2p}, expanded binomially;
    3. E_pi prod_t I_{p_t} = sum_{sigma set partition, |sigma| <= n} Inj_U(sigma) Inj_Y(sigma) / (n)_{|sigma|}.

    Odd k: no terms (K_k = 0). Exact rational coefficients, like terms merged."""
    if k % 2:
        return ()
    q = k // 2
    ell = _log_cosh(q) if q else ()
    acc: dict[tuple, Fraction] = {}
    for lam in _int_partitions(q):
        counts = {p: lam.count(p) for p in set(lam)}
        base = Fraction(math.factorial(k))
        for p, n_p in counts.items():
            base *= ell[p - 1] ** n_p / math.factorial(n_p)
        for choice in itertools.product((0, 1), repeat=len(lam)):  # 0: R_p, 1: I_p for each factor
            rexp = [0] * q
            ips = []
            for p, c in zip(lam, choice):
                if c:
                    ips.append(p)
                else:
                    rexp[p - 1] += 1
            for sigma in _set_partitions(tuple(range(len(ips)))):
                if len(sigma) > n:
                    continue
                weights = [sum(ips[t] for t in B) for B in sigma]
                falling = math.prod(range(n - len(sigma) + 1, n + 1))
                inj = _injective(weights)
                for umono, cu in inj.items():
                    for ymono, cy in inj.items():
                        key = (tuple(rexp), umono, ymono)
                        acc[key] = acc.get(key, Fraction(0)) + base * cu * cy / falling
    return tuple((c, *key) for key, c in sorted(acc.items()) if c != 0)


def group_moment(Zu, Zy, r: int, k: int):
    """``K_k[i, j] = E_{rho in P} <u_i, rho y_j>^k`` for rows of ``Zu`` [m, d], ``Zy`` [m', d] (any k >= 0; exact,
    spec §3.4a, see ``group_moment_terms``). E.g. K_2 = R_1 + U_1 Y_1 / n and
    K_4 = 3 [R_1^2 + 2 R_1 U_1 Y_1 / n + U_2 Y_2 / n + (U_1^2 - U_2)(Y_1^2 - Y_2) / (n (n - 1))]
          - 2 [R_2 + U_2 Y_2 / n].
    Cost O(m m' (r q + #R-monomials) + m #U-monomials) for k = 2q."""
    n = Zu.shape[1] - r
    shape = (Zu.shape[0], Zy.shape[0])
    terms = group_moment_terms(k, n)
    if not terms:
        return jnp.zeros(shape, dtype=Zu.dtype)
    q = k // 2
    ur2, yr2, ui2, yi2 = Zu[:, :r] ** 2, Zy[:, :r] ** 2, Zu[:, r:] ** 2, Zy[:, r:] ** 2
    R = [(ur2**p) @ (yr2**p).T for p in range(1, q + 1)]
    U = {P: jnp.sum(ui2**P, axis=1) for P in range(1, q + 1)}
    Y = {P: jnp.sum(yi2**P, axis=1) for P in range(1, q + 1)}
    by_r: dict[tuple[int, ...], list] = {}
    for coef, rexp, umono, ymono in terms:
        by_r.setdefault(rexp, []).append((float(coef), umono, ymono))
    out = jnp.zeros(shape, dtype=Zu.dtype)
    for rexp, items in by_r.items():
        um = {mono: math.prod((U[P] for P in mono), start=jnp.ones(shape[0], Zu.dtype)) for _, mono, _ in items}
        ym = {mono: math.prod((Y[P] for P in mono), start=jnp.ones(shape[1], Zu.dtype)) for _, _, mono in items}
        ukeys, ykeys = sorted(um), sorted(ym)
        C = np.zeros((len(ukeys), len(ykeys)))
        for coef, umono, ymono in items:
            C[ukeys.index(umono), ykeys.index(ymono)] += coef
        Umat = jnp.stack([um[key] for key in ukeys], axis=1)  # [m, a]
        Ymat = jnp.stack([ym[key] for key in ykeys], axis=1)  # [m', b]
        irr = Umat @ jnp.asarray(C, dtype=Zu.dtype) @ Ymat.T
        rpart = math.prod((R[p] ** e for p, e in enumerate(rexp) if e), start=jnp.ones(shape, Zu.dtype))
        out = out + rpart * irr
    return out


def act_on(Z, signs, perm):
    """``rho(Z)`` for rows of ``Z`` [m, d]: coordinate l becomes s_l Z[:, perm[l]]."""
    return Z[:, perm] * signs


def sample_group(rng: np.random.Generator, S: int, d: int, r: int):
    """``S`` uniform group elements: signs [S, d] (Rademacher) and perms [S, d] (irrelevant block shuffled)."""
    signs = rng.choice([-1.0, 1.0], size=(S, d))
    perms = np.stack([np.concatenate([np.arange(r), r + rng.permutation(d - r)]) for _ in range(S)])
    return signs, perms


def all_group_elements(d: int, r: int):
    """Every element of P as (signs, perm) (tests only: |P| = 2^d (d - r)!)."""
    for signs in itertools.product([-1.0, 1.0], repeat=d):
        for tail in itertools.permutations(range(r, d)):
            yield np.asarray(signs), np.concatenate([np.arange(r), np.asarray(tail, dtype=int)]).astype(int)


def group_size(d: int, r: int) -> int:
    """|G| = 2^d (d - r)!: sign flips of every coordinate times permutations of the d - r irrelevant ones."""
    return 2**d * math.factorial(d - r)


def symmetrized_decomposition(c, Z, r: int, coeffs, kappa, signs, perms):
    """Exact-plus-Monte-Carlo ``||f~||^2`` and the variance ``1/2 ||f - f~||^2`` of f = sum c_i sigma(z_i . x).

    ``coeffs`` are sigma_hat_0..sigma_hat_K (K = len - 1; K_SYM = 8 by default): orders k <= K are exact by the
    group moments, the residual kernel kappa_{>K}(rho) = kappa(rho) - sum_{k<=K} sigma_hat_k^2 rho^k is averaged
    over the ``signs``/``perms`` [S, d] group samples (spec §3.4b hybrid). Returns a dict with ``norm_sym``
    (||f~||^2), ``variance``, ``variance_se`` (Monte Carlo standard error) and ``variance_order`` [K + 1]
    (exact parts: 1/2 sigma_hat_k^2 (||T_k||^2 - ||T~_k||^2)).
    """
    coeffs = jnp.asarray(coeffs, dtype=Z.dtype)
    K = coeffs.shape[0] - 1
    c2 = coeffs**2
    G = Z @ Z.T
    norm_k = jnp.stack([c @ (G**k) @ c for k in range(K + 1)])
    sym_k = jnp.stack([c @ group_moment(Z, Z, r, k) @ c for k in range(K + 1)])

    def residual(rho):
        return kappa(rho) - sum(c2[k] * rho**k for k in range(K + 1))

    perms = jnp.asarray(perms).astype(jnp.int32)
    samples = jax.vmap(lambda s, p: c @ residual(Z @ act_on(Z, s, p).T) @ c)(jnp.asarray(signs, Z.dtype), perms)
    res_full = c @ residual(G) @ c
    S = signs.shape[0]
    res_sym = jnp.mean(samples)
    se = jnp.std(samples, ddof=1) / jnp.sqrt(S) if S > 1 else jnp.zeros((), Z.dtype)
    var_order = 0.5 * c2 * (norm_k - sym_k)
    norm_sym = jnp.sum(c2 * sym_k) + res_sym
    return {"norm_sym": norm_sym, "variance": jnp.sum(var_order) + 0.5 * (res_full - res_sym),
            "variance_se": 0.5 * se, "variance_order": var_order}
