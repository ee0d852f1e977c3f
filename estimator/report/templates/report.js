"use strict";
// The per-point table (filter, sort, pages) and the scatter plots, drawn from the JSON in #point-data
// (layout: estimator/report/pointdata.py). The initial view can be set in the address:
// #points?filter=backend%3Dsglang&sort=isl&dir=desc&page=2&size=100&colour=model
(function () {
  const data = JSON.parse(document.getElementById("point-data").textContent);
  const fields = {};
  Object.keys(data.fields).forEach((key) => {
    const f = data.fields[key];
    fields[key] = Array.isArray(f) ? f : f.codes.map((c) => f.dict[c]);
  });
  const kinds = {};
  data.columns.forEach((col) => {
    kinds[col.key] = col.kind;
    if (col.kind === "err") {
      const pred = fields[col.pred], meas = fields[col.meas];
      fields[col.key] = pred.map((p, i) => (p === null || !(meas[i] > 0) ? null : (100 * (p - meas[i])) / meas[i]));
    }
  });
  const textKeys = data.columns.filter((col) => col.kind === "text").map((col) => col.key);
  const allRows = Array.from({ length: data.rows }, (_, i) => i);
  const state = initialState();
  let matching = allRows, view = allRows;

  function initialState() {
    const s = { filter: "", sort: null, dir: "asc", page: 1, size: 100, colour: data.colour_by[0] };
    if (!location.hash.startsWith("#points?")) { return s; }
    const q = new URLSearchParams(location.hash.slice("#points?".length));
    s.filter = q.get("filter") || "";
    if (q.get("sort") in fields) { s.sort = q.get("sort"); }
    if (q.get("dir") === "desc") { s.dir = "desc"; }
    s.page = Math.max(1, parseInt(q.get("page"), 10) || 1);
    if (["50", "100", "500"].includes(q.get("size"))) { s.size = parseInt(q.get("size"), 10); }
    if (data.colour_by.includes(q.get("colour"))) { s.colour = q.get("colour"); }
    return s;
  }

  function esc(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }

  function format(kind, v) {
    if (v === null) { return "-"; }
    if (kind === "ms") { return String(Number(v.toPrecision(4))); }
    if (kind === "err") { return (v >= 0 ? "+" : "") + v.toFixed(1) + "%"; }
    return String(v);
  }

  // ---- filter and sort ------------------------------------------------------------------------
  const TERM = /^([A-Za-z_]\w*)(<=|>=|!=|=|<|>|~)(.*)$/;
  const ORDER = { "<": (a, b) => a < b, ">": (a, b) => a > b, "<=": (a, b) => a <= b, ">=": (a, b) => a >= b,
    "=": (a, b) => a === b, "!=": (a, b) => a !== b, "~": (a, b) => a.includes(b) };

  function parseFilter(text) {
    const tests = [], problems = [];
    text.trim().split(/\s+/).filter(Boolean).forEach((term) => {
      const m = TERM.exec(term);
      if (!m) {
        const word = term.toLowerCase();
        tests.push((i) => textKeys.some((k) => fields[k][i].toLowerCase().includes(word)));
        return;
      }
      const [, key, op, raw] = m;
      if (!(key in fields)) { problems.push("unknown column " + key); return; }
      const values = fields[key], numeric = (kinds[key] || "text") !== "text";
      if (raw === "-" && (op === "=" || op === "!=")) {
        tests.push((i) => (values[i] === null) === (op === "="));
      } else if (numeric && op !== "~") {
        const x = parseFloat(raw);
        if (Number.isNaN(x)) { problems.push("not a number: " + term); return; }
        tests.push((i) => values[i] !== null && ORDER[op](values[i], x));
      } else {
        const s = raw.toLowerCase();
        tests.push((i) => ORDER[op](values[i] === null ? "" : String(values[i]).toLowerCase(), s));
      }
    });
    return { tests, problems };
  }

  function sortRows(rows) {
    if (!state.sort) { return rows; }
    const values = fields[state.sort], sign = state.dir === "desc" ? -1 : 1;
    const absent = (i) => values[i] === null || values[i] === "";
    const present = rows.filter((i) => !absent(i));
    present.sort((a, b) => (values[a] < values[b] ? -sign : values[a] > values[b] ? sign : a - b));
    return present.concat(rows.filter(absent));  // not predicted last, whichever the direction
  }

  // ---- the table ------------------------------------------------------------------------------
  const table = document.getElementById("point-table"), body = table.tBodies[0];
  const status = document.getElementById("point-status"), filterBox = document.getElementById("point-filter");
  let problems = [];
  table.tHead.innerHTML = "<tr>" + data.columns.map((col) => '<th data-key="' + esc(col.key) + '">' + esc(col.label) + "</th>").join("") + "</tr>";

  function renderTable() {
    const pages = Math.max(1, Math.ceil(view.length / state.size));
    state.page = Math.min(state.page, pages);
    const start = (state.page - 1) * state.size, rows = view.slice(start, start + state.size);
    body.innerHTML = rows.map((i) => "<tr>" + data.columns.map((col) => {
      const v = fields[col.key][i];
      const title = col.reason ? fields[v === null ? col.reason : col.note][i] : "";
      const cls = v === null ? "missing" : col.kind === "text" ? "text" : "";
      return "<td" + (cls ? ' class="' + cls + '"' : "") + (title ? ' title="' + esc(title) + '"' : "") + ">" + esc(format(col.kind, v)) + "</td>";
    }).join("") + "</tr>").join("");
    const shown = view.length ? "rows " + (start + 1) + "\u2013" + (start + rows.length) + " of " + view.length : "no rows";
    status.textContent = shown + " matching (" + data.rows + " in all), page " + state.page + " of " + pages + (problems.length ? "; ignored: " + problems.join(", ") : "");
    status.className = problems.length ? "error" : "";
    table.querySelectorAll("th").forEach((th) => {
      if (th.dataset.key === state.sort) { th.dataset.dir = state.dir; } else { delete th.dataset.dir; }
    });
  }

  function applyFilter() {
    const parsed = parseFilter(state.filter);
    problems = parsed.problems;
    matching = parsed.tests.length ? allRows.filter((i) => parsed.tests.every((t) => t(i))) : allRows;
    view = sortRows(matching);
  }

  table.tHead.addEventListener("click", (event) => {
    const key = event.target.dataset.key;
    if (!key) { return; }
    state.dir = state.sort === key && state.dir === "asc" ? "desc" : "asc";
    state.sort = key;
    state.page = 1;
    view = sortRows(matching);
    renderTable();
  });
  filterBox.value = state.filter;
  filterBox.addEventListener("input", () => {
    state.filter = filterBox.value;
    state.page = 1;
    applyFilter();
    renderTable();
    drawPlots();
  });
  document.querySelectorAll("button[data-page]").forEach((button) => {
    button.addEventListener("click", () => {
      const pages = Math.max(1, Math.ceil(view.length / state.size));
      const to = { first: 1, prev: state.page - 1, next: state.page + 1, last: pages }[button.dataset.page];
      state.page = Math.min(Math.max(1, to), pages);
      renderTable();
    });
  });
  const pageSize = document.getElementById("page-size");
  pageSize.value = String(state.size);
  pageSize.addEventListener("change", () => {
    state.size = parseInt(pageSize.value, 10);
    state.page = 1;
    renderTable();
  });

  // ---- scatter plots --------------------------------------------------------------------------
  const PALETTE = ["#0969da", "#cf222e", "#1a7f37", "#8250df", "#bf8700", "#e16f24", "#1b7c83", "#bf3989", "#6e7781"];
  const OTHER = "#afb8c1", BOX = { left: 54, top: 10, side: 282 }, RADIUS = 2.2;
  const figures = Array.from(document.querySelectorAll("figure.scatter"));
  const colourBy = document.getElementById("colour-by"), legend = document.getElementById("legend"), tooltip = document.getElementById("tooltip");
  const ratio = window.devicePixelRatio || 1;

  function palette(key) {  // the most frequent values over every row get a colour, the rest share OTHER
    const counts = new Map();
    fields[key].forEach((v) => counts.set(v, (counts.get(v) || 0) + 1));
    const ranked = Array.from(counts.keys()).sort((a, b) => counts.get(b) - counts.get(a) || (a < b ? -1 : a > b ? 1 : 0));
    const colours = new Map(ranked.slice(0, PALETTE.length).map((v, k) => [v, PALETTE[k]]));
    return { colours, colourOf: (v) => colours.get(v) || OTHER, others: ranked.length > PALETTE.length };
  }

  function tickLabel(exponent) {
    const v = Math.pow(10, exponent);
    return v < 1000 ? v + " ms" : v / 1000 + " s";
  }

  function drawPlots() {
    const key = state.colour, { colours, colourOf, others } = palette(key), values = fields[key];
    const inView = new Map();
    matching.forEach((i) => {
      const v = colours.has(values[i]) ? values[i] : null;
      inView.set(v, (inView.get(v) || 0) + 1);
    });
    legend.innerHTML = Array.from(colours.keys()).map((v) => '<li><i style="background:' + colours.get(v) + '"></i>' + esc(v || "(none)") + " (" + (inView.get(v) || 0) + ")</li>").join("")
      + (others ? '<li><i style="background:' + OTHER + '"></i>other (' + (inView.get(null) || 0) + ")</li>" : "");
    figures.forEach((figure) => drawScatter(figure, colourOf, values));
  }

  function drawScatter(figure, colourOf, values) {
    const canvas = figure.querySelector("canvas"), metric = figure.dataset.metric, axis = data.axes[metric];
    const width = parseInt(canvas.getAttribute("width"), 10), height = parseInt(canvas.getAttribute("height"), 10);
    if (!canvas.style.width) {
      canvas.style.width = width + "px";
      canvas.style.height = height + "px";
      canvas.width = width * ratio;
      canvas.height = height * ratio;
    }
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    figure.points = [];
    if (!axis) { figure.querySelector("figcaption").textContent = figure.dataset.method + ": no predictions"; return; }
    const [lo, hi] = axis, { left, top, side } = BOX;
    const px = (v) => ((Math.log10(v) - lo) / (hi - lo)) * side;
    ctx.font = "9px system-ui, sans-serif";
    ctx.fillStyle = "#57606a";
    for (let e = lo; e <= hi; e += 1) {
      const at = px(Math.pow(10, e));
      ctx.strokeStyle = "#eaeef2";
      ctx.beginPath(); ctx.moveTo(left + at, top); ctx.lineTo(left + at, top + side); ctx.moveTo(left, top + side - at); ctx.lineTo(left + side, top + side - at); ctx.stroke();
      ctx.textAlign = "center"; ctx.fillText(tickLabel(e), left + at, top + side + 12);
      ctx.textAlign = "right"; ctx.fillText(tickLabel(e), left - 4, top + side - at + 3);
    }
    ctx.save();
    ctx.beginPath(); ctx.rect(left, top, side, side); ctx.clip();
    ctx.strokeStyle = "#1f6feb";
    [1, 0.8, 1.2].forEach((factor, k) => {
      ctx.setLineDash(k ? [4, 3] : []);
      ctx.beginPath(); ctx.moveTo(left, top + side - px(Math.pow(10, lo) * factor)); ctx.lineTo(left + side, top + side - px(Math.pow(10, hi) * factor)); ctx.stroke();
    });
    ctx.setLineDash([]);
    const pred = fields[figure.dataset.method + "_" + metric + "_ms"], meas = fields[metric + "_meas_ms"];
    ctx.globalAlpha = 0.6;
    matching.forEach((i) => {
      if (!(pred[i] > 0 && meas[i] > 0)) { return; }
      const x = left + px(meas[i]), y = top + side - px(pred[i]);
      ctx.fillStyle = colourOf(values[i]);
      ctx.beginPath(); ctx.arc(x, y, RADIUS, 0, 2 * Math.PI); ctx.fill();
      figure.points.push([x, y, i]);
    });
    ctx.restore();
    ctx.strokeStyle = "#57606a";
    ctx.strokeRect(left, top, side, side);
    ctx.fillStyle = "#1d232a"; ctx.font = "11px system-ui, sans-serif"; ctx.textAlign = "center";
    ctx.fillText("measured " + metric.toUpperCase(), left + side / 2, top + side + 28);
    ctx.save(); ctx.translate(12, top + side / 2); ctx.rotate(-Math.PI / 2); ctx.fillText("predicted " + metric.toUpperCase(), 0, 0); ctx.restore();
    figure.querySelector("figcaption").textContent = figure.dataset.method + ": " + metric.toUpperCase() + " (" + figure.points.length + " points)";
  }

  figures.forEach((figure) => {
    const canvas = figure.querySelector("canvas");
    canvas.addEventListener("mousemove", (event) => {
      const box = canvas.getBoundingClientRect(), mx = event.clientX - box.left, my = event.clientY - box.top;
      let best = null, bestDistance = 36;  // within 6 px
      figure.points.forEach((p) => {
        const d = (p[0] - mx) * (p[0] - mx) + (p[1] - my) * (p[1] - my);
        if (d < bestDistance) { best = p[2]; bestDistance = d; }
      });
      if (best === null) { tooltip.hidden = true; return; }
      const metric = figure.dataset.metric, method = figure.dataset.method;
      tooltip.textContent = fields.id[best] + "\n" + state.colour + ": " + fields[state.colour][best]
        + "\nmeasured " + format("ms", fields[metric + "_meas_ms"][best]) + " ms\npredicted " + format("ms", fields[method + "_" + metric + "_ms"][best])
        + " ms\nerror " + format("err", fields[method + "_" + metric + "_err"][best]);
      tooltip.style.left = event.clientX + 14 + "px";
      tooltip.style.top = event.clientY + 14 + "px";
      tooltip.hidden = false;
    });
    canvas.addEventListener("mouseleave", () => { tooltip.hidden = true; });
  });
  colourBy.value = state.colour;
  colourBy.addEventListener("change", () => { state.colour = colourBy.value; drawPlots(); });

  document.querySelectorAll(".needs-script").forEach((element) => { element.hidden = false; });  // hidden while JavaScript is off
  applyFilter();
  renderTable();
  drawPlots();
  if (location.hash.startsWith("#points?")) { document.getElementById("points").scrollIntoView(); }
  document.body.dataset.ready = "yes";
}());
