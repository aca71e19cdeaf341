"""Issue 26: run min2024 experiment configs on independent seeds 100-109 (the same configs otherwise) into
/tmp/h26/store and pickle-free dump of the Results for later analysis (see /tmp/h26/spread.py)."""
import sys, warnings
from twolayer.api import run as run_config
from twolayer.claims.registry import get, Results
from twolayer.errors import UnrecordedEventWarning


SEEDS = list(range(100, 110))
STORE = "/tmp/h26/store"


def spread_results(exp_id: str, scale: str, keys=None, overrides=None) -> Results:
    exp = get(exp_id)
    runs = {}
    for key, cfg in exp.run_configs(scale).items():
        if keys is not None and key not in keys:
            continue
        cfg = {**cfg, "seeds": SEEDS, "name": f"{cfg['name']}-s100"}
        cfg.pop("seed", None)
        for k, v in (overrides or {}).get(key, {}).items():
            cfg[k] = v
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnrecordedEventWarning)
            runs[key] = run_config(cfg, out=STORE)
    return Results(exp, scale, runs)


if __name__ == "__main__":
    for exp_id in sys.argv[2:]:
        spread_results(exp_id, sys.argv[1])
        print("done", exp_id, flush=True)
