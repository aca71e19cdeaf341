"""Method ``online_sgd``: one-pass SGD on the teacher-student data, a fresh sample at every step.

Step k draws B inputs x = s * z, z ~ N(0, I_d) (``input_scale`` s: all ones for isotropic inputs) from
``fold_in(fold_in(key, ONLINE_STREAM), k)``, labels them with the teacher of the context,
y = sum_n v*_n g(w*_n . x) + sigma zeta, and takes one step of size ``lr`` on the mean square loss
(1/B) sum_b (1/2)(y_b - f(x_b))^2. In twolayer's parametrization (w = W / sqrt d) the SGD of Goldt et al. (2019,
eq. (3)) with learning rate eta is ``lr = eta / d`` for both layers; so t = lr k = eta k / d is the time of the
population gradient flow, and Goldt's time (samples per dimension) is k / d = t / eta. ``layers: first`` keeps
the second layer fixed (the soft committee machine of Saad & Solla 1995). Since the sample at step k depends on k
alone, a resumed run draws the same samples (resume is bitwise), and seeds are batched by the loop's vmap.
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
from pydantic import Field

from twolayer.train.methods import DiscreteParams, descent_direction, discrete_advance, register_method

ONLINE_STREAM = 29  # folded into the seed's key before the step: a stream apart from the init's fold_in(key, 1)
NEEDS = ("target_dirs", "target_coefs", "input_scale", "label_noise")


class OnlineSGDParams(DiscreteParams):
    """GD's parameters (``lr`` = eta / d, ``steps`` or ``time``) and ``batch_size`` B of fresh samples per step."""

    method: Literal["online_sgd"] = "online_sgd"
    batch_size: int = Field(default=1, gt=0)


def online_config_errors(cfg) -> list[tuple[str, str]]:
    """online_sgd samples the teacher of a ``teacher_student`` dataset and descends the mean square loss; the ODEs
    compare with it only when the student's activation is the teacher's."""
    errors = []
    if cfg.data.kind != "teacher_student":
        errors.append(("data.kind", f"is {cfg.data.kind!r}: method online_sgd draws fresh samples from a teacher "
                                    f"(data.kind teacher_student)"))
    elif cfg.data.activation != cfg.model.activation:
        errors.append(("model.activation", f"is {cfg.model.activation!r} but the teacher's data.activation is "
                                           f"{cfg.data.activation!r}: online_sgd labels samples with the model's "
                                           f"activation, so they must agree"))
    if cfg.loss.kind != "square" or cfg.loss.reduction != "mean":
        errors.append(("loss.kind", f"is {cfg.loss.kind!r} (reduction {cfg.loss.reduction!r}): method online_sgd "
                                    f"descends the mean square loss (loss: {{kind: square, reduction: mean}})"))
    if cfg.objective != "empirical":
        errors.append(("objective", f"is {cfg.objective!r}: method online_sgd samples its own data (objective: "
                                    f"empirical)"))
    return errors


@register_method("online_sgd", OnlineSGDParams, needs=NEEDS, nets=("two_layer",), config_errors=online_config_errors,
                 doc="one-pass SGD on teacher-student data: fresh Gaussian samples every step (lr = eta / d)")
def build_online_sgd(train: OnlineSGDParams, shape):
    """One step: B fresh samples of the context's teacher, one SGD step on their mean square loss."""
    d = shape.X.shape[1]
    size = train.batch_size

    def init_aux(start, key, ctx):
        return jnp.zeros((), dtype=jnp.int32)

    def step(p, k, aux, key, ctx, hyper):
        kx, kn = jax.random.split(jax.random.fold_in(jax.random.fold_in(key, ONLINE_STREAM), k))
        dtype = ctx.X.dtype
        X = jax.random.normal(kx, (size, d), dtype) * ctx.arrays["input_scale"]
        act = ctx.problem.activation
        y = act(X @ ctx.arrays["target_dirs"].T) @ ctx.arrays["target_coefs"]
        y = y + ctx.arrays["label_noise"] * jax.random.normal(kn, (size,), dtype)

        def batch_loss(q):
            return ctx.problem.empirical_loss(q, X, y)

        direction = descent_direction(batch_loss, p, train, hyper, ctx.problem.net)
        return jax.tree_util.tree_map(lambda x, dx: x + hyper["lr"] * dx, p, direction), aux

    return discrete_advance(step, init_aux)
