"""Validated run configuration (the public contract of DESIGN.md's config file).

``load_config`` accepts a YAML path, a dict or a ``RunConfig`` plus ``--set``-style overrides,
validates everything on load and raises ``ConfigError`` whose lines each name the field path and
what is allowed, e.g. ``model.activation: 'relu2' is not one of relu, leaky_relu, abs, ...``.
Registries (datasets, inits, observables, ...) decide what is allowed, so extensions need no edit
here.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_serializer, model_validator

from twolayer.activations import activation_spec, make_activation
from twolayer.data import DATASETS, DataParams
from twolayer.errors import ConfigError
from twolayer.fields import StrictNumbers, field_errors
from twolayer.fileio import canonical_sha256, check_yaml_size, load_yaml, plain_data, read_yaml_file
from twolayer.init import INITS, InitParams
from twolayer.limits import MAX_POINTS, MAX_SEED, MAX_SEEDS, point_count
from twolayer.losses import LOSSES
from twolayer.nets import NETS
from twolayer.observe import OBSERVABLES
from twolayer.problem import OBJECTIVES
from twolayer.train import METHODS, MethodParams
from twolayer.registry import UnknownNameError

DEFAULT_WIDTH = 50
# smallest normal number of each precision: initial weights below it are flushed to zero
SMALLEST_NORMAL = {"float32": 1.1754944e-38, "float64": 2.2250738585072014e-308}
UNDERFLOW_MARGIN = 1e3  # init.scale must be this far above it (so a N(0, scale^2) draw stays normal)


class Section(StrictNumbers):
    """Base of the run config's sections: strict numbers, unknown keys refused, frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _registered(registry, value):
    try:
        registry.get(value)
    except UnknownNameError as e:
        raise ValueError(str(e)) from None
    return value


def _by_kind(registry, value, base: type[BaseModel], context=None):
    """Validate a ``{kind: ..., **params}`` section with the parameter model its kind registered."""
    if isinstance(value, base):
        return value
    if isinstance(value, str):
        value = {"kind": value}
    if not isinstance(value, dict) or "kind" not in value:
        raise ValueError(f"needs a mapping with 'kind' (one of {', '.join(registry.names())})")
    entry = registry.get(value["kind"]) if value["kind"] in registry else None
    if entry is None:
        raise ValueError(f"kind {value['kind']!r} is not one of {', '.join(registry.names())}")
    return entry.params.model_validate(value, context=context)


def check_seeds(v):
    """``seeds``: a positive count (at most ``MAX_SEEDS``) or a non-empty list of distinct seeds in
    [0, 2^63)."""
    if isinstance(v, int) and not 1 <= v <= MAX_SEEDS:
        raise ValueError(f"must be a positive count of at most {MAX_SEEDS:.0e} seeds, or a list of seeds" if v >= 1
                         else "must be a positive count or a list of seeds")
    if isinstance(v, list) and (not v or len(set(v)) != len(v) or min(v) < 0):
        raise ValueError("must be a non-empty list of distinct seeds >= 0")
    if isinstance(v, list) and max(v) > MAX_SEED:
        raise ValueError(f"{max(v)} is too large: seeds are integers from 0 to 2^63 - 1")
    if isinstance(v, list) and len(v) > MAX_SEEDS:
        raise ValueError(f"lists {len(v)} seeds; at most {MAX_SEEDS:.0e}")
    return v


class ModelConfig(Section):
    """``model``: the net ``kind`` (``twolayer.nets.NETS``), its ``activation`` (a name or ``{name, **params}``)
    and its ``width`` (default 50; implied by an init file).
    """

    kind: str = "two_layer"
    activation: str | dict[str, Any] = "relu"
    width: int | None = Field(default=None, gt=0)  # default 50; implied by init.kind file

    _kind = field_validator("kind")(classmethod(lambda cls, v: _registered(NETS, v)))

    @field_validator("activation")
    @classmethod
    def _activation(cls, v):
        return activation_spec(v)


