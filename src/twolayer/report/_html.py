"""The report's ``index.html``: one self-contained page (inline CSS, relative links, no scripts).

Claims show their kind, slack and falsifiers; the two slack flags ("holds, but says little", "near
the edge") are marked in the claims tables and listed under the verdict. Assumption-broken
experiments have a section of their own, where a failed claim is the expected outcome ("fails, as
the theory says") and a passed one is a finding ("holds although an assumption is broken").
"""

from __future__ import annotations

import json
from html import escape
from itertools import groupby

from twolayer.claims import FLAG_NEAR_EDGE, FLAG_SAYS_LITTLE, LEDGER, PAPERS, Claim, Reproduction, fmt
from twolayer.claims_file import verdict

CSS = """
:root { --ok: #1a7f37; --bad: #cf222e; --muted: #57606a; --line: #d0d7de; --bg: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 15px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1f2328;
       max-width: 1180px; margin: 0 auto; padding: 24px 32px 64px; }
h1 { font-size: 26px; margin: 0 0 4px; } h2 { font-size: 21px; margin: 40px 0 4px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 17px; margin: 28px 0 2px; } h4 { font-size: 14px; margin: 18px 0 6px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.meta, .muted { color: var(--muted); font-size: 13px; }
.verdict { display: inline-block; padding: 6px 14px; border-radius: 6px; font-weight: 600; color: #fff; margin: 12px 0; }
.verdict.ok { background: var(--ok); } .verdict.bad { background: var(--bad); }
.verdict.none { background: #777; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--bg); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.mono, code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
.pass { color: var(--ok); font-weight: 700; } .fail { color: var(--bad); font-weight: 700; }
span.none { color: #777; }
.finding-mark { color: #8a5a00; font-weight: 700; } table.ledger td { vertical-align: top; } .exclusion { color: #8a5a00; } .tolerance-source { font-size: 85%; }
tr.failed td { background: #fff5f5; }
tr.differs td { background: #fffbe6; }
figure { display: inline-block; margin: 8px 16px 8px 0; max-width: 100%; vertical-align: top; }
figure img { max-width: 100%; border: 1px solid var(--line); border-radius: 4px; }
figcaption { font-size: 12px; color: var(--muted); max-width: 720px; }
.error { color: var(--bad); background: #fff5f5; border: 1px solid #ffcecb; border-radius: 4px; padding: 6px 10px;
         font-family: ui-monospace, monospace; font-size: 12px; white-space: pre-wrap; }
details summary { cursor: pointer; color: var(--muted); font-size: 13px; }
.experiment { margin-bottom: 24px; }
.flag { display: inline-block; margin: 2px 0 0; padding: 0 6px; border-radius: 10px; font-size: 11px; white-space: nowrap; }
.flag.says-little { background: #fff1c2; color: #7d4e00; border: 1px solid #e9c46a; }
.flag.near-edge { background: #ffe4d6; color: #953800; border: 1px solid #f0a07a; }
.kind { font-size: 11px; color: var(--muted); text-transform: uppercase; letter-spacing: .03em; }
.kind.undeclared { color: var(--bad); }
.falsifier { display: inline-block; margin: 1px 4px 1px 0; font-size: 11px; border-bottom: 1px dotted var(--muted); }
tr.finding td { background: #fff5f5; }
.broken-note { border-left: 4px solid var(--muted); padding: 4px 10px; background: var(--bg); font-size: 13px; }
ul.flags { font-size: 13px; margin: 4px 0 12px; }
"""


