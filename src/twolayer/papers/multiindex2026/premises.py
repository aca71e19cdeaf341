"""The premises of the multiindex2026 statements, each quoted from the paper, and ``premise``: a counterfactual run
that removes exactly one of them (nothing else changed), declared as that premise's ablation (``Premise``).

Theorem 3.1 and the stage lemmas rest on: Assumption 1 (sigma even), the orthonormal target of eq. (1) with unit
coefficients, the standard initialization of eq. (3), the square loss, gradient flow (GD at a small step), r in
the window log^2 d < r/log^2 r < r log^2 r < log^3 d (so 1 << r << d), the width d^3 <= m, the sample size
n = Theta(d^{3+c}) and the schedule of App. A.2 (lambda = r lambda_0 until T_22, then 0).
"""

from __future__ import annotations

from twolayer.claims.falsifiers import Counterfactual, Premise

EVEN = "Assumption 1: 'The activation sigma is even' (sigma_hat_{2k+1} = 0; ReLU gives sigma_hat_1 = 1/2)"
ORTHONORMAL = "eq. (1): 'the target directions {w*_j} are orthonormal'"
UNIT_COEFFICIENTS = "eq. (1): f* = sum_{j<=r} sigma(w*_j.x), every direction with coefficient 1 (T*_0 = r)"
STANDARD_INIT = "eq. (3): w_i(0) ~ N(0, I_d/d); 'each neuron is initialized with ||w_i(0)||_2 ~ 1'"
SQUARE_LOSS = "Section 2: 'We train on the empirical square loss' (eq. 3 descends 1/2 E (f - f*)^2)"
FLOW = "eq. (3): 'Training follows gradient flow' (GD approximates it at a small step)"
R_BELOW_D = ("Theorem 3.1: log^2 d < r/log^2 r < r log^2 r < log^3 d, so r = polylog(d) << d (abstract: 'an "
             "additional competitive subspace-recovery stage that is absent when r = d')")
R_LARGE = "Theorem 3.1: log^2 d < r/log^2 r, so r >> 1 (r = 1 is a single-index target)"
WIDTH = "Theorem 3.1: 'width d^3 <= m <= poly(d)'"
SAMPLES = "Theorem 3.1: 'sample size n = Theta(d^{3+c})'"
EMPIRICAL_LOSS = "eq. (3): the gradient of the empirical loss L^ on the n training samples"
WEIGHT_DECAY = "App. A.2: 'lambda_t = lambda for t <= T_22', lambda = r lambda_0 with lambda_0 > 0"
WEIGHT_DECAY_OFF = "App. A.2: 'lambda_t = 0 for t > T_22'"
ORDER2_LEADS = ("Section 5.2, Stage 1.2: 'the 2nd-order Hermite term becomes the leading source of movement' (eq. 6 "
                "keeps the orders 0 and 2 only)")


def premise(counterfactual: Counterfactual, source: str, *, holds: bool = False, why: str = "") -> Premise:
    """``counterfactual`` (its name, runs and reason, or ``why``) as the ablation of the premise ``source``;
    ``holds``: measured, the claim still passes there (say the numbers in ``why``)."""
    return Premise(counterfactual.name, counterfactual.change, why or counterfactual.why, source=source, holds=holds)