class LossConfig(Section):
    """``loss``: the loss ``kind`` (``twolayer.losses.LOSSES``) and its ``reduction`` (sum or mean over samples)."""

    kind: str = "exponential"
    reduction: Literal["sum", "mean"] = "mean"

    _kind = field_validator("kind")(classmethod(lambda cls, v: _registered(LOSSES, v)))


class SparseConfig(Section):
    """``observe.sparse: {metrics: [...], every: k}``: evaluate these of the ``observe.metrics`` only at
    every k-th observation point (indices 0, k, 2k, ...) and at the last one; in between their recorded
    values are NaN. For observables that cost much more than a step (Monte Carlo estimates, losses on a
    large sample) on long schedules."""

    metrics: list[str] = Field(min_length=1)
    every: int = Field(ge=1)

    def points(self, count: int) -> set[int]:
        """The indices (of ``count`` observation points) at which the sparse metrics are evaluated."""
        return {*range(0, count, self.every), count - 1} if count else set()


class ObserveConfig(Section):
    """``observe``: when to record (``schedule`` log with ``points``, ``every``, or ``at``) and what (``metrics``,
    registered observables).
    """

    schedule: Literal["log", "every", "at"] = "log"
    points: int = Field(default=200, ge=2, le=MAX_POINTS)
    every: float | None = Field(default=None, gt=0)
    at: list[float] | None = None
    metrics: list[str] = ["loss", "accuracy"]
    sparse: SparseConfig | None = None  # left out of the resolved config (and its hash) when unset

    @model_serializer(mode="wrap")
    def _drop_unset_sparse(self, handler):
        out = handler(self)
        if isinstance(out, dict) and out.get("sparse") is None:
            out.pop("sparse", None)
        return out

    @property
    def dense_metrics(self) -> list[str]:
        """The metrics evaluated at every observation point (all but ``sparse.metrics``)."""
        skip = set(self.sparse.metrics) if self.sparse else set()
        return [m for m in self.metrics if m not in skip]

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, v):
        for name in v:
            _registered(OBSERVABLES, name)
        if len(set(v)) != len(v):
            raise ValueError("lists a metric twice")
        return v

    @model_validator(mode="after")
    def _schedule_params(self):
        errors = []
        if self.schedule == "every" and self.every is None:
            errors.append(("every", "is required by schedule 'every' (steps, or time for flow)"))
        if self.schedule == "at" and not self.at:
            errors.append(("at", "is required by schedule 'at': a non-empty list of steps (times for flow)"))
        if self.at is not None and any(a < 0 for a in self.at):
            errors.append(("at", "entries must be >= 0"))
        extra = [m for m in self.sparse.metrics if m not in self.metrics] if self.sparse is not None else []
        if extra:
            errors.append(("sparse.metrics", f"{extra} not in observe.metrics (sparse names which of the observed "
                                             f"metrics are evaluated only every sparse.every points)"))
        if errors:
            raise field_errors(type(self).__name__, errors)
        return self


class MlflowConfig(Section):
    """``mlflow: {uri: ..., experiment: ...}``: log the run to MLflow (``twolayer.tracking``). Tracking
    does not change the simulation, so it is left out of the resolved config and of its hash."""

    uri: str = Field(min_length=1)
    experiment: str = Field(default="twolayer", min_length=1)


