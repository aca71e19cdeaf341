"""MkDocs hook: the configuration reference, generated from the pydantic models and the registries.

A page holding the line ``<!-- config-reference -->`` gets, in its place, one table per config section
(``RunConfig``'s fields) and one per registered kind of dataset, initialization and training method
(each kind's parameter model), plus the losses, activations and observables with their docstrings.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

MARKER = "<!-- config-reference -->"
LEDGER_MARKER = re.compile(r"<!-- ledger: ([a-z0-9_]+) -->")
REFERENCES = Path(__file__).resolve().parents[2] / "benchmarks" / "reference"


def _type(annotation) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    return text.replace("typing.", "").replace("|", "\\|")


def _default(field) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    return f"`{value!r}`".replace("|", "\\|")


def _first_line(doc) -> str:
    return " ".join((inspect.cleandoc(doc or "").split("\n\n")[0]).split()).replace("|", "\\|")


def _model_table(model) -> list[str]:
    rows = ["| field | type | default | meaning |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        rows.append(f"| `{name}` | {_type(field.annotation)} | {_default(field)} | "
                    f"{(field.description or '').replace('|', chr(92) + '|')} |")
    return rows


def _registry_section(title: str, registry, key: str) -> list[str]:
    out = [f"## `{key}`: {title}", ""]
    for name in registry.names():
        entry = registry.get(name)
        out += [f"### `{key}: {name}`", "", _first_line(getattr(entry, "doc", "") or getattr(entry, "__doc__", "")), ""]
        params = getattr(entry, "params", None)
        if params is not None and getattr(params, "model_fields", None):
            out += [*_model_table(params), ""]
    return out


def reference() -> str:
    from twolayer.activations import ACTIVATIONS
    from twolayer.config import RunConfig
    from twolayer.data import DATASETS
    from twolayer.init import INITS
    from twolayer.losses import LOSSES
    from twolayer.observe import OBSERVABLES
    from twolayer.train import METHODS

    out = ["## The sections of a run config", ""]
    out += [*_model_table(RunConfig), ""]
    out += _registry_section("datasets", DATASETS, "data.kind")
    out += _registry_section("initializations", INITS, "init.kind")
    out += _registry_section("training methods", METHODS, "train.method")
    out += ["## `loss.kind`: losses", "", "| loss | what it is |", "|---|---|"]
    out += [f"| `{n}` | {_first_line(LOSSES.get(n).doc)} |" for n in LOSSES.names()]
    out += ["", "## `model.activation`: activations", "", "| activation | what it is |", "|---|---|"]
    out += [f"| `{n}` | {_first_line(ACTIVATIONS.get(n).__doc__)} |" for n in ACTIVATIONS.names()]
    out += ["", "## `observe.metrics`: observables", "", "| observable | what it measures |", "|---|---|"]
    out += [f"| `{n}` | {_first_line(OBSERVABLES.get(n).doc)} |" for n in OBSERVABLES.names()]
    return "\n".join(out) + "\n"


def paper_ledger(paper: str) -> str:
    """The ledger of a paper's claims (``twolayer.claims.LEDGER``): kinds, falsifiers and tolerance sources from
    the registered claims, slacks and outcomes from the committed paper-scale reference."""
    from twolayer.claims import LEDGER, Claim, claim_records, experiments, ledger_categories

    path = REFERENCES / f"{paper}-paper" / "claims.json"
    stored = {c["id"]: c for c in claim_records(json.loads(path.read_text()))} if path.is_file() else {}
    by_category: dict[str, list[str]] = {}
    for exp in experiments():
        if exp.paper != paper:
            continue
        for spec in exp.claims:
            cid = f"{exp.id}:{spec.id}"
            ref = stored.get(cid, {})
            record = Claim(cid, exp.id, spec.statement, spec.kind, None, None, None, ref.get("slack"),
                           bool(ref.get("passed")), [{"name": f.name, "kind": f.kind} for f in spec.falsifiers],
                           tolerance_source=spec.tolerance_source)
            for category in ledger_categories(record):
                by_category.setdefault(category, []).append(cid.split("/", 1)[1])
    rows = ["| category | claims | which |", "|---|---|---|"]
    rows += [f"| {category}: {LEDGER[category]} | {len(by_category[category])} | "
             f"{', '.join(f'`{c}`' for c in by_category[category])} |" for category in LEDGER if category in by_category]
    source = f"the paper-scale reference `benchmarks/reference/{paper}-paper/`" if stored else "no reference yet"
    return (f"What each green is worth ({source}; premise ablations are recorded by `reproduce`):\n\n"
            + "\n".join(rows) + "\n")


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (the MkDocs hook signature)
    markdown = markdown.replace(MARKER, reference()) if MARKER in markdown else markdown
    return LEDGER_MARKER.sub(lambda m: paper_ledger(m.group(1)), markdown)
