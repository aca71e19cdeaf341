"""The interactive explorer: offline HTML pages that move a run's neurons through time.

``explore(target)`` writes ``<out>/explore/``: for an output folder, one page per reproduced
experiment (its runs, its claims with their slack) and one per other run, plus ``index.html``;
for one run (a directory or a run id), that run's page. Each page carries its data and script
inline and loads ``plotly.min.js`` from beside it, so the folder works from the file system with
no network. ``twolayer report`` links each experiment to its page (``reproduction_pages``).

Why Plotly.js: a maintained (MIT) library whose Python package ships the complete minified
bundle, so the explore extra brings it in without any download at run time; it has hover, log
axes, legends and fast ``Plotly.react`` redraws, which a time slider over hundreds of neurons
needs, and it needs no server (Bokeh's standalone pages would do too, but its widgets call
back into Python for anything beyond its built-in JS callbacks).
"""

from twolayer.explore.data import run_payload  # noqa: F401
from twolayer.explore.site import (  # noqa: F401
    EXPLORE_DIR, INDEX, experiment_runs, explore, page_name, reproduction_pages, write_experiment_page, write_folder,
    write_run_page,
)

__all__ = ["EXPLORE_DIR", "explore", "page_name", "reproduction_pages", "run_payload", "write_folder"]