class RunConfig(Section):
    """A fully validated run configuration; ``resolved()`` is what gets stored and hashed."""

    name: str = Field(default="run", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$", max_length=80)
    seed: int | None = Field(default=None, ge=0, le=MAX_SEED)
    seeds: int | list[int] | None = None
    data: Any
    model: ModelConfig = ModelConfig()
    init: Any = Field(default={"kind": "gaussian"}, validate_default=True)
    loss: LossConfig = LossConfig()
    objective: str = "empirical"  # a registered objective (twolayer.problem.OBJECTIVES)
    train: Any = Field(default={"method": "gd", "lr": 1e-3, "steps": 1000}, validate_default=True)
    observe: ObserveConfig = ObserveConfig()
    precision: Literal["float64", "float32"] = "float64"
    mlflow: MlflowConfig | None = Field(default=None, exclude=True)  # tracking only: not stored, not hashed

    @field_validator("data", mode="before")
    @classmethod
    def _data(cls, v, info):
        return _by_kind(DATASETS, v, DataParams, info.context)

    @field_validator("init", mode="before")
    @classmethod
    def _init(cls, v, info):
        return _by_kind(INITS, v, InitParams, info.context)

    @field_validator("train", mode="before")
    @classmethod
    def _train(cls, v):
        """The ``train`` section, validated by the parameter model of its ``method`` (gd by default)."""
        if isinstance(v, MethodParams):
            return v
        if not isinstance(v, dict):
            raise ValueError(f"needs a mapping with 'method' (one of {', '.join(METHODS.names())})")
        v = {"method": "gd", **v}
        if v["method"] not in METHODS:
            raise field_errors("RunConfig", [("method", f"{v['method']!r} is not one of {', '.join(METHODS.names())}")])
        return METHODS.get(v["method"]).params.model_validate(v)

    @field_validator("objective")
    @classmethod
    def _objective(cls, v):
        return _registered(OBJECTIVES, v)

    _seeds = field_validator("seeds")(classmethod(lambda cls, v: check_seeds(v)))

    @model_validator(mode="after")
    def _cross_checks(self):
        errors: list[tuple[str, str]] = []
        if self.seed is not None and self.seeds is not None:
            errors.append(("seeds", "give either seed or seeds, not both"))
        if (self.data.kind in DATASETS and OBJECTIVES.get(self.objective).population
                and not DATASETS.get(self.data.kind).population):
            with_pop = [k for k, e in DATASETS.items() if e.population] or ["none registered yet"]
            errors.append(("objective", f"{self.objective!r} needs a Gaussian-input data.kind ({', '.join(with_pop)}); "
                                        f"{self.data.kind!r} has no population form"))
        errors += _population_errors(self) + _underflow_errors(self)
        method = self.train.entry
        if not method.supports(self.model.kind):
            errors.append(("train.method", f"{method.name!r} does not apply to model.kind {self.model.kind!r} "
                                           f"(it applies to {', '.join(method.nets)})"))
        objective = OBJECTIVES.get(self.objective)
        if not objective.supports(self.model.kind):
            errors.append(("objective", f"{self.objective!r} does not apply to model.kind {self.model.kind!r} "
                                        f"(it applies to {', '.join(objective.nets)})"))
        init_kind = INITS.get(self.init.kind)
        if not init_kind.supports(self.model.kind):
            errors.append(("init.kind", f"{self.init.kind!r} does not apply to model.kind {self.model.kind!r} "
                                        f"(it applies to {', '.join(init_kind.nets)})"))
        arrays = self.init.fixed()
        if arrays is not None:
            W = arrays["W"]
            src = self.init.field_of("W")
            width = W.shape[-2] if W.ndim in (2, 3) else None
            if width is None:
                errors.append((src, f"W has shape {W.shape}; need [h, d] or [seeds, h, d]"))
            elif self.model.width is not None and self.model.width != width:
                errors.append(("model.width", f"is {self.model.width} but {src} holds {width} neurons"))
            if W.ndim == 3 and W.shape[0] != len(self.seed_list()):
                errors.append((src, f"W holds {W.shape[0]} seeds, the config runs {len(self.seed_list())}"))
            if "v" in NETS.get(self.model.kind).param_names and ("v" not in arrays or arrays["v"].shape != W.shape[:-1]):
                errors.append((self.init.field_of("v"), f"{self.model.kind} needs v with shape {list(W.shape[:-1])}"))
        errors += _schedule_errors(self)
        if method.config_errors is not None:  # cross-section checks a method declares
            errors += method.config_errors(self)
        for name in self.observe.metrics:
            obs = OBSERVABLES.get(name)
            if not obs.supports(self.model.kind):
                errors.append(("observe.metrics", f"{name!r} is defined for model.kind {', '.join(obs.nets)}, "
                                                  f"not {self.model.kind!r}"))
        if errors:
            raise field_errors(type(self).__name__, errors)
        return self

    def seed_count(self) -> int:
        """How many seeds the config runs (without listing them)."""
        if self.seeds is None:
            return 1
        return self.seeds if isinstance(self.seeds, int) else len(self.seeds)

    def seed_list(self) -> list[int]:
        if self.seeds is None:
            return [0 if self.seed is None else self.seed]
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)

    @property
    def batched(self) -> bool:
        """True when the config asks for ``seeds`` (trajectories then carry a leading seed axis)."""
        return self.seeds is not None

    def width(self) -> int:
        arrays = self.init.fixed()
        if arrays is not None:
            return int(arrays["W"].shape[-2])
        return DEFAULT_WIDTH if self.model.width is None else int(self.model.width)

    def resolved(self) -> dict:
        """The config with every default filled in, as plain YAML/JSON data."""
        out = self.model_dump(mode="json")
        out["data"] = self.data.model_dump(mode="json")
        out["init"] = self.init.model_dump(mode="json")
        out["train"] = self.train.resolved()
        out["model"]["width"] = self.width()
        return out

    def config_hash(self) -> str:
        """sha256 of the canonical JSON of the resolved config (first 8 hex digits name the run)."""
        return canonical_sha256(self.resolved())


