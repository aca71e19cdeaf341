/* twolayer explorer: draws the runs in window.TWOLAYER (written by twolayer.explore) with Plotly.
 * One run at a time: a time slider moving the neuron directions, one plot per scalar observable
 * (seeds selectable, event times marked, the slider's time as a cursor), the events and claims. */
(function () {
  "use strict";
  const PAGE = window.TWOLAYER;
  const SIGN = { "1": ["v_j > 0", "#0969da"], "-1": ["v_j < 0", "#cf222e"], "0": ["v_j = 0", "#6e7781"] };
  const CONE = { "1": ["S+", "#1a7f37"], "-1": ["S-", "#bc4c00"], "0": ["S_dead", "#8c959f"], "2": ["no cone", "#24292f"] };
  const SEED_COLORS = ["#0969da", "#cf222e", "#1a7f37", "#8250df", "#bc4c00", "#1b7c83", "#bf3989", "#4d2d00",
                       "#6e7781", "#0550ae", "#a40e26", "#116329", "#6639ba", "#953800", "#136061", "#99286e"];
  const CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  const state = { run: null, index: 0, seed: 0, colour: "sign", visible: [], frame: null, playing: null };

  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => e.setAttribute(k, v));
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const fmt = (x) => (x === null || x === undefined ? "-" : typeof x === "number" ? (Math.abs(x) >= 1e4 || (x !== 0 && Math.abs(x) < 1e-3) ? x.toExponential(3) : +x.toPrecision(4) + "") : Array.isArray(x) ? "[" + x.map(fmt).join(", ") + "]" : typeof x === "object" ? JSON.stringify(x) : String(x));

  function timeText(run, i) {
    const t = run.time.t[i], step = run.time.step[i];
    return "t = " + fmt(t) + (step ? " · step " + step : "") + " · point " + (i + 1) + " / " + run.time.t.length;
  }

  // -- neurons ---------------------------------------------------------------------------------
  function neuronTraces(run, i) {
    const n = run.neurons, s = state.seed;
    const xs = n.x[s][i], ys = n.y[s][i];
    const codes = state.colour === "cone" && n.cone ? n.cone[s][i] : n.sign ? n.sign[s][i] : null;
    const palette = state.colour === "cone" && n.cone ? CONE : SIGN;
    const groups = {};
    xs.forEach((x, j) => {
      const key = codes ? String(codes[j]) : "all";
      (groups[key] = groups[key] || []).push(j);
    });
    const traces = [];
    (n.cones || []).forEach((arc, k) => {  // the cones of 2-D data as arcs just outside the circle; their ends are the boundaries
      const [name, color] = CONE[String(arc.code)] || ["cone", "#8c959f"];
      traces.push({ x: arc.x.map((v) => 1.06 * v), y: arc.y.map((v) => 1.06 * v), mode: "lines", type: "scatter",
                    line: { color: color, width: 5 }, opacity: 0.55, name: "cone " + name, legendgroup: "cone " + name,
                    showlegend: !n.cones.slice(0, k).some((a) => a.code === arc.code),
                    hovertemplate: "cone " + name + "<extra></extra>" });
    });
    Object.keys(groups).sort().forEach((key) => {
      const [name, color] = palette[key] || ["neurons", "#0969da"];
      const idx = groups[key];
      const lx = [], ly = [];
      idx.forEach((j) => { lx.push(0, xs[j], null); ly.push(0, ys[j], null); });
      traces.push({ x: lx, y: ly, mode: "lines", line: { color: color, width: 1 }, opacity: 0.45,
                    hoverinfo: "skip", showlegend: false, legendgroup: key, type: "scatter" });
      traces.push({ x: idx.map((j) => xs[j]), y: idx.map((j) => ys[j]), mode: "markers", type: "scatter",
                    name: name + " (" + idx.length + ")", legendgroup: key, marker: { color: color, size: 7 },
                    text: idx.map((j) => "neuron " + j + (n.sign ? " · sign v " + n.sign[s][i][j] : "") +
                                           (n.cone ? " · cone " + (CONE[String(n.cone[s][i][j])] || ["?"])[0] : "")),
                    hovertemplate: "%{text}<br>(%{x:.3f}, %{y:.3f})<extra></extra>" });
    });
    if (n.points) {
      traces.push({ x: n.points.x, y: n.points.y, mode: "markers", type: "scatter", name: "data x_i/|x_i|",
                    marker: { symbol: n.points.label.map((l) => (l > 0 ? "cross-thin" : "x-thin")), size: 9,
                              line: { width: 1.5, color: n.points.label.map((l) => (l > 0 ? "#0969da" : "#cf222e")) } },
                    hovertemplate: "data point (%{x:.3f}, %{y:.3f})<extra></extra>" });
    }
    return traces;
  }

  function neuronLayout(run) {
    const n = run.neurons;
    const yl = n.full_circle ? -1.15 : -0.1;  // half-plane pictures (mu, orthogonal part >= 0) start at 0
    const shapes = [{ type: "circle", xref: "x", yref: "y", x0: -1, y0: -1, x1: 1, y1: 1,
                      line: { color: "#d0d7de", width: 1 } }];
    const annotations = [];
    (n.refs || []).forEach((r) => {
      annotations.push({ x: r.xy[0], y: r.xy[1], ax: 0, ay: 0, axref: "x", ayref: "y", xref: "x", yref: "y", text: "",
                         showarrow: true, arrowhead: 2, arrowwidth: 2, arrowcolor: "#57606a" });
      annotations.push({ x: 1.09 * r.xy[0], y: 1.09 * r.xy[1], xref: "x", yref: "y", text: "<b>" + r.label + "</b>",
                         showarrow: false, font: { size: 13, color: "#24292f" } });
    });
    return { margin: { l: 40, r: 10, t: 30, b: 40 }, height: 460, shapes: shapes, annotations: annotations,
             title: { text: "", font: { size: 12 } }, uirevision: run.id,
             xaxis: { range: [-1.15, 1.15], zeroline: false, title: { text: n.axes[0] } },
             yaxis: { range: [yl, 1.15], zeroline: false, scaleanchor: "x", title: { text: n.axes[1] } },
             legend: { orientation: "h", y: -0.15 } };
  }

  function drawNeurons() {
    const run = state.run;
    if (!run.neurons || run.neurons.missing) return;
    Plotly.react("neurons", neuronTraces(run, state.index), neuronLayout(run), CONFIG);
  }

  // -- scalar trajectories ---------------------------------------------------------------------
  function times(run) {
    return run.time.t.map((t) => (run.time.log && !(t > 0) ? null : t));
  }

  function eventShapes(run) {
    const shapes = [], notes = [];
    run.events.forEach((ev, k) => {
      ev.times.forEach((t, s) => {
        if (t === null || !state.visible[s]) return;
        shapes.push({ type: "line", xref: "x", yref: "paper", x0: t, x1: t, y0: 0, y1: 1, name: "event",
                      line: { color: SEED_COLORS[s % SEED_COLORS.length], width: 1, dash: ["dash", "dot", "dashdot"][k % 3] } });
      });
      const first = ev.times.find((t, s) => t !== null && state.visible[s]);
      if (first !== undefined) {
        // annotations on a log axis take log10 of the data value (shapes take the value itself)
        // labels of events close in time would overlap: staggered down the plot, and each names itself on hover
        const w = (ev.widths || [])[ev.times.indexOf(first)];
        notes.push({ x: run.time.log ? Math.log10(first) : first, y: 1 - 0.3 * (k % 3), xref: "x", yref: "paper", text: ev.name,
                     showarrow: false, textangle: -90, xanchor: "right", yanchor: "top", font: { size: 9, color: "#57606a" },
                     hovertext: ev.name + ": t = " + fmt(first) + (w === null || w === undefined ? "" : " [" + fmt(w) + "]"),
                     name: "event-label" });
      }
    });
    return [shapes, notes];
  }

  function cursor(run) {
    return { type: "line", xref: "x", yref: "paper", x0: run.time.t[state.index], x1: run.time.t[state.index],
             y0: 0, y1: 1, line: { color: "#24292f", width: 1.5 }, name: "cursor" };
  }

  function scalarLayout(run, sc) {
    const [shapes, notes] = eventShapes(run);
    return { margin: { l: 55, r: 10, t: 28, b: 36 }, height: 250, showlegend: false, uirevision: run.id + sc.name,
             title: { text: sc.name, font: { size: 12 }, x: 0.02 }, hovermode: "x unified",
             xaxis: { type: run.time.log ? "log" : "linear", zeroline: false, title: { text: run.time.label, font: { size: 10 } } },
             yaxis: { type: sc.log ? "log" : "linear", exponentformat: "e" },
             shapes: [cursor(run), ...shapes], annotations: notes };
  }

  function drawScalars() {
    const run = state.run, box = $("scalars");
    box.innerHTML = "";
    const t = times(run);
    run.scalars.forEach((sc, k) => {
      const div = el("div", { class: "scalar", id: "scalar-" + k });
      box.appendChild(div);
      const traces = sc.values.map((ys, s) => ({
        x: t, y: ys, type: "scatter", mode: "lines", name: "seed " + run.seeds[s], visible: state.visible[s],
        line: { color: SEED_COLORS[s % SEED_COLORS.length], width: 1.4 },
        hovertemplate: "seed " + run.seeds[s] + ": %{y:.5g}<extra></extra>" }));
      Plotly.newPlot(div, traces, scalarLayout(run, sc), CONFIG);
    });
  }

  function drawPerNeuron() {
    // ||w_j|| and v_j of every neuron of the picture's seed, coloured by the sign of v_j at the last point
    const run = state.run, panels = run.per_neuron || [], s = state.seed, box = $("per-neuron");
    $("per-neuron-section").hidden = panels.length === 0;
    box.innerHTML = "";
    if (!panels.length) return;
    const t = times(run), last = run.time.t.length - 1;
    const v = panels.find((p) => p.name === "v");
    $("per-neuron-note").textContent = "seed " + run.seeds[s] + " (the neuron picture's seed) · " +
      panels[0].values[s][0].length + " neuron(s)" + (v ? " · colour: sign of v_j at the last point" : "");
    panels.forEach((p, k) => {
      const div = el("div", { class: "panel", id: "per-neuron-" + k });
      box.appendChild(div);
      const h = p.values[s][0].length;
      const traces = [];
      for (let j = 0; j < h; j++) {
        const sign = v ? Math.sign(v.values[s][last][j] || 0) : 1;
        traces.push({ x: t, y: p.values[s].map((row) => row[j]), type: "scatter", mode: "lines", name: "neuron " + j,
                      line: { color: (SIGN[String(sign)] || SIGN["1"])[1], width: 1 }, opacity: 0.7,
                      hovertemplate: "neuron " + j + ": %{y:.4g}<extra></extra>" });
      }
      Plotly.newPlot(div, traces, { ...scalarLayout(run, { name: p.title, log: p.log }), hovermode: "closest" }, CONFIG);
    });
  }

  function moveCursors() {
    const run = state.run;
    (run.per_neuron || []).forEach((p, k) => {
      const div = $("per-neuron-" + k);
      if (div && div.layout) Plotly.relayout(div, { "shapes[0].x0": run.time.t[state.index], "shapes[0].x1": run.time.t[state.index] });
    });
    run.scalars.forEach((sc, k) => {
      const div = $("scalar-" + k);
      if (div && div.layout) Plotly.relayout(div, { "shapes[0].x0": run.time.t[state.index], "shapes[0].x1": run.time.t[state.index] });
    });
  }

  // -- controls --------------------------------------------------------------------------------
  function setIndex(i) {
    state.index = i;
    $("time").value = String(i);
    $("time-label").textContent = timeText(state.run, i);
    if (state.frame === null) {
      state.frame = requestAnimationFrame(() => { state.frame = null; drawNeurons(); moveCursors(); });
    }
  }

  function seedPicker(run) {
    const box = $("seed-picker");
    box.innerHTML = "";
    box.appendChild(el("span", { class: "muted" }, "seeds: "));
    run.seeds.forEach((seed, s) => {
      const label = el("label", { class: "seed", style: "border-color:" + SEED_COLORS[s % SEED_COLORS.length] });
      const box_ = el("input", { type: "checkbox", "data-seed": String(seed) });
      box_.checked = state.visible[s];
      box_.addEventListener("change", () => {
        state.visible[s] = box_.checked;
        run.scalars.forEach((sc, k) => {
          const div = $("scalar-" + k);
          Plotly.restyle(div, { visible: state.visible.slice() });
          Plotly.relayout(div, scalarLayout(run, sc));
        });
      });
      label.appendChild(box_);
      label.appendChild(document.createTextNode(" " + seed));
      box.appendChild(label);
    });
    if (run.seeds_total > run.seeds.length) {
      box.appendChild(el("span", { class: "muted" }, " (first " + run.seeds.length + " of " + run.seeds_total + " seeds)"));
    }
  }

  function table(id, head, rows) {
    const t = $(id);
    t.innerHTML = "";
    const tr = el("tr");
    head.forEach((h) => tr.appendChild(el("th", {}, h)));
    const thead = el("thead");
    thead.appendChild(tr);
    t.appendChild(thead);
    const body = el("tbody");
    rows.forEach((r) => {
      const row = el("tr", r.attrs || {});
      r.cells.forEach((c) => row.appendChild(el("td", c.cls ? { class: c.cls } : {}, c.text)));
      body.appendChild(row);
    });
    t.appendChild(body);
  }

  function drawTables(run) {
    table("digest", ["setting", "value"], run.digest.map(([k, v]) => ({ cells: [{ text: k }, { text: v }] })));
    // each time with its uncertainty w: the event lies in (t - w, t] (one step for gd and sgd)
    const cell = (ev, t, s) => {
      const w = (ev.widths || [])[s];
      return { text: t === null ? "not reached" : fmt(t) + (w === null || w === undefined ? "" : " [" + fmt(w) + "]"), cls: "num" };
    };
    table("events", ["event", ...run.seeds.map((s) => "seed " + s)],
          run.events.map((ev) => ({ cells: [{ text: ev.name }, ...ev.times.map((t, s) => cell(ev, t, s))] })));
    $("events-none").hidden = run.events.length > 0;
  }

  function drawClaims() {
    const claims = PAGE.claims || [];
    $("claims-section").hidden = claims.length === 0;
    table("claims", ["result", "claim", "statement", "kind", "predicted", "measured", "tolerance", "slack"],
          // the verdict's colour and wording are the report's (claims_file.verdict): an expected failure is as expected
          claims.map((c) => ({ attrs: { class: c.verdict.row, "data-claim": c.id },
            cells: [{ text: c.verdict.text, cls: c.verdict.mark },
                    { text: c.id.split(":").slice(1).join(":") || c.id, cls: "mono" }, { text: c.statement },
                    { text: c.kind || "-" }, { text: fmt(c.predicted), cls: "mono" }, { text: fmt(c.measured), cls: "mono" },
                    { text: fmt(c.tolerance), cls: "mono" },
                    { text: c.slack === undefined || c.slack === null ? "-" : fmt(c.slack), cls: "mono slack" }] })));
  }

  function selectRun(k) {
    const run = PAGE.runs[k];
    state.run = run;
    state.index = run.time.t.length - 1;
    state.seed = 0;
    state.visible = run.seeds.map(() => true);
    $("run-status").textContent = run.id + " · " + run.status + (run.message.length ? " · " + run.message[0] : "");
    const slider = $("time");
    slider.max = String(run.time.t.length - 1);
    const seedSel = $("neuron-seed");
    seedSel.innerHTML = "";
    const n = run.neurons;
    const hasNeurons = n && !n.missing;
    $("neurons-missing").textContent = hasNeurons ? "" : (n ? n.missing : "");
    $("neurons-missing").hidden = hasNeurons;
    $("neurons").hidden = !hasNeurons;
    $("neurons-title").textContent = hasNeurons ? n.title : "";
    if (hasNeurons) {
      n.x.forEach((_, s) => seedSel.appendChild(el("option", { value: String(s) }, "seed " + run.seeds[s])));
      $("colour").querySelector('option[value="cone"]').disabled = !n.cone;
      $("colour").querySelector('option[value="sign"]').disabled = !n.sign;
      state.colour = n.sign ? "sign" : n.cone ? "cone" : "sign";
      $("colour").value = state.colour;
    }
    seedSel.disabled = !hasNeurons;
    seedPicker(run);
    drawTables(run);
    drawScalars();
    drawPerNeuron();
    if (hasNeurons) Plotly.react("neurons", neuronTraces(run, state.index), neuronLayout(run), CONFIG);
    setIndex(state.index);
  }

  // -- a sweep's page: a slider per swept key picks the point, whose run the page shows ------------
  function sweepAt() {
    const sw = PAGE.sweep;
    return sw.keys.map((_, k) => +$("sweep-" + k).value);
  }

  function sweepLabel(sw, k, i) {
    const v = sw.values[sw.keys[k]][i];
    return sw.keys[k] + " = " + (typeof v === "number" ? String(v) : fmt(v));  // the value as swept
  }

  function sweepSelect() {
    const sw = PAGE.sweep, at = sweepAt();
    sw.keys.forEach((_, k) => { $("sweep-value-" + k).textContent = sweepLabel(sw, k, at[k]); });
    const point = sw.points.find((p) => p.at.every((a, k) => a === at[k]));
    $("sweep-events-note").textContent = point ? "" : "no finished run at " + at.map((a, k) => sweepLabel(sw, k, a)).join(", ");
    if (point) {
      const previous = state.run ? state.run.time.t[state.index] : null;
      $("run").value = String(point.run);
      selectRun(point.run);
      if (previous !== null) {  // the picture stays at the same time (the nearest observation point)
        const t = state.run.time.t;
        let best = 0;
        t.forEach((x, i) => { if (Math.abs(x - previous) < Math.abs(t[best] - previous)) best = i; });
        setIndex(best);
      }
    }
    drawSweepEvents(point, at);
  }

  function drawSweepEvents(point, at) {
    // event times against the first swept key, at the other keys' current values; the selected point ringed
    const sw = PAGE.sweep, key = sw.keys[0];
    const names = Object.keys(sw.events);
    $("sweep-section").hidden = names.length === 0;
    if (!names.length) return;
    const here = sw.points.map((p, i) => i).filter((i) => sw.points[i].at.slice(1).every((a, k) => a === at[k + 1]))
      .sort((a, b) => sw.points[a].at[0] - sw.points[b].at[0]);
    const xs = here.map((i) => sw.values[key][sw.points[i].at[0]]);
    const traces = names.map((n, k) => ({ x: xs, y: here.map((i) => sw.events[n][i]), mode: "lines+markers", type: "scatter",
                                          name: n, line: { color: SEED_COLORS[k % SEED_COLORS.length] } }));
    if (point) {
      const i = sw.points.indexOf(point);
      traces.push({ x: names.map(() => sw.values[key][point.at[0]]), y: names.map((n) => sw.events[n][i]), mode: "markers",
                    type: "scatter", name: "selected point", marker: { size: 14, symbol: "circle-open", color: "#24292f" } });
    }
    const rest = sw.keys.slice(1).map((k, j) => sweepLabel(sw, j + 1, at[j + 1])).join(", ");
    Plotly.react("sweep-events", traces, {
      margin: { l: 55, r: 10, t: 28, b: 40 }, height: 300, title: { text: "median over seeds" + (rest ? " · " + rest : ""), font: { size: 12 } },
      xaxis: { type: sw.log[key] ? "log" : "linear", title: { text: key } },
      yaxis: { title: { text: "event time" }, exponentformat: "e" }, legend: { orientation: "h", y: -0.25 } }, CONFIG);
  }

  function initSweep() {
    const sw = PAGE.sweep, box = $("sweep-controls");
    box.hidden = false;
    $("run-label").hidden = true;
    sw.keys.forEach((key, k) => {
      const n = sw.values[key].length;
      const label = el("label", {}, "");
      const slider = el("input", { id: "sweep-" + k, type: "range", min: "0", max: String(n - 1), step: "1", value: "0",
                                   "aria-label": key, "data-key": key });
      slider.addEventListener("input", sweepSelect);
      label.appendChild(slider);
      label.appendChild(el("span", { id: "sweep-value-" + k, class: "sweep-value" }, ""));
      box.appendChild(label);
    });
    const first = sw.points[0];
    if (first) first.at.forEach((a, k) => { $("sweep-" + k).value = String(a); });
    sweepSelect();
  }

  function play() {
    const button = $("play");
    if (state.playing) { clearInterval(state.playing); state.playing = null; button.textContent = "play"; return; }
    button.textContent = "pause";
    if (state.index >= state.run.time.t.length - 1) setIndex(0);
    state.playing = setInterval(() => {
      if (state.index >= state.run.time.t.length - 1) { play(); return; }
      setIndex(state.index + 1);
    }, 80);
  }

  function init() {
    const runSel = $("run");
    PAGE.runs.forEach((r, k) => runSel.appendChild(el("option", { value: String(k) }, r.key + " (" + r.id + ")")));
    runSel.disabled = PAGE.runs.length < 2;
    runSel.addEventListener("change", () => selectRun(+runSel.value));
    $("time").addEventListener("input", (e) => setIndex(+e.target.value));
    $("neuron-seed").addEventListener("change", (e) => { state.seed = +e.target.value; drawNeurons(); drawPerNeuron(); });
    $("colour").addEventListener("change", (e) => { state.colour = e.target.value; drawNeurons(); });
    $("play").addEventListener("click", play);
    drawClaims();
    if (PAGE.sweep && PAGE.runs.length) initSweep();
    else if (PAGE.runs.length) selectRun(0);
    else $("run-status").textContent = "no finished runs to show";
    document.body.dataset.ready = "1";
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
