"""The explorer's pages for an output folder (one per experiment, per sweep and per other run, and an index),
for one sweep's folder or for one run; see the package docstring."""

from __future__ import annotations

import json
from pathlib import Path

from twolayer.claims_file import claim_records
from twolayer.explore.data import run_payload, sweep_payload
from twolayer.explore.order_parameters import write_order_parameter_page
from twolayer.explore.page import render_index, render_page, write_page, write_plotly
from twolayer.fileio import check_writable_folder
from twolayer.store import CONFIG, DEFAULT_OUT, FINISHED, RunStore
from twolayer.stored import StoredRun
from twolayer.table import RESULTS, SWEEP_FILE, short, sweep_points

EXPLORE_DIR = "explore"
INDEX = "index.html"


def page_name(exp_id: str) -> str:
    """The page of an experiment ``paper/name``: ``paper-name.html``."""
    return exp_id.replace("/", "-") + ".html"


def _not_shown(path: Path) -> str:
    """Why a run has no plots on its page: unfinished, or it does not verify ("" when it is shown)."""
    state = RunStore.stored_state(path)
    if state.problem:
        return state.problem
    return "" if (state.summary or {}).get("status") in FINISHED else "not finished"


def _payloads(runs: list[tuple[str, Path]]) -> tuple[list[dict], list[str]]:
    payloads, skipped = [], []
    for key, path in runs:
        why = _not_shown(path)
        if why:
            skipped.append(f"{key} ({path.name}: {why})")
        else:
            payloads.append(run_payload(StoredRun(path), key))
    return payloads, skipped


def _claims_by_experiment(out: Path) -> dict[str, list[dict]]:
    path = out / "report" / "claims.json"
    claims = claim_records(json.loads(path.read_text())) if path.is_file() else []
    grouped: dict[str, list[dict]] = {}
    for c in claims:
        grouped.setdefault(c.get("experiment", ""), []).append(c)
    return grouped


def _passed(claims: list[dict]) -> str:
    return f"{sum(bool(c.get('passed')) for c in claims)} / {len(claims)}" if claims else "-"


def write_experiment_page(dest: Path, exp_id: str, title: str, runs: list[tuple[str, Path]],
                          claims: list[dict], report: str | None = None) -> Path:
    """The page of one experiment: its runs (``[(config key, run dir)]``) and claims."""
    payloads, skipped = _payloads(runs)
    subtitle = f"{exp_id} · {len(payloads)} run(s)" + (f" · not shown: {', '.join(skipped)}" if skipped else "")
    links = [("all pages", INDEX)] + ([("report", report)] if report else [])
    order = write_order_parameter_page(dest, page_name(exp_id), title, runs)  # online SGD: theory against simulation
    links += [("order parameters vs ODE", order.name)] if order else []
    write_plotly(dest)
    return write_page(dest / page_name(exp_id), render_page(title, subtitle, payloads, claims, links))


def write_run_page(dest: Path, path: Path, claims: list[dict] | None = None) -> Path:
    """The page of one stored run."""
    payloads, skipped = _payloads([(path.name, path)])
    subtitle = str(path.resolve()) + (f" · not shown: {', '.join(skipped)}" if skipped else "")
    write_plotly(dest)
    return write_page(dest / f"{path.name}.html",
                      render_page(path.name, subtitle, payloads, claims or [], [("all pages", INDEX)]))


def is_sweep_folder(path: Path) -> bool:
    """Whether ``path`` is a sweep's folder (``twolayer sweep``: its sweep file beside its results table)."""
    return (path / SWEEP_FILE).is_file() and (path / f"{RESULTS}.csv").is_file()


def sweep_page_name(name: str) -> str:
    """The page of the sweep ``name``: ``sweep-<name>.html``."""
    return f"sweep-{name}.html"


def write_sweep_page(dest: Path, sweep_dir: Path, out: Path | None = None) -> Path:
    """The page of one sweep: a slider over each swept key selects a point, whose run's neurons, trajectories
    and events the page shows, and a panel draws the event times across the sweep (``sweep_payload``)."""
    out = Path(out) if out is not None else sweep_dir.parent
    keys, points = sweep_points(sweep_dir)
    runs = [(", ".join(f"{k}={short(v)}" for k, v in values.items()), out / run_id) for _, values, run_id in points
            if run_id and (out / run_id).is_dir()]
    payloads, skipped = _payloads(runs)
    shown = {p["id"] for p in payloads}
    kept = [(values, run_id) for _, values, run_id in points if run_id in shown]
    order = {p["id"]: k for k, p in enumerate(payloads)}
    not_run = len(points) - len(kept) - len(skipped)
    subtitle = (f"sweep {sweep_dir.name} · {len(points)} point(s) over {', '.join(keys)}"
                + (f" · not shown: {', '.join(skipped)}" if skipped else "")
                + (f" · {not_run} point(s) without a finished run" if not_run > 0 else ""))
    write_plotly(dest)
    return write_page(dest / sweep_page_name(sweep_dir.name),
                      render_page(f"sweep {sweep_dir.name}", subtitle, payloads, [], [("all pages", INDEX)],
                                  sweep=sweep_payload(sweep_dir.name, keys, [(v, order[r]) for v, r in kept],
                                                      payloads)))