def _population_errors(cfg: RunConfig) -> list[tuple[str, str]]:
    """A population objective integrates the target exactly: its activation must be the model's."""
    target = getattr(cfg.data, "activation", None)
    if "target_coefs" not in OBJECTIVES.get(cfg.objective).needs or target is None:
        return []
    try:
        same = make_activation(target) == make_activation(cfg.model.activation)
    except (UnknownNameError, ValueError, TypeError):
        return []  # the data section reports its own bad activation
    if same:
        return []
    return [("data.activation", f"is {target!r} but model.activation is {cfg.model.activation!r}: objective "
                                f"{cfg.objective!r} needs the target's activation to be the model's")]


def _underflow_errors(cfg: RunConfig) -> list[tuple[str, str]]:
    """``init.scale`` so small that the initial weights are subnormal or zero in the chosen precision."""
    scale = getattr(cfg.init, "scale", None)
    tiny = SMALLEST_NORMAL[cfg.precision]
    if scale is None or scale >= UNDERFLOW_MARGIN * tiny:
        return []
    return [("init.scale", f"{scale:g} underflows {cfg.precision}: weights below its smallest normal number {tiny:.2g} "
                           f"are flushed to zero; use init.scale >= {UNDERFLOW_MARGIN * tiny:.2g}"
                           + (" or precision: float64" if cfg.precision == "float32" else ""))]


def _schedule_errors(cfg: RunConfig) -> list[tuple[str, str]]:
    """Observation points must be whole steps for GD/SGD, must not lie past the end, and must number
    at most ``MAX_POINTS``."""
    continuous = cfg.train.entry.continuous
    end = cfg.train.end
    unit = "train.time" if continuous else "train.steps"
    errors = []
    if end is not None:
        obs = cfg.observe
        count = point_count(obs.schedule, obs.points, obs.every, obs.at, float(end), continuous)
        if count > MAX_POINTS:
            field = {"every": "observe.every", "at": "observe.at"}.get(obs.schedule, "observe.points")
            errors.append((field, f"gives {count:.4g} observation points; at most {MAX_POINTS:.0e} (every point is kept "
                                  f"in the trajectory: observe fewer points)"))
            return errors
    if cfg.observe.every is not None and not continuous and cfg.observe.every != int(cfg.observe.every):
        errors.append(("observe.every", f"must be a whole number of steps for method {cfg.train.method}"))
    for a in cfg.observe.at or []:
        if not continuous and a != int(a):
            errors.append(("observe.at", f"{a} is not a whole number of steps (method {cfg.train.method})"))
        elif end is not None and a > end:
            errors.append(("observe.at", f"{a:g} is past the end of the run ({unit} = {end:g})"))
    return errors


