"""Validated run configuration (the public contract of DESIGN.md's config file).

``load_config`` accepts a YAML path, a dict or a ``RunConfig`` plus ``--set``-style overrides,
validates everything on load and raises ``ConfigError`` whose lines each name the field path and
what is allowed, e.g. ``model.activation: 'relu2' is not one of relu, leaky_relu, abs, ...``.
Registries (datasets, inits, observables, ...) decide what is allowed, so extensions need no edit
here.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel, ConfigDict, Field, ValidationError, field_validator, model_serializer, model_validator,
)
from pydantic_core import PydanticCustomError

from twolayer.activations import make_activation
from twolayer.data import DATASETS, DataParams
from twolayer.files import read_yaml_file
from twolayer.init import INITS, InitParams, fixed_init_arrays
from twolayer.losses import LOSSES
from twolayer.nets import NETS
from twolayer.registry import UnknownNameError


DEFAULT_WIDTH = 50


class ConfigError(ValueError):
    """A config failed validation; ``.errors`` is a list of ``(field path, message)``."""

    def __init__(self, errors: list[tuple[str, str]]):
        self.errors = errors
        super().__init__("invalid config:\n" + "\n".join(f"  {p}: {m}" for p, m in errors))


class Section(BaseModel):
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
    """``seeds``: a positive count or a non-empty list of distinct seeds >= 0."""
    if isinstance(v, int) and v < 1:
        raise ValueError("must be a positive count or a list of seeds")
    if isinstance(v, list) and (not v or len(set(v)) != len(v) or min(v) < 0):
        raise ValueError("must be a non-empty list of distinct seeds >= 0")
    return v


class ModelConfig(Section):
    kind: str = "two_layer"
    activation: str | dict[str, Any] = "relu"
    width: int | None = Field(default=None, gt=0)  # default 50; implied by init.kind file

    _kind = field_validator("kind")(classmethod(lambda cls, v: _registered(NETS, v)))

    @field_validator("activation")
    @classmethod
    def _activation(cls, v):
        try:
            act = make_activation(v)
        except UnknownNameError as e:
            raise ValueError(str(e)) from None
        return act.name if not act.params else {"name": act.name, **dict(act.params)}


class LossConfig(Section):
    kind: str = "exponential"
    reduction: Literal["sum", "mean"] = "mean"

    _kind = field_validator("kind")(classmethod(lambda cls, v: _registered(LOSSES, v)))


class TrainConfig(Section):
    method: str = "gd"
    lr: float | None = Field(default=None, gt=0)
    steps: int | None = Field(default=None, ge=0)
    time: float | None = Field(default=None, ge=0)
    batch_size: int | None = Field(default=None, gt=0)
    layers: Literal["both", "first"] = "both"
    weight_decay: float = Field(default=0.0, ge=0)
    # gradient flow (diffrax)
    solver: Literal["tsit5", "dopri5", "dopri8", "heun"] = "tsit5"
    rtol: float = Field(default=1e-8, gt=0)
    atol: float = Field(default=1e-10, gt=0)
    max_solver_steps: int = Field(default=100_000, gt=0)  # per observation interval
    # late-phase flow (method flow_log) stop rules; left out of the resolved config when unset
    stop_log_loss: float | None = None
    stop_norm_sq: float | None = Field(default=None, gt=0)

    @model_serializer(mode="wrap")
    def _drop_unset_stops(self, handler):
        out = handler(self)
        for key in ("stop_log_loss", "stop_norm_sq"):
            if isinstance(out, dict) and out.get(key) is None:
                out.pop(key, None)
        return out

    @field_validator("method")
    @classmethod
    def _method(cls, v):
        from twolayer.train.methods import METHODS

        return _registered(METHODS, v)

    @model_validator(mode="after")
    def _consistent(self):
        from twolayer.train.methods import METHODS

        METHODS.get(self.method).validate(self)
        return self


class ObserveConfig(Section):
    schedule: Literal["log", "every", "at"] = "log"
    points: int = Field(default=200, ge=2)
    every: float | None = Field(default=None, gt=0)
    at: list[float] | None = None
    metrics: list[str] = ["loss", "accuracy"]

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, v):
        from twolayer.observe import OBSERVABLES

        for name in v:
            _registered(OBSERVABLES, name)
        if len(set(v)) != len(v):
            raise ValueError("lists a metric twice")
        return v

    @model_validator(mode="after")
    def _schedule_params(self):
        if self.schedule == "every" and self.every is None:
            raise ValueError("schedule 'every' needs observe.every (steps, or time for flow)")
        if self.schedule == "at" and not self.at:
            raise ValueError("schedule 'at' needs observe.at, a non-empty list of steps (times for flow)")
        if self.at is not None and any(a < 0 for a in self.at):
            raise ValueError("observe.at: entries must be >= 0")
        return self


class MlflowConfig(Section):
    """``mlflow: {uri: ..., experiment: ...}``: log the run to MLflow (``twolayer.tracking``). Tracking
    does not change the simulation, so it is left out of the resolved config and of its hash."""

    uri: str = Field(min_length=1)
    experiment: str = Field(default="twolayer", min_length=1)


class RunConfig(Section):
    """A fully validated run configuration; ``resolved()`` is what gets stored and hashed."""

    name: str = Field(default="run", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$", max_length=80)
    seed: int | None = Field(default=None, ge=0)
    seeds: int | list[int] | None = None
    data: Any
    model: ModelConfig = ModelConfig()
    init: Any = Field(default={"kind": "gaussian"}, validate_default=True)
    loss: LossConfig = LossConfig()
    objective: str = "empirical"  # a registered objective (twolayer.problem.OBJECTIVES)
    train: TrainConfig = TrainConfig(lr=1e-3, steps=1000)
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

    @field_validator("objective")
    @classmethod
    def _objective(cls, v):
        from twolayer.problem import OBJECTIVES

        return _registered(OBJECTIVES, v)

    _seeds = field_validator("seeds")(classmethod(lambda cls, v: check_seeds(v)))

    @model_validator(mode="after")
    def _cross_checks(self):
        errors: list[tuple[str, str]] = []
        if self.seed is not None and self.seeds is not None:
            errors.append(("seeds", "give either seed or seeds, not both"))
        if (self.data.kind in DATASETS and self.objective.startswith("population")
                and not DATASETS.get(self.data.kind).population):
            with_pop = [k for k, e in DATASETS.items() if e.population] or ["none registered yet"]
            errors.append(("objective", f"{self.objective!r} needs a Gaussian-input data.kind ({', '.join(with_pop)}); "
                                        f"{self.data.kind!r} has no population form"))
        init_kind = INITS.get(self.init.kind)
        if self.model.kind not in init_kind.nets:
            errors.append(("init.kind", f"{self.init.kind!r} does not apply to model.kind {self.model.kind!r} "
                                        f"(it applies to {', '.join(init_kind.nets)})"))
        arrays = fixed_init_arrays(self.init)
        if arrays is not None:
            where = "init.path" if self.init.kind == "file" else "init.W"
            W = arrays["W"]
            width = W.shape[-2] if W.ndim in (2, 3) else None
            if width is None:
                errors.append((where, f"W has shape {W.shape}; need [h, d] or [seeds, h, d]"))
            elif self.model.width is not None and self.model.width != width:
                errors.append(("model.width", f"is {self.model.width} but {where} holds {width} neurons"))
            if W.ndim == 3 and W.shape[0] != len(self.seed_list()):
                errors.append((where, f"W holds {W.shape[0]} seeds, the config runs {len(self.seed_list())}"))
            if self.model.kind == "two_layer" and ("v" not in arrays or arrays["v"].shape != W.shape[:-1]):
                errors.append((where, f"two_layer needs v with shape {W.shape[:-1]}"))
        errors += _schedule_errors(self)
        for name in self.observe.metrics:
            from twolayer.observe import OBSERVABLES

            nets = OBSERVABLES.get(name).nets
            if nets and self.model.kind not in nets:
                errors.append(("observe.metrics", f"{name!r} is defined for model.kind {', '.join(nets)}, "
                                                  f"not {self.model.kind!r}"))
        if errors:
            raise field_errors(type(self).__name__, errors)
        return self

    def seed_list(self) -> list[int]:
        if self.seeds is None:
            return [0 if self.seed is None else self.seed]
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)

    @property
    def batched(self) -> bool:
        """True when the config asks for ``seeds`` (trajectories then carry a leading seed axis)."""
        return self.seeds is not None

    def width(self) -> int:
        arrays = fixed_init_arrays(self.init)
        if arrays is not None:
            return int(arrays["W"].shape[-2])
        return DEFAULT_WIDTH if self.model.width is None else int(self.model.width)

    def resolved(self) -> dict:
        """The config with every default filled in, as plain YAML/JSON data."""
        out = self.model_dump(mode="json")
        out["data"] = self.data.model_dump(mode="json")
        out["init"] = self.init.model_dump(mode="json")
        out["model"]["width"] = self.width()
        return out

    def config_hash(self) -> str:
        """sha256 of the canonical JSON of the resolved config (first 8 hex digits name the run)."""
        canonical = json.dumps(self.resolved(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


def _schedule_errors(cfg: RunConfig) -> list[tuple[str, str]]:
    """Observation points must be whole steps for GD/SGD and must not lie past the end."""
    from twolayer.train.methods import METHODS

    continuous = METHODS.get(cfg.train.method).continuous
    end = cfg.train.time if continuous else cfg.train.steps
    unit = "train.time" if continuous else "train.steps"
    errors = []
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
    return key.strip(), yaml.safe_load(value)


def _format_loc(loc: tuple) -> str:
    return ".".join(str(p) for p in loc if not (isinstance(p, str) and p.startswith("function-")))


def load_config(source: str | Path | dict | RunConfig, overrides: list[str] | dict | None = None) -> RunConfig:
    """Read and validate a config from a YAML path, a dict or a RunConfig, applying overrides."""
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
    raw = json.loads(json.dumps(raw, default=str))  # deep copy, plain types
    items = overrides.items() if isinstance(overrides, dict) else map(parse_override, overrides or [])
    for key, value in items:
        set_dotted(raw, key, value)
    if "data" not in raw:
        raise ConfigError([("data", "is required (a mapping with kind: one of " + ", ".join(DATASETS.names()) + ")")])
    try:
        return RunConfig.model_validate(raw, context={"base_dir": base_dir})
    except ValidationError as e:
        raise ConfigError([_error_entry(err) for err in e.errors()]) from None


def _error_entry(err: dict) -> tuple[str, str]:
    loc = _format_loc(err["loc"]) or "config"
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = f"unknown field {loc.rsplit('.', 1)[-1]!r}"
    elif err["type"] == "literal_error" and "input" in err:
        msg = f"{err['input']!r} is not allowed: {msg.replace('Input should be ', 'expected ')}"
    return loc, msg


def field_errors(title: str, errors: list[tuple[str, str]]) -> ValidationError:
    """A ValidationError whose entries carry their own field paths (for cross-field checks)."""
    details = [
        {"type": PydanticCustomError("config", "{message}", {"message": msg}), "loc": tuple(path.split(".")), "input": None}
        for path, msg in errors
    ]
    return ValidationError.from_exception_data(title, details)


def math_steps(time: float, lr: float) -> int:
    """Number of steps of size lr that reach time (t = lr * k), robust to round-off."""
    return int(math.ceil(time / lr - 1e-9))
