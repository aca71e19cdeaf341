"""The explorer's HTML: one page per experiment (or per run) and an index, all readable offline.

A page is one HTML file with its data and the explorer script inline; the only other file it
loads is ``plotly.min.js`` beside it (Plotly.js, copied from the ``plotly`` Python package: the
explore extra). Nothing is fetched from the network.
"""

from __future__ import annotations

import json
from html import escape
from importlib import resources
from pathlib import Path

from twolayer.claims_file import verdict
from twolayer.extras import require
from twolayer.fileio import write_bytes_atomic, write_text_atomic

PLOTLY_JS = "plotly.min.js"

CSS = """
:root { --ok: #1a7f37; --bad: #cf222e; --muted: #57606a; --line: #d0d7de; --bg: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1f2328; margin: 0 auto;
       max-width: 1320px; padding: 18px 28px 60px; }
h1 { font-size: 22px; margin: 0 0 2px; } h2 { font-size: 17px; margin: 26px 0 6px; border-bottom: 1px solid var(--line); }
.muted { color: var(--muted); font-size: 12px; } nav a { margin-right: 14px; font-size: 13px; }
.controls { display: flex; flex-wrap: wrap; gap: 10px 18px; align-items: center; margin: 12px 0 6px; padding: 10px 12px;
            background: var(--bg); border: 1px solid var(--line); border-radius: 6px; }
.controls label { font-size: 13px; } #time { width: 420px; vertical-align: middle; }
#sweep-controls input { width: 200px; vertical-align: middle; } .sweep-value { font-variant-numeric: tabular-nums; }
#time-label { font-variant-numeric: tabular-nums; font-size: 13px; min-width: 300px; }
.top { display: grid; grid-template-columns: minmax(420px, 560px) 1fr; gap: 18px; align-items: start; }
#per-neuron { display: grid; grid-template-columns: repeat(auto-fill, minmax(380px, 1fr)); gap: 8px; }
#scalars { display: grid; grid-template-columns: repeat(auto-fill, minmax(380px, 1fr)); gap: 8px; }
.scalar, .panel { border: 1px solid var(--line); border-radius: 4px; }
label.seed { display: inline-block; border-left: 4px solid; padding: 0 6px; margin: 2px 4px; font-size: 12px; }
table { border-collapse: collapse; font-size: 12px; margin: 4px 0 10px; }
th, td { border: 1px solid var(--line); padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: var(--bg); } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 11px; }
td.pass { color: var(--ok); font-weight: 700; } td.fail { color: var(--bad); font-weight: 700; }
tr.failed td, tr.finding td { background: #fff5f5; } .missing { color: var(--muted); padding: 40px 10px; }
td.finding-mark { color: #8a5a00; font-weight: 700; }
"""

BODY = """
<h1>{title}</h1>
<div class="muted">{subtitle}</div>
<nav>{links}</nav>
<div class="controls">
  <span id="sweep-controls" hidden></span>
  <label id="run-label">run <select id="run"></select></label>
  <button id="play" type="button">play</button>
  <input id="time" type="range" min="0" max="0" step="1" value="0" aria-label="observation point">
  <span id="time-label"></span>
  <label>neurons of <select id="neuron-seed"></select></label>
  <label>colour by <select id="colour"><option value="sign">sign of v_j</option><option value="cone">cone</option></select></label>
</div>
<div class="muted" id="run-status"></div>
<div class="top">
  <div><div class="muted" id="neurons-title"></div><div id="neurons"></div><div class="missing" id="neurons-missing"></div></div>
  <div><h2 style="margin-top:0">Settings</h2><table id="digest"></table>
       <h2>Events</h2><div class="muted" id="events-none">no events detected</div><table id="events"></table></div>
</div>
<section id="sweep-section" hidden><h2>Events across the sweep</h2>
  <div class="muted" id="sweep-events-note"></div><div id="sweep-events"></div></section>
<section id="per-neuron-section" hidden><h2>Neurons over time</h2>
  <div class="muted" id="per-neuron-note"></div><div id="per-neuron"></div></section>
<h2>Trajectories</h2>
<div id="seed-picker"></div>
<div id="scalars"></div>
<section id="claims-section"><h2>Claims</h2><table id="claims" class="claims"></table></section>
"""


def write_plotly(dest: Path) -> Path:
    """Copy Plotly.js from the ``plotly`` package into ``dest`` (once; a same-size copy is kept)."""
    require("plotly", "explore", "the explorer (Plotly.js)")
    data = (resources.files("plotly") / "package_data" / PLOTLY_JS).read_bytes()
    target = dest / PLOTLY_JS
    if not (target.is_file() and target.stat().st_size == len(data)):
        write_bytes_atomic(target, data)
    return target


def _script_json(obj) -> str:
    """JSON safe inside a <script> element."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def render_page(title: str, subtitle: str, runs: list[dict], claims: list[dict], links: list[tuple[str, str]],
                sweep: dict | None = None) -> str:
    """One self-contained explorer page: the runs' data and the script inline, ``plotly.min.js`` beside it;
    ``sweep`` (``data.sweep_payload``) makes it a sweep's page, whose sliders over the swept keys pick the run."""
    script = (resources.files("twolayer.explore") / "explorer.js").read_text()
    nav = "".join(f'<a href="{escape(href)}">{escape(text)}</a>' for text, href in links)
    data = {"title": title, "runs": runs, "claims": [{**c, "verdict": dict(zip(("row", "mark", "text"), verdict(c)))}
                                                     for c in claims], "sweep": sweep}
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">', '<link rel="icon" href="data:,">',
        f"<title>{escape(title)} · twolayer explorer</title>", f"<style>{CSS}</style>",
        f'<script src="{PLOTLY_JS}"></script></head><body>',
        BODY.format(title=escape(title), subtitle=escape(subtitle), links=nav),
        f"<script>window.TWOLAYER = {_script_json(data)};</script>", f"<script>{script}</script>",
        "</body></html>", ""])


def render_index(title: str, entries: list[dict]) -> str:
    """The index page: one row per page (``{page, title, kind, runs, claims}``)."""
    rows = "".join(
        f'<tr><td><a href="{escape(e["page"])}">{escape(e["title"])}</a></td><td>{escape(e["kind"])}</td>'
        f'<td class="num">{e["runs"]}</td><td class="num">{escape(e["claims"])}</td></tr>' for e in entries)
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', '<link rel="icon" href="data:,">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>", f"<h1>{escape(title)}</h1>",
        '<div class="muted">Open a page to move the neurons through time (works offline).</div>',
        '<table class="pages"><thead><tr><th>page</th><th>kind</th><th>runs</th><th>claims passed</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>", "</body></html>", ""])


def write_page(path: Path, html: str) -> Path:
    """Write ``html`` to ``path`` atomically; returns ``path``."""
    write_text_atomic(path, html)
    return path
