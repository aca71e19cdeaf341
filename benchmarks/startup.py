"""Start-up cost: ``import twolayer``, ``twolayer --help`` and ``twolayer list`` against ``import jax``; with
``--study``, where the time of a researcher's commands goes (``show``, ``list``, ``run``, ``plot``, ``explore``).

Each command runs in a fresh Python process, alternating with the ``import jax`` baseline so both see the
same machine load; the ratio of medians (and of best-ofs) is the figure. ``twolayer list`` is timed twice:
cold (no experiment manifest cached, so every experiment module is imported) and warm (the manifest that
the first call wrote). Targets (issue 15): ``--help`` at most 0.6 s; ``import twolayer`` and a warm
``twolayer list`` at most 1.3x ``import jax``.

``--study`` (issue 30) times each command warm (its imports in the OS cache, the persistent XLA cache
filled) in a fresh process on a small study in a temporary folder (a toy2d config, a 3-point sweep), and
splits it: ``import`` (the command's modules), ``compile`` (``run --force``: the first simulation in the
process minus the second), ``simulate`` (the run's ``wall_seconds``), ``store`` and ``figure`` (the rest);
the explorer's page size and, with Chromium and chromedriver, its load time in a headless browser. Targets:
``show`` and ``list`` under 1 s, ``run`` overhead (wall minus simulate) under 3 s, pages loading under 2 s.

    python benchmarks/startup.py [--repeats 7] [--study]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, summary, warn_if_busy, write_result  # noqa: E402

PY = sys.executable
CLI = str(Path(PY).with_name("twolayer"))


def wall(cmd: list[str], env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


STUDY_CONFIG = """name: bench-toy
seeds: 2
data: {kind: toy2d}
model: {kind: two_layer, activation: relu, width: 16}
init: {kind: balanced, scale: 1.0e-4}
loss: {kind: exponential, reduction: sum}
train: {method: gd, lr: 0.01, time: 8.0}
observe: {points: 60, metrics: [loss, v, cone, w_norm, neuron_weights]}
"""
STUDY_SWEEP = """name: bench-sweep
base: config.yaml
grid: {init.scale: [1.0e-5, 1.0e-4, 1.0e-3]}
"""
IMPORTS = {  # the modules each command needs before it does anything
    "show": "import twolayer.cli.run, twolayer.store, twolayer.stored",
    "list": "import twolayer.cli.run, twolayer.store",
    "run": "import twolayer.cli.run, twolayer.api, twolayer.train",
    "plot": "import twolayer.cli.sweep, twolayer.sweep.phase, matplotlib.pyplot",
    "explore": "import twolayer.cli.reproduce, twolayer.explore",
}


def page_load_seconds(page: Path, repeats: int = 5) -> dict | None:
    """Seconds from navigation to the explorer's ``data-ready`` in headless Chromium (None without it): the first
    load (a browser with an empty cache: the 4.8 MB plotly bundle read and compiled) and the median of ``repeats``
    further loads of the same page (the bundle in the browser's cache, as for every later page of the folder)."""
    import shutil
    import statistics

    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    if not (chromium and driver_path):
        return None
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1600"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    wait_ready = ("const done = arguments[arguments.length - 1];"
                  "(function poll() { document.body.dataset.ready ? requestAnimationFrame(() => "
                  "done(true)) : setTimeout(poll, 10); })();")
    try:
        loads = []
        for _ in range(1 + repeats):
            driver.get("about:blank")
            started = time.perf_counter()
            driver.get(page.resolve().as_uri())
            driver.execute_async_script(wait_ready)
            loads.append(time.perf_counter() - started)
        return {"first_seconds": loads[0], "median_seconds": statistics.median(loads[1:]), "all_seconds": loads}
    finally:
        driver.quit()