def set_dotted(raw: dict, key: str, value) -> None:
    """``set_dotted(cfg, "train.lr", 0.01)``; intermediate mappings are created."""
    parts = key.split(".")
    node = raw
    for part in parts[:-1]:
        nxt = node.get(part)
        if isinstance(nxt, str) and part in ("data", "init"):
            nxt = {"kind": nxt}
        if not isinstance(nxt, dict):
            nxt = {} if nxt is None else nxt
            if not isinstance(nxt, dict):
                raise ConfigError([(key, f"cannot set inside {part!r}, which is {nxt!r}")])
        node[part] = nxt
        node = nxt
    node[parts[-1]] = value


def parse_override(text: str) -> tuple[str, Any]:
    """``"train.lr=0.01"`` -> ``("train.lr", 0.01)``; the value is parsed as YAML."""
    if "=" not in text:
        raise ConfigError([("--set", f"{text!r} is not key=value")])
    key, value = text.split("=", 1)
    if not key.strip():
        raise ConfigError([("--set", f"{text!r} has an empty key")])
    try:
        parsed = load_yaml(value)
        check_yaml_size(parsed)
    except yaml.YAMLError as e:
        reason = " ".join(str(getattr(e, "problem", None) or e).split())
        raise ConfigError([(f"--set {key.strip()}", f"{value!r} is not a valid YAML value ({reason})")]) from None
    except ValueError as e:
        raise ConfigError([(f"--set {key.strip()}", str(e))]) from None
    return key.strip(), parsed


def override_items(overrides: list[str] | dict | None) -> list[tuple[str, Any]]:
    """``(dotted key, value)`` of each override: ``--set``-style strings (``parse_override``) or a mapping;
    ``ConfigError`` naming ``overrides`` when they are neither (a bare string, a list of numbers...)."""
    if overrides is None:
        return []
    if isinstance(overrides, dict):
        bad = [k for k in overrides if not isinstance(k, str) or not k.strip()]
        if bad:
            raise ConfigError([("overrides", f"key {bad[0]!r} is not a dotted config key such as 'train.lr'")])
        return list(overrides.items())
    if not isinstance(overrides, list | tuple):
        hint = f" (write [{overrides!r}])" if isinstance(overrides, str) else ""
        raise ConfigError([("overrides", f"must be a list of 'key=value' strings or a mapping {{key: value}}, not "
                                         f"{type(overrides).__name__} {overrides!r}{hint}")])
    bad = [o for o in overrides if not isinstance(o, str)]
    if bad:
        raise ConfigError([("overrides", f"{bad[0]!r} is not a 'key=value' string (a list of overrides holds "
                                         f"strings such as 'train.lr=0.01'; or pass a mapping {{key: value}})")])
    return [parse_override(o) for o in overrides]


def _plain_copy(data, field: str):
    """A deep copy of ``data`` in plain types (NumPy arrays as lists: ``fileio.plain_data``), once
    ``check_yaml_size`` passes; ``ConfigError`` naming ``field`` otherwise."""
    try:
        check_yaml_size(data)
    except ValueError as e:
        raise ConfigError([(field, str(e))]) from None
    return plain_data(data)


# the tags pydantic puts into an error's location for the member of a union (``list[list[float]]``, ``int``)
_TYPE_TAGS = {"int", "float", "str", "bool", "none", "bytes", "list", "tuple", "dict", "set"}


def _is_tag(part) -> bool:
    return isinstance(part, str) and (part.startswith("function-") or "[" in part or part in _TYPE_TAGS)


def _format_loc(loc: tuple) -> str:
    return ".".join(str(p) for p in loc if not _is_tag(p))


