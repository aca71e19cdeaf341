"""The multiindex2026 claim functions: each passes on its ideal synthetic runs (so that it fails on a falsifier
because of the falsifier's defect, not because the input is malformed), and the per-claim checks on edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from twolayer.claims import Results, get
from twolayer.papers.multiindex2026 import (
    activations, coupling, figure1, figure1_empirical, figure2, finite_size, gd_stability, overlays, schedule,
    theorem31_table,
)
from twolayer.papers.multiindex2026._shared import synthetic_figure1, synthetic_run

IDEAL = {
    "figure1": figure1.synthetic_figure1_runs,
    "figure1-empirical": figure1_empirical.synthetic_empirical,
    "theorem31-table": lambda c: {k: synthetic_run(v, k, synthetic_figure1(v)) for k, v in c.items()},
    "figure2": figure2.synthetic_figure2,
    "activations": activations.synthetic_activations,
    "finite-size": lambda c: finite_size.synthetic_variance(c, exact_bias=1.0),
    "gd-stability": gd_stability.synthetic_stability,
    "schedule": schedule.synthetic_schedule,
}


@pytest.mark.parametrize("name", sorted(IDEAL))
def test_every_claim_passes_on_the_ideal_synthetic_runs(name):
    exp = get(f"multiindex2026/{name}")
    runs = IDEAL[name](exp.run_configs("quick"))
    for spec in exp.claims:
        check = spec.check(Results(exp, "quick", runs))
        assert check.passed and (check.slack is None or check.slack >= 0), (spec.id, check)


def test_overlay_claims_pass_on_the_reduced_odes():
    exp = get("multiindex2026/overlays")
    configs = exp.run_configs("quick")
    runs = {**overlays.synthetic_stage1(configs), **overlays.synthetic_ab(configs)}
    for spec in exp.claims:
        assert spec.check(Results(exp, "quick", runs)).passed, spec.id


def test_coupling_claims_on_synthetic_runs():
    exp = get("multiindex2026/coupling")
    configs = exp.run_configs("quick")
    ideal = coupling.synthetic_coupling(configs, {**{k: (int(k.split("-m")[1]) / 16.0) ** -0.5 for k in configs
                                                     if k.startswith("actual-m")},
                                                  "sample-n150": 0.4, "sample-n600": 0.2, "sample-n2400": 0.1})
    results = Results(exp, "quick", ideal)
    m, ns, vals, pop = coupling.sample_coupling(results)
    # Delta = offset, alpha = 1, ||v~_i|| = 1: Delta/sqrt(alpha) = Delta_max = offset
    assert m == 64 and ns == [150, 600, 2400]
    assert vals[0] == pytest.approx((0.4, 0.4)) and pop == pytest.approx((0.5, 0.5))
    for spec in exp.claims:
        assert spec.check(results).passed, spec.id


def _taus(t0, t2, t4):
    return {"tau_order0": t0, "tau_order2": t2, "tau_order4plus": t4}


def test_hermite_order_check():
    assert figure1.hermite_order_check([_taus(0.1, 3.0, 36.0), _taus(0.1, 2.9, 35.0)]).passed
    assert not figure1.hermite_order_check([_taus(0.1, 3.0, 36.0), _taus(0.1, 0.5, 35.0)]).passed  # tau_2 < 10 tau_0
    assert not figure1.hermite_order_check([_taus(0.1, 3.0, 10.0)]).passed  # tau_4 < 5 tau_2
    assert not figure1.hermite_order_check([_taus(0.1, 3.0, None)]).passed  # never learned


def test_order4_waits_check():
    t = np.linspace(0, 10, 11)
    E = np.ones((1, 11, 9))
    L = np.ones((1, 11, 9))
    L[0, 5:, 2] = 0.05  # order 2 learned at t = 5
    E4 = np.ones((1, 11))
    assert figure1.order4_waits_check(t, L, E, np.full((1, 11), 0.95), E4).passed
    L4 = np.full((1, 11), 0.95)
    L4[0, 5] = 0.5
    assert not figure1.order4_waits_check(t, L, E, L4, E4).passed


def _mass_traj(irr_end=0.01, sub_frac=0.95, found=10, aligned=9.0, bump=False):
    t = np.linspace(0, 100, 201)
    total = np.full((2, 201), 10.0)
    irr = 8.0 * np.exp(-t / 2.0) + irr_end
    if bump:
        irr[150] += 0.5
    return {"t": t, "mass_total": total, "mass_irrelevant": np.stack([irr, irr]),
            "subspace_fraction_min": np.full((2, 201), sub_frac), "directions_found": np.full((2, 201), found),
            "mass_aligned": np.full((2, 201), aligned)}


def test_irrelevant_and_found_checks():
    assert figure1.irrelevant_check(_mass_traj(), 10).passed
    assert not figure1.irrelevant_check(_mass_traj(bump=True), 10).passed
    assert not figure1.irrelevant_check(_mass_traj(sub_frac=0.7), 10).passed
    assert not figure1.irrelevant_check(_mass_traj(irr_end=0.05), 10).passed  # M_irr/alpha 0.005 > 0.002 at the end
    assert figure1.found_check(_mass_traj(), 10).passed
    assert not figure1.found_check(_mass_traj(found=9), 10).passed
    assert not figure1.found_check(_mass_traj(aligned=5.0), 10).passed


def test_theorem31_bounds_are_the_tables():
    """The bounds are eta E_0 + (1 + eta) E_{>=2} and eta E_{<=2} + (1 + eta) E_{>=4} of the target's energies."""
    cfg = get("multiindex2026/theorem31-table").run_configs("quick")["population"]
    E = theorem31_table.energies(synthetic_figure1(cfg, points=3))
    r = cfg["data"]["r"]
    assert E["E_0"] == pytest.approx(r**2 / np.pi) and E["E_>=2"] == pytest.approx(r * (1 - 2 / np.pi) / 2)
    assert E["E_>=4"] == pytest.approx(r * (1 - 3 / np.pi) / 2)
    assert E["E_<=2"] == pytest.approx(E["E_0"] + r / (2 * np.pi))
    assert theorem31_table.table_bound(E, "order0") == pytest.approx(0.1 * E["E_0"] + 1.1 * E["E_>=2"])
    assert theorem31_table.table_bound(E, "order2") == pytest.approx(0.1 * E["E_<=2"] + 1.1 * E["E_>=4"])


def test_figure2_network_realises_the_figures_parameters():
    """sigma = |x| cut at order 2, r = 5: A = sigma_hat_0^2 r / sigma_hat_2^2 = 10 and kappa = 1 in s = (4/pi) t;
    the Gaussian init of scale 0.1 in d = 255 starts at (p, q) = (0.01, 0.5)."""
    from twolayer.papers.multiindex2026._shared import hermite_sums

    h = hermite_sums("abs")
    cfg = get("multiindex2026/figure2").run_configs("quick")["symmetrized"]
    r, d, s = cfg["data"]["r"], cfg["data"]["d"], cfg["init"]["scale"]
    assert h.s0 * r / h.s2 == pytest.approx(10.0) and figure2.time_map() == pytest.approx(4 / np.pi)

    class Run:
        config = cfg

    assert figure2.ode_lambda(Run) == pytest.approx(0.1)
    assert (s**2, (d - r) * s**2 / r) == pytest.approx((figure2.FIG2["p0"], figure2.FIG2["q0"]))