def _manifest(out: Path) -> dict | None:
    path = out / "report" / "summary.json"
    return json.loads(path.read_text()) if path.is_file() else None


def experiment_runs(out: Path, entry: dict) -> list[tuple[str, Path]]:
    """``[(config key, run dir)]`` of one experiment entry of a report manifest."""
    return [(r["key"], out / r["run_id"]) for r in entry.get("runs", []) if r.get("run_id")]


def write_folder(out: str | Path, dest: str | Path | None = None) -> Path:
    """Pages for every experiment of ``out``'s last reproduction and for every other stored run,
    and ``index.html`` listing them; returns the index."""
    out = Path(out)
    dest = Path(dest) if dest is not None else out / EXPLORE_DIR
    manifest = _manifest(out) or {"experiments": []}
    claims = _claims_by_experiment(out)
    entries, covered = [], set()
    for entry in manifest["experiments"]:
        runs = experiment_runs(out, entry)
        covered.update(p.name for _, p in runs)
        if entry.get("skipped"):
            continue
        exp_claims = claims.get(entry["id"], [])
        report = f"../report/index.html#exp-{entry['id'].replace('/', '-')}" if (out / "report" / "index.html").is_file() else None
        page = write_experiment_page(dest, entry["id"], f"{entry['id']}: {entry.get('title', '')}", runs, exp_claims, report)
        entries.append({"page": page.name, "title": entry["id"], "kind": "experiment", "runs": len(runs),
                        "claims": _passed(exp_claims)})
    for sweep_dir in sorted(p for p in out.iterdir() if p.is_dir() and is_sweep_folder(p)) if out.is_dir() else []:
        page = write_sweep_page(dest, sweep_dir, out)
        entries.append({"page": page.name, "title": sweep_dir.name, "kind": "sweep",
                        "runs": len(sweep_points(sweep_dir)[1]), "claims": "-"})
    for row in RunStore(out).list():
        path = out / row["run_id"]
        if row["run_id"] in covered or not path.is_dir():
            continue
        page = write_run_page(dest, path)
        flag = ", flagged: " + row["problem"] if row["problem"] else ""
        entries.append({"page": page.name, "title": row["run_id"], "kind": f"run ({row['status']}{flag})", "runs": 1,
                        "claims": "-"})
    write_plotly(dest)
    return write_page(dest / INDEX, render_index(f"twolayer explorer · {out}", entries))


def explore(target: str | Path, out: str | Path = DEFAULT_OUT, dest: str | Path | None = None) -> Path:
    """Write the explorer for ``target``: an output folder (index and every page) or one run (its
    directory, run id or unique prefix in ``out``: its page, with the claims of the experiments that
    used it). Pages go to ``dest`` (default ``<out>/explore``).

    Arguments:
        target: an output folder, a run directory, or a run id or prefix in ``out``.
        out: the output folder a run id is looked up in.
        dest: the folder of the pages.

    Returns:
        The path of the index page (a folder) or of the run's page.
    """
    target = Path(target)
    if target.is_dir() and is_sweep_folder(target):  # a sweep's folder: its page, beside the folder's other pages
        pages = Path(dest) if dest is not None else target.parent / EXPLORE_DIR
        check_writable_folder(pages, "--dest")
        return write_sweep_page(pages, target)
    if target.is_dir() and not (target / CONFIG).is_file():
        check_writable_folder(Path(dest) if dest is not None else target / EXPLORE_DIR, "--dest")
        return write_folder(target, dest)
    path = RunStore(out).find(str(target))
    check_writable_folder(Path(dest) if dest is not None else path.parent / EXPLORE_DIR, "--dest")
    folder = path.parent
    manifest = _manifest(folder) or {"experiments": []}
    claims = _claims_by_experiment(folder)
    mine = [c for e in manifest["experiments"] if path.name in {r.get("run_id") for r in e.get("runs", [])}
            for c in claims.get(e["id"], [])]
    return write_run_page(Path(dest) if dest is not None else folder / EXPLORE_DIR, path, mine)


def reproduction_pages(rep, dest: Path | None = None) -> dict[str, Path]:
    """The page of every experiment of a ``Reproduction`` that ran (for the report's links)."""
    out = Path(rep.out)
    dest = dest or out / EXPLORE_DIR
    by_exp: dict[str, list[dict]] = {}
    for c in rep.claims:
        by_exp.setdefault(c.experiment, []).append(c.to_dict())
    pages, entries = {}, []
    for e in rep.experiments:
        if e.skipped:
            continue
        runs = [(r.key, out / r.run_id) for r in e.runs if r.run_id]
        report = f"../report/index.html#exp-{e.id.replace('/', '-')}"
        pages[e.id] = write_experiment_page(dest, e.id, f"{e.id}: {e.title}", runs, by_exp.get(e.id, []), report)
        entries.append({"page": pages[e.id].name, "title": e.id, "kind": "experiment", "runs": len(runs),
                        "claims": _passed(by_exp.get(e.id, []))})
    write_page(dest / INDEX, render_index(f"twolayer explorer · {out}", entries))
    return pages