def study(repeats: int) -> dict:
    """The ``--study`` measurements (module docstring)."""
    import json

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "config.yaml").write_text(STUDY_CONFIG)
        (root / "sweep.yaml").write_text(STUDY_SWEEP)
        out = str(root / "out")
        env = {**os.environ, "TWOLAYER_CACHE": str(root / "cache"), "JAX_PLATFORMS": "cpu"}
        config = str(root / "config.yaml")
        for cmd in ([CLI, "run", config, "--out", out], [CLI, "sweep", str(root / "sweep.yaml"), "--out", out]):
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        run_id = next(p.name for p in Path(out).glob("bench-toy-*"))
        sweep_dir = str(Path(out) / "bench-sweep")
        commands = {
            "show": [CLI, "show", run_id, "--out", out],
            "list": [CLI, "list", "--runs", "--out", out],
            "run_cached": [CLI, "run", config, "--out", out],
            "run_fresh": [CLI, "run", config, "--out", out, "--force"],
            "plot": [CLI, "plot", sweep_dir, "--x", "init.scale", "--metric", "t1"],
            "explore": [CLI, "explore", sweep_dir, "--dest", str(root / "pages")],
        }
        times = {name: [] for name in [*commands, *(f"import_{k}" for k in IMPORTS), "simulate", "compile"]}
        for _ in range(repeats):
            for name, cmd in commands.items():
                times[name].append(wall(cmd, env))
                if name == "run_fresh":
                    summary_file = next(Path(out).glob("bench-toy-*/summary.json"))
                    times["simulate"].append(json.loads(summary_file.read_text())["wall_seconds"])
            for name, code in IMPORTS.items():
                times[f"import_{name}"].append(wall([PY, "-c", code], env))
            twice = ("import time, twolayer; from twolayer.config import load_config\n"
                     f"cfg = load_config({config!r})\n"
                     "a = time.perf_counter(); twolayer.run(cfg, out={out!r}, force=True); b = time.perf_counter()\n"
                     "twolayer.run(cfg, out={out!r}, force=True); c = time.perf_counter(); print((b - a) - (c - b))")
            result = subprocess.run([PY, "-c", twice.replace("{out!r}", repr(out))], env=env, check=True,
                                    capture_output=True, text=True)
            times["compile"].append(max(0.0, float(result.stdout.strip().splitlines()[-1])))
        pages = sorted((root / "pages").glob("*.html"))
        sizes = {p.name: p.stat().st_size for p in [*pages, root / "pages" / "plotly.min.js"]}
        load = page_load_seconds(pages[0], repeats) if pages else None
    entry = {name: summary(ts) for name, ts in times.items()}
    med = {name: e["median_seconds"] for name, e in entry.items()}
    entry["split"] = {
        "show": {"import": med["import_show"], "rest": med["show"] - med["import_show"]},
        "list": {"import": med["import_list"], "rest": med["list"] - med["import_list"]},
        "run": {"wall": med["run_fresh"], "simulate": med["simulate"], "overhead": med["run_fresh"] - med["simulate"],
                "import": med["import_run"], "compile (upper bound)": med["compile"],
                "store and the rest": med["run_fresh"] - med["simulate"] - med["import_run"]},
        "plot": {"import": med["import_plot"], "figure and the rest": med["plot"] - med["import_plot"]},
        "explore": {"import": med["import_explore"], "pages": med["explore"] - med["import_explore"]},
    }
    entry["page_bytes"] = sizes
    entry["page_load_seconds"] = load
    return entry


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--study", action="store_true", help="time show, list, run, plot and explore (issue 30)")
    args = parser.parse_args(argv)
    started, load = time.perf_counter(), load_average()
    if args.study:
        warn_if_busy(load)
        entry = study(args.repeats)
        for name, e in entry.items():
            if isinstance(e, dict) and "best_seconds" in e:
                print(f"{name:16s} median {e['median_seconds']:.3f} s  best {e['best_seconds']:.3f} s")
        for name, parts in entry["split"].items():
            print(f"{name:8s} " + ", ".join(f"{k} {v:.2f} s" for k, v in parts.items()))
        print("page bytes: " + ", ".join(f"{k} {v / 1e3:.0f} kB" for k, v in entry["page_bytes"].items()))
        if entry["page_load_seconds"] is not None:
            page = entry["page_load_seconds"]
            print(f"page load (headless Chromium): first {page['first_seconds']:.2f} s (empty cache), "
                  f"then median {page['median_seconds']:.2f} s")
        write_result("startup_study", entry, started=started, load_start=load, argv=argv)
        return 0
    warn_if_busy(load)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        env = {**os.environ, "TWOLAYER_CACHE": os.path.join(tmp, "cache"), "JAX_PLATFORMS": "cpu"}
        cases = {
            "import_jax": [PY, "-c", "import jax"],
            "import_twolayer": [PY, "-c", "import twolayer"],
            "help": [CLI, "--help"],
            "list_warm": [CLI, "list", "--out", out],
        }
        cold_env = {**env, "TWOLAYER_CACHE": os.path.join(tmp, "cold")}
        times: dict[str, list[float]] = {name: [] for name in [*cases, "list_cold"]}
        wall(cases["list_warm"], env)  # writes the manifest the warm runs read
        for _ in range(args.repeats):
            for name, cmd in cases.items():
                times[name].append(wall(cmd, env))
            times["list_cold"].append(wall(cases["list_warm"], cold_env))
            for cached in Path(cold_env["TWOLAYER_CACHE"]).glob("experiments-*.json"):
                cached.unlink()
    entry = {name: summary(ts) for name, ts in times.items()}
    base, best = entry["import_jax"]["median_seconds"], entry["import_jax"]["best_seconds"]
    ratios = {name: {"median_ratio": e["median_seconds"] / base, "best_ratio": e["best_seconds"] / best}
              for name, e in entry.items() if name != "import_jax"}
    entry["ratios_to_import_jax"] = ratios
    for name, e in entry.items():
        if name == "ratios_to_import_jax":
            continue
        r = ratios.get(name, {"median_ratio": 1.0, "best_ratio": 1.0})
        print(f"{name:16s} median {e['median_seconds']:.3f} s  best {e['best_seconds']:.3f} s  "
              f"x import jax: {r['median_ratio']:.2f} (best-of {r['best_ratio']:.2f})")
    write_result("startup", entry, started=started, load_start=load, argv=argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