def render(rep: Reproduction, sections: dict) -> str:
    """The report's ``index.html``: the verdict (every claim as declared, or which not), the ledger per paper as
    the headline, flags, the summary table, each paper's experiments (figures,
    claims with kind, slack and falsifiers, runs, settings), then the assumption-broken experiments.
    """
    broken = rep.broken_claims
    verdict = ("ok" if rep.claims else "none") if rep.all_as_expected else "bad"  # no claim: a neutral badge
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',
        "<title>twolayer reproduction report</title>", f"<style>{CSS}</style></head><body>",
        "<h1>twolayer reproduction report</h1>",
        f'<div class="meta">scale <b>{escape(rep.scale)}</b> · created {escape(rep.created)} · '
        f"wall time {rep.wall_seconds + rep.report_seconds:.1f} s (runs and claims {rep.wall_seconds:.1f} s, "
        f"figures {rep.report_seconds:.1f} s) · output folder <code>{escape(str(rep.out))}</code></div>",
        f'<div class="verdict {verdict}" id="verdict">{escape(rep.verdict)}</div>',
    ]
    if broken:
        held = sum(c.passed for c in broken)
        parts.append(f'<div class="verdict {"bad" if any(not c.as_expected for c in broken) else "ok"}" '
                     f'id="verdict-broken">{sum(c.as_expected for c in broken)} / {len(broken)} assumption-broken '
                     f"claims fail, as the theory says{f' ({held} hold: findings)' if held else ''}</div>")
    findings = rep.findings
    if findings:
        parts.append(f'<div class="verdict {"bad" if any(not c.as_expected for c in findings) else "none"}" '
                     f'id="verdict-findings">{len(findings)} findings: statements of the papers that the '
                     f"simulation contradicts (<a href=\"#findings\">below</a>)</div>")
    parts += [_ledger(rep), _flag_list(rep.claims), _summary_table(rep, sections)]
    if findings:
        parts += ['<h2 id="findings">Findings</h2>',
                  '<div class="muted">Each statement is kept as the paper makes it; it fails at the paper\'s own settings, '
                  "and the explanation gives the numbers. A finding does not make <code>reproduce</code> fail; one "
                  "that holds again does.</div>", _claims_table(findings, {})]
    if rep.errors:
        parts += ['<h2 id="problems">Problems</h2>', _claims_table(rep.errors, {})]
    regular = [e for e in rep.experiments if not e.assumption_broken]
    for paper, results in groupby(regular, key=lambda e: e.paper):
        info = PAPERS.get(paper) if paper in PAPERS else None
        parts.append(f'<h2 id="{escape(paper)}">{escape(info.title if info else paper)} '
                     f'<span class="muted">({escape(paper)})</span></h2>')
        if info and info.reference:
            parts.append(f'<div class="muted">{escape(info.reference)}</div>')
        parts += [_experiment(e, sections[e.id]) for e in results]
    broken_exps = [e for e in rep.experiments if e.assumption_broken]
    if broken_exps:
        parts += ['<h2 id="assumption-broken">Assumption-broken experiments</h2>',
                  '<div class="broken-note">Each experiment below runs a paper\'s main theorem with one of its '
                  "assumptions broken, and checks the theorem's statement unchanged: the claims are expected to fail. "
                  '<span class="pass">fails, as the theory says</span> is the expected outcome; '
                  '<span class="fail">holds although an assumption is broken</span> is a finding to look at '
                  "(the assumption may not be needed, or the check cannot tell the two settings apart).</div>"]
        parts += [_experiment(e, sections[e.id]) for e in broken_exps]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _ledger(rep: Reproduction) -> str:
    """What each green is worth: per paper, the claims of each ledger category, each count linked to its claims."""
    ledger = rep.ledger
    if not ledger:
        return ""
    papers = list(ledger)
    rows = []
    for category, meaning in LEDGER.items():
        if not any(category in ledger[p] for p in papers):
            continue
        cells = []
        for paper in papers:
            ids = ledger[paper].get(category, [])
            links = ", ".join(f'<a href="#{_claim_anchor(i)}">{escape(i.split(":", 1)[-1])}</a>' for i in ids)
            cells.append(f'<td class="num">{f"<details><summary>{len(ids)}</summary>{links}</details>" if ids else ""}</td>')
        rows.append(f'<tr data-category="{escape(category)}"><td><b>{escape(category)}</b><br>'
                    f'<span class="muted">{escape(meaning)}</span></td>{"".join(cells)}</tr>')
    head = "".join(f"<th>{escape(p)}</th>" for p in papers)
    return (f'<h2 id="ledger">Ledger: what each green is worth</h2><table class="ledger"><thead><tr><th>category</th>'
            f'{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _flag_list(claims: list[Claim]) -> str:
    """The claims the slack flags mark, linked to their rows."""
    items = []
    for flag, text in ((FLAG_SAYS_LITTLE, "bounds that hold by more than 100x"),
                       (FLAG_NEAR_EDGE, "claims that passed within 5 % of their threshold")):
        marked = [c for c in claims if flag in c.flags]
        if marked:
            links = ", ".join(f'<a href="#{_claim_anchor(c.id)}"><code>{escape(c.id)}</code></a> '
                              f"({escape(_fmt_slack(c.slack, c.kind))})" for c in marked)
            items.append(f'<li>{_flag_badge(flag)} {len(marked)} {text}: {links}</li>')
    if not items:
        return '<div class="muted" id="flags">slack: no bound holds by more than 100x and no claim is within 5 % of its threshold</div>'
    return f'<ul class="flags" id="flags">{"".join(items)}</ul>'


def _flag_badge(flag: str) -> str:
    cls = "says-little" if flag == FLAG_SAYS_LITTLE else "near-edge"
    return f'<span class="flag {cls}">{escape(flag)}</span>'


def _fmt_slack(slack, kind: str | None = None) -> str:
    """The slack as shown: a signed number; for a bound also the factor 10^slack by which it holds."""
    if slack is None:
        return "-"
    try:
        value = float(slack)
    except (TypeError, ValueError):
        return str(slack)
    if value != value:
        return "nan"
    text = f"{value:+.3g}"
    if kind == "bound" and abs(value) < 300:
        text += f" ({10 ** value:.3g}x)"
    return text


def _claim_anchor(claim_id: str) -> str:
    return "claim-" + claim_id.replace("/", "-").replace(":", "--")


def _anchor(exp_id: str) -> str:
    return "exp-" + exp_id.replace("/", "-")


def _summary_table(rep: Reproduction, sections: dict) -> str:
    rows = []
    for e in rep.experiments:
        s = sections[e.id]
        ok = e.as_expected == len(e.claims)
        wall = e.run_seconds + e.claim_seconds + s.figure_seconds
        count = (f"{e.as_expected} / {len(e.claims)} fail, as expected" if e.assumption_broken
                 else f"{e.passed} / {len(e.claims)}")
        badge = "none" if not e.claims else ("pass" if ok else "fail")
        rows.append(
            f'<tr class="{"" if ok else "failed"}"><td><a href="#{_anchor(e.id)}">{escape(e.id)}</a></td>'
            f"<td>{escape(e.title)}</td><td>{escape(e.figure)}</td>"
            f'<td class="num"><span class="{badge}">{count if e.claims else "no claims"}</span></td>'
            f'<td class="num">{len(e.runs)} ({sum(r.cached for r in e.runs)} cached)</td>'
            f'<td class="num">{wall:.1f}</td></tr>')
    return ('<table class="summary"><thead><tr><th>experiment</th><th>title</th><th>reproduces</th>'
            "<th>claims passed</th><th>runs</th><th>wall s</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def _experiment(e, s) -> str:
    wall = e.run_seconds + e.claim_seconds + s.figure_seconds
    parts = [
        f'<section class="experiment" id="{_anchor(e.id)}">',
        f"<h3>{escape(e.id)}: {escape(e.title)}</h3>",
        f'<div class="muted">reproduces {escape(e.figure)} · wall time {wall:.1f} s '
        f"(runs {e.run_seconds:.1f} s, claims {e.claim_seconds:.2f} s, figures {s.figure_seconds:.1f} s)"
        + (f' · <a class="explore" href="{escape(s.explore)}">explore the runs</a>' if s.explore else "") + "</div>",
        f"<p>{escape(s.description)}</p>",
    ]
    if e.assumption_broken:
        parts.insert(3, f'<div class="broken-note"><b>Breaks:</b> {escape(e.breaks)}</div>')
    if e.skipped:
        parts += [f'<div class="error skipped">skipped: {escape(e.skipped)}</div>', "</section>"]
        return "\n".join(parts)
    if s.figures:
        parts.append("<h4>Figures</h4>")
    for f in s.figures:
        if f.path:
            parts.append(f'<figure><img src="{escape(f.path)}" alt="{escape(e.id)} {escape(f.name)}">'
                         f"<figcaption><b>{escape(f.name)}.</b> {escape(f.caption)}</figcaption></figure>")
        else:
            parts.append(f'<div class="error">{escape(f.name)}: {escape(f.error)}</div>')
    parts += ["<h4>Claims</h4>", _claims_table(e.claims, s.falsifiers), "<h4>Runs</h4>", _runs_table(e),
              _settings(s.configs),
              "</section>"]
    return "\n".join(parts)


def _result(c: Claim) -> tuple[str, str]:
    """(row class, result cell) of a claim (``claims_file.verdict``, which the explorer shows too)."""
    row, mark, text = verdict(c.to_dict())
    return row, f'<span class="{mark}">{escape(text, quote=False)}</span>'


def _kind(c: Claim) -> str:
    if c.kind is None:
        return '<span class="kind undeclared" title="not converted yet: no kind, no falsifier">undeclared</span>'
    return f'<span class="kind">{escape(c.kind)}</span>'


def _falsifier_cell(c: Claim, falsifiers: dict) -> str:
    known = {f.name: f for f in falsifiers.get(c.id, [])}
    if not c.falsifiers:
        return '<span class="fail">none</span>'
    cells = []
    for record in c.falsifiers:
        name, kind = record["name"], record["kind"]
        f = known.get(name)
        title = f"{kind}: {f.why}" if f else kind
        cells.append(f'<span class="falsifier" data-kind="{escape(kind)}" title="{escape(title)}">{escape(name)} '
                     f'<span class=muted>({escape(kind)})</span></span>')
    return "".join(cells)


def _premises(c: Claim) -> str:
    """Each premise ablation's outcome: the claim fails without it (discriminates), or holds without it."""
    words = {True: ("pass", "fails without"), False: ("fail", "holds without"), None: ("muted", "not run:")}
    return "".join(f'<br><span class="premise {words[p["discriminates"]][0]}" title="{escape(p.get("source", ""))}">'
                   f'{words[p["discriminates"]][1]} {escape(p["name"])}</span>' for p in c.premises)


def _exclusions(c: Claim) -> str:
    """What a check left out, by which premise of the paper."""
    return "".join(f'<br><span class="exclusion" title="{escape(e["source"])}">left out {e["count"]} '
                   f'{escape(e["what"])}: {escape(", ".join(map(str, e["which"][:10])))}'
                   f'{" ..." if e["count"] > 10 else ""} ({escape(e["source"])})</span>' for e in c.exclusions)


def _claims_table(claims: list[Claim], falsifiers: dict) -> str:
    rows = []
    for c in claims:
        cls, mark = _result(c)
        flags = "".join(f"<br>{_flag_badge(f)}" for f in c.flags)
        rows.append(
            f'<tr class="{cls}" id="{_claim_anchor(c.id)}" data-claim="{escape(c.id)}" data-kind="{escape(c.kind or "")}" '
            f'data-flags="{escape(";".join(c.flags))}">'
            f"<td>{mark}</td><td><code>{escape(c.id.split(':', 1)[-1])}</code><br>{_kind(c)}</td>"
            f"<td>{escape(c.statement)}</td>"
            f'<td class="mono">{escape(fmt(c.predicted))}</td><td class="mono">{escape(fmt(c.measured))}</td>'
            f'<td class="mono">{escape(fmt(c.tolerance))}'
            f'<br><span class="tolerance-source muted">{escape(c.tolerance_source or "unstated")}</span></td>'
            f'<td class="mono slack">{escape(_fmt_slack(c.slack, c.kind))}{flags}</td>'
            f"<td>{_falsifier_cell(c, falsifiers)}{_premises(c)}</td><td class=\"muted\">{escape(c.details)}{_exclusions(c)}"
            f"{'<br><b>explanation:</b> ' + escape(c.explanation) if c.explanation else ''}</td></tr>")
    return ('<table class="claims"><thead><tr><th>result</th><th>claim</th><th>statement</th><th>predicted</th>'
            '<th>measured</th><th title="the tolerance, and where it comes from">tolerance (source)</th>'
            '<th title="how far from failing: relative distance to the threshold, '
            'or log10(bound / measured) for a bound">slack</th><th>falsifiers</th><th>details</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>")


def _runs_table(e) -> str:
    rows = []
    for r in e.runs:
        link = (f'<a href="../{escape(r.run_id)}/">{escape(r.run_id)}</a> · '
                f'<a href="../{escape(r.run_id)}/summary.json">summary</a> · '
                f'<a href="../{escape(r.run_id)}/config.yaml">config</a>') if r.run_id else "-"
        cls = "" if r.status in ("completed", "diverged") else "failed"
        rows.append(f'<tr class="{cls}"><td>{escape(r.key)}</td><td class="mono">{link}</td><td>{escape(r.status)}'
                    f'{" (cached)" if r.cached else ""}</td><td class="num">{r.seconds:.1f}</td>'
                    f'<td class="muted">{escape(r.message)}</td></tr>')
    return ('<table class="runs"><thead><tr><th>config</th><th>run directory</th><th>status</th><th>s</th>'
            "<th>message</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def flatten(d: dict, prefix: str = "") -> dict[str, str]:
    """Nested config as dotted keys with compact values."""
    flat = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            flat.update(flatten(v, key + "."))
        else:
            flat[key] = v if isinstance(v, str) else json.dumps(v)
    return flat


def _settings(configs: dict[str, dict]) -> str:
    if not configs:
        return ""
    flats = {k: flatten(c) for k, c in configs.items()}
    keys = list(dict.fromkeys(k for f in flats.values() for k in f))
    head = "".join(f"<th>{escape(k)}</th>" for k in flats)
    rows = []
    for key in keys:
        values = [flats[c].get(key, "") for c in flats]
        cls = "differs" if len(set(values)) > 1 else ""
        rows.append(f'<tr class="{cls}"><td class="mono">{escape(key)}</td>'
                    + "".join(f'<td class="mono">{escape(str(v))}</td>' for v in values) + "</tr>")
    return ("<details open><summary>Settings (resolved configs; rows that differ between runs are highlighted)"
            f'</summary><table class="settings"><thead><tr><th>key</th>{head}</tr></thead><tbody>'
            + "".join(rows) + "</tbody></table></details>")