def closest_errors(errors: list[dict]) -> list[dict]:
    """Pydantic's errors, where a value matched no member of a union (``init.W``: [h, d] or [seeds, h,
    d]) only those of the members that came closest: whose first error lies deepest inside the value
    (a member that refuses the value as a whole came least close), then with the fewest errors."""
    scores: dict[tuple, tuple[int, int]] = {}  # (union location, member tag) -> (depth of the shallowest error, -errors)
    for err in errors:
        for i, part in enumerate(err["loc"]):
            if _is_tag(part):
                depth, count = scores.get((err["loc"][:i], part), (len(err["loc"]), 0))
                scores[(err["loc"][:i], part)] = (min(depth, len(err["loc"]) - i - 1), count - 1)
    best: dict[tuple, tuple[int, int]] = {}
    for (where, _), score in scores.items():
        best[where] = max(best.get(where, score), score)
    return [err for err in errors
            if all(scores[(err["loc"][:i], p)] == best[err["loc"][:i]] for i, p in enumerate(err["loc"]) if _is_tag(p))]


def load_config(source: str | Path | dict | RunConfig, overrides: list[str] | dict | None = None) -> RunConfig:
    """Read and validate a run config.

    Arguments:
        source: a YAML path (relative file paths in it are taken from its folder), a dict or a ``RunConfig``.
        overrides: ``--set``-style ``["train.lr=0.01"]`` (values parsed as YAML) or ``{"train.lr": 0.01}``.

    Returns:
        The validated ``RunConfig``; ``ConfigError`` lists every problem with its field path.
    """
    base_dir = None
    if isinstance(source, RunConfig):
        if not overrides:
            return source
        tracking = source.mlflow
        source = source.resolved() | ({"mlflow": tracking.model_dump()} if tracking is not None else {})
    if isinstance(source, str | Path):
        try:
            raw, base_dir = read_yaml_file(source)
        except ValueError as e:
            raise ConfigError([("config", str(e))]) from None
    else:
        raw = source
    if not isinstance(raw, dict):
        raise ConfigError([("config", f"must be a mapping of sections, got {type(raw).__name__}")])
    raw = _plain_copy(raw, "config")  # NumPy arrays as lists
    for key, value in override_items(overrides):
        set_dotted(raw, key, _plain_copy(value, key))
    if "data" not in raw:
        raise ConfigError([("data", "is required (a mapping with kind: one of " + ", ".join(DATASETS.names()) + ")")])
    try:
        return RunConfig.model_validate(raw, context={"base_dir": base_dir})
    except ValidationError as e:
        raise ConfigError(list(dict.fromkeys(error_entry(err, field_names(raw, err["loc"]))
                                             for err in closest_errors(e.errors())))) from None


def field_names(raw: dict, loc: tuple) -> list[str]:
    """The fields of the config section that holds the field at ``loc`` (for suggesting a misspelt one):
    the run config's sections at the top, a kind's parameters under data, init and train, a section's
    fields under model, loss, observe; [] where it cannot tell."""
    path = [p for p in loc[:-1] if not _is_tag(p)]
    if not path:
        return list(RunConfig.model_fields)
    if len(path) > 1 or not isinstance(raw, dict) or not isinstance(raw.get(path[0]), dict):
        return []
    section = raw[path[0]]
    by_kind = {"data": (DATASETS, "kind", None), "init": (INITS, "kind", "gaussian"), "train": (METHODS, "method", "gd")}
    if path[0] in by_kind:
        registry, key, default = by_kind[path[0]]
        name = section.get(key, default)
        return list(registry.get(name).params.model_fields) if isinstance(name, str) and name in registry else []
    model = getattr(RunConfig.model_fields.get(path[0]), "annotation", None)
    return list(getattr(model, "model_fields", None) or [])


def error_entry(err: dict, known: Sequence[str] = ()) -> tuple[str, str]:
    """``(field path, message)`` of one pydantic error, in the words of ``ConfigError``; an unknown field
    gets the closest of the ``known`` field names as a suggestion."""
    loc = _format_loc(err["loc"]) or "config"
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        name = loc.rsplit(".", 1)[-1]
        close = difflib.get_close_matches(name, [k for k in known if k != name], n=1, cutoff=0.6)
        msg = f"unknown field {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
    elif err["type"] == "finite_number":
        msg = f"must be a finite number, not {err.get('input')!r}"
    elif err["type"] == "literal_error" and "input" in err:
        msg = f"{err['input']!r} is not allowed: {msg.replace('Input should be ', 'expected ')}"
    return loc, msg
