"""Lyu, Li, Wang & Arora (NeurIPS 2021), "Gradient descent on two-layer nets: margin maximization and
simplicity bias": every experiment of spec_001 (papers/), one module each.

Setting (``_shared``): f(x) = sum_k a_k phi(w_k . x) (the ``two_layer`` net, v = a), Leaky ReLU slope
alpha = 0.2 [DEFAULT, A3], mean logistic loss, balanced small initialization, gradient flow followed into
the late phase by ``flow_log`` (clock tau = ln(1 + t)) and plain GD (t = lr k) for the Phase-I timing.

- ``symmetric`` (E1; Thm 4.2/4.3): symmetric data -> the global-max-margin linear classifier.
- ``phase1`` (E2, E3): t_fit slope 1/lambda, the Phase-I closed form, the alignment time.
- ``phase2`` (Theorem E.4): the time-shifted two-neuron trajectory from r theta_hat converges as r -> 0.
- ``sign_groups`` (E4, E5; Cor. 4.4, Thm 5.5): same-sign limit, success iff both groups, 1 - 2^-(m-1),
  the Gaussian-init group rule (E4.3), the two-neuron limit.
- ``hinted`` (E6; Thm 6.2, Definition 6.1 [RECON], Figure 1 right).
- ``kkt_directions`` (E7, Figure 1 left): KKT directions found by ``theory.kkt.kkt_search``; flow from them.
- ``kkt_symmetric`` (Figure 1 left on symmetric data): the face census of ``kkt_faces`` (kinks included, exact LP
  verification) finds a nonlinear KKT point; the flow from it leaves it.
- ``embedding`` (Lemma 5.3): the pi_b embedding commutes with gradient flow.
- ``local_convergence`` (Theorem 5.6): back to a local-max-margin direction from a perturbed late-phase start.
- ``loss_convergence`` (Theorem B.19 [RECON condition]): one initially good neuron gives L -> 0.
- ``nonsymmetric_general`` (Theorem A.7 [RECON]): data meeting A.2-A.5 -> one positive neuron along w^+.
- ``nonsymmetric`` (assumption broken): Theorems 4.2/4.3 on non-symmetric data.
- ``sigma_limit`` (Theorem 4.3's sigma -> 0): the margin ratio's deficit at four init scales, two datasets, two slopes.
- ``orthogonal`` (App. H): orthogonally separable data, ReLU: one KKT margin class, reached by training.
- ``late_phase`` (E8): the smoothed margin in every run above (registered last).

The paper itself is registered by ``_shared`` (imported by every module). Claims on reconstructed
definitions ([RECON]: Definition 6.1, gamma^+, the constants of gamma_max and lambda [DERIVED]) say so in
their ``details``.
"""

# each module registers its experiments; late_phase last (its runs are those of the others)
from twolayer.papers.lyu2021 import symmetric
from twolayer.papers.lyu2021 import phase1
from twolayer.papers.lyu2021 import phase2
from twolayer.papers.lyu2021 import sign_groups
from twolayer.papers.lyu2021 import hinted
from twolayer.papers.lyu2021 import kkt_directions
from twolayer.papers.lyu2021 import kkt_symmetric
from twolayer.papers.lyu2021 import embedding
from twolayer.papers.lyu2021 import local_convergence
from twolayer.papers.lyu2021 import loss_convergence
from twolayer.papers.lyu2021 import nonsymmetric_general
from twolayer.papers.lyu2021 import nonsymmetric
from twolayer.papers.lyu2021 import sigma_limit
from twolayer.papers.lyu2021 import orthogonal
from twolayer.papers.lyu2021 import late_phase
from twolayer.papers.lyu2021.sign_groups import sign_groups_configs
from twolayer.papers.lyu2021.symmetric import symmetric_configs

__all__ = ["embedding", "hinted", "kkt_directions", "kkt_symmetric", "late_phase", "local_convergence", "loss_convergence", "nonsymmetric",
           "nonsymmetric_general", "orthogonal", "phase1", "phase2", "sigma_limit", "sign_groups", "sign_groups_configs", "symmetric",
           "symmetric_configs"]
