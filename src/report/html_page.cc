// The HTML report's page: style and script, with no outside resource (html.h). The data
// goes between kHtmlPageHead and kHtmlPageTail as JSON; the script draws everything from
// it, so the page works from a file:// URL with no network.
#include <string_view>

namespace weft {

extern const std::string_view kHtmlPageHead;
extern const std::string_view kHtmlPageTail;

const std::string_view kHtmlPageHead = R"PAGE(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>weft report</title>
<style>
:root { --ink:#1d2430; --muted:#5b6577; --line:#e3e7ee; --bg:#f6f8fb; --card:#fff;
        --accent:#2f6fde; --warn:#b4531a; }
* { box-sizing:border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
       color:var(--ink); background:var(--bg); }
header { background:#17202f; color:#fff; padding:18px 28px 14px; }
header h1 { margin:0; font-size:20px; font-weight:600; }
header .sub { color:#aab6c8; margin-top:4px; }
nav { display:flex; gap:18px; margin-top:10px; }
nav a { color:#cfe0ff; text-decoration:none; font-size:13px; }
main { padding:18px 28px 40px; max-width:1400px; }
section { background:var(--card); border:1px solid var(--line); border-radius:8px;
          padding:14px 18px; margin-bottom:18px; }
h2 { font-size:16px; margin:0 0 10px; }
.note { color:var(--muted); font-size:12.5px; margin:6px 0; }
.cards { display:flex; flex-wrap:wrap; gap:12px; margin-bottom:18px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:10px 16px;
        min-width:150px; }
.card .v { font-size:20px; font-weight:600; }
.card .k { color:var(--muted); font-size:12px; }
table { border-collapse:collapse; width:100%; }
th { text-align:left; font-weight:600; color:var(--muted); font-size:12px; border-bottom:1px solid var(--line);
     padding:6px 8px; white-space:nowrap; }
td { padding:6px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
tr.pattern { cursor:pointer; }
tr.pattern:hover { background:#f1f5fd; }
tr.pattern td.shape { font-family:ui-monospace,"DejaVu Sans Mono",monospace; font-size:12.5px; }
.caret { display:inline-block; width:14px; color:var(--muted); }
.share { display:inline-block; height:8px; background:var(--accent); border-radius:2px; vertical-align:middle;
         margin-right:6px; }
tr.detail > td { background:#fafbfd; padding:10px 14px 14px; }
.tree { font-size:13px; }
.el { display:grid; grid-template-columns:minmax(260px,1fr) 170px 260px; gap:10px; align-items:center;
      padding:3px 0; border-bottom:1px dashed #edf0f5; }
.el .who { font-family:ui-monospace,"DejaVu Sans Mono",monospace; font-size:12.5px; overflow-wrap:anywhere; }
.el .attrs { color:var(--muted); font-size:12px; font-family:ui-monospace,"DejaVu Sans Mono",monospace; }
.badge { display:inline-block; font-size:10.5px; font-weight:600; padding:0 5px; border-radius:3px;
         margin-right:6px; color:#fff; background:#6b7a90; }
.badge.C { background:#2f6fde; } .badge.M { background:#7a4fc9; } .badge.R { background:#3b8a5a; }
.q { font-size:12px; color:var(--muted); font-variant-numeric:tabular-nums; }
.controls { display:flex; flex-wrap:wrap; gap:10px; align-items:center; margin-bottom:8px; }
select, input[type=search] { font:inherit; padding:4px 8px; border:1px solid #c9d1de; border-radius:5px; }
select { max-width:640px; }
input[type=search] { width:260px; }
button.pick { font:inherit; font-size:12px; border:1px solid #c9d1de; background:#fff; border-radius:4px;
              padding:2px 8px; cursor:pointer; }
button.pick:hover { background:#eef3fc; }
#waterfall-info { font-size:13px; margin:6px 0 8px; }
#waterfall svg text { font-family:system-ui,"DejaVu Sans",sans-serif; }
.span { cursor:default; }
.span:hover { stroke:#111; stroke-width:1; }
.hists { display:grid; grid-template-columns:repeat(auto-fill,minmax(330px,1fr)); gap:14px; }
.hist { border:1px solid var(--line); border-radius:6px; padding:8px 10px; }
.hist .name { font-weight:600; font-family:ui-monospace,"DejaVu Sans Mono",monospace; font-size:12.5px; }
pre { background:#f3f5f9; padding:10px 12px; border-radius:6px; overflow-x:auto; font-size:12px; }
.notice { background:#fff7e6; border:1px solid #f1d39a; border-radius:8px; padding:10px 14px; margin-bottom:14px; }
</style>
</head>
<body>
<header><h1 id="title">weft report</h1><div class="sub" id="subtitle"></div>
<nav><a href="#patterns">Patterns</a><a href="#requests">Requests</a><a href="#delays">Node delays</a><a href="#accuracy" id="nav-accuracy">Accuracy</a></nav></header>
<main>
<div class="notice" id="notice" hidden></div>
<div class="cards" id="cards"></div>
<section id="patterns"><h2>Path patterns</h2>
<div class="note">Ranked as asked on the command line. Click a pattern for its call tree: each call with the
delay before it was sent and how long it took (its visit), as percentiles and a histogram on a log scale.</div>
<table><thead><tr><th class="num">#</th><th class="num">count</th><th>share</th><th class="num">p50</th>
<th class="num">p90</th><th class="num">p99</th><th>shape</th></tr></thead><tbody id="pattern-rows"></tbody></table>
</section>
<section id="requests"><h2>Requests</h2>
<div class="note" id="requests-note"></div>
<div class="controls" id="request-controls"><label>request <select id="request-select"></select></label>
<input type="search" id="request-search" placeholder="find: request id, node, url, sql…">
<span class="note" id="search-note"></span></div>
<div id="slowest-picks" class="controls"></div>
<div id="waterfall-info"></div>
<div id="waterfall"></div>
</section>
<section id="delays"><h2>Node delays</h2>
<div class="note">Each node's own time before it sends (WAP5 Figure 11): from a message's arrival to the node's
first call, or to its reply when it made no calls. Times that include callees or an untraced node are left out.</div>
<div class="hists" id="delay-hists"></div>
</section>
<section id="accuracy"><h2>Accuracy</h2><div class="note" id="accuracy-note"></div>
<div class="cards" id="accuracy-cards"></div><pre id="accuracy-text"></pre></section>
</main>
<script type="application/json" id="weft-data">)PAGE";

const std::string_view kHtmlPageTail = R"PAGE(</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("weft-data").textContent);
const SVGNS = "http://www.w3.org/2000/svg";

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
function sv(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
function dur(ns) {
  if (ns === null || ns === undefined) return "?";
  const a = Math.abs(ns);
  if (a < 1e3) return ns.toFixed(0) + " ns";
  if (a < 1e6) return (ns / 1e3).toPrecision(3) + " µs";
  if (a < 1e9) return (ns / 1e6).toPrecision(3) + " ms";
  return (ns / 1e9).toPrecision(4) + " s";
}
// A count; alternatives (linking) weigh by probability, so counts are expected counts.
function count(n) { return Number.isInteger(n) ? n.toLocaleString() : n.toFixed(1); }
function pct(x) { return (100 * x).toFixed(x < 0.001 ? 3 : 1) + "%"; }
// Text width, measured conservatively (wider than any real glyph run of that length).
function textWidth(s, size) { return s.length * size * 0.62 + 4; }
const PALETTE = ["#3b7dd8", "#e07b39", "#3a9a5b", "#c0504d", "#8064a2", "#2c9fa3", "#b5892b",
                 "#d05ca0", "#5f7f2f", "#6b6fd6"];
function colorOf(i) { return PALETTE[i % PALETTE.length]; }

// A histogram drawn small: bars per half octave on a log axis; the tooltip of a bar says
// its range and count.
function histogramSvg(h, width, height, color) {
  const s = sv("svg", {width: width, height: height + 14, class: "histogram"});
  const bins = h.bins || [];
  if (!bins.length) { s.appendChild(sv("text", {x: 0, y: 12, "font-size": 11, fill: "#888"}, "no positive values")); return s; }
  let peak = 1;
  for (const b of bins) peak = Math.max(peak, b[2]);
  const w = width / bins.length;
  bins.forEach((b, i) => {
    const bh = b[2] ? Math.max(1.5, (height - 2) * b[2] / peak) : 0;
    const r = sv("rect", {x: (i * w + 0.5).toFixed(1), y: (height - bh).toFixed(1), width: Math.max(1, w - 1).toFixed(1),
                          height: bh.toFixed(1), fill: color});
    r.appendChild(sv("title", {}, dur(b[0]) + " – " + dur(b[1]) + ": " + count(b[2])));
    s.appendChild(r);
  });
  s.appendChild(sv("line", {x1: 0, x2: width, y1: height + 0.5, y2: height + 0.5, stroke: "#bbb"}));
  const lo = dur(bins[0][0]), hi = dur(bins[bins.length - 1][1]);
  s.appendChild(sv("text", {x: 0, y: height + 12, "font-size": 10, fill: "#666"}, lo));
  s.appendChild(sv("text", {x: width, y: height + 12, "font-size": 10, fill: "#666", "text-anchor": "end"}, hi));
  return s;
}
function quantiles(h) { return "p50 " + dur(h.p50) + " · p90 " + dur(h.p90) + " · p99 " + dur(h.p99); }

// ---- header and cards
document.getElementById("title").textContent = "weft report — " + D.title;
document.title = "weft report — " + D.title;
document.getElementById("subtitle").textContent = "paths inferred by " + D.algorithm + " from a trace of " +
    D.trace_messages.toLocaleString() + " messages" + (D.probabilistic ? " (instances have probabilities)" : "");
if (D.notice) {
  const n = document.getElementById("notice");
  n.textContent = D.notice;
  n.hidden = false;
}
function card(parent, value, key) {
  const c = el("div", {class: "card"});
  c.appendChild(el("div", {class: "v"}, value));
  c.appendChild(el("div", {class: "k"}, key));
  parent.appendChild(c);
}
{
  const cards = document.getElementById("cards");
  card(cards, D.instances.toLocaleString(), "requests (path instances)");
  card(cards, D.patterns_total.toLocaleString(), "path patterns");
  if (D.patterns.length) card(cards, dur(D.patterns[0].latency.p50), "p50 latency of pattern 1");
  if (D.accuracy && D.accuracy.figures.length) card(cards, D.accuracy.figures[0][1], D.accuracy.figures[0][0]);
}

// ---- patterns
function patternTree(p) {
  const box = el("div", {class: "tree"});
  const depth = [];
  const returnOf = {};
  p.elements.forEach((e, k) => { if (e.kind === "R" && e.parent >= 0) returnOf[e.parent] = k; });
  p.elements.forEach((e, k) => {
    depth[k] = e.parent < 0 ? 0 : depth[e.parent] + 1;
    if (e.kind === "R") return;
    const row = el("div", {class: "el"});
    const who = el("div", {class: "who", style: "padding-left:" + (18 * depth[k]) + "px"});
    who.appendChild(el("span", {class: "badge " + e.kind}, e.kind === "C" ? "CALL" : "MSG"));
    who.appendChild(document.createTextNode(e.from + " → " + e.to));
    if (e.attrs) { who.appendChild(el("br")); who.appendChild(el("span", {class: "attrs"}, e.attrs)); }
    row.appendChild(who);
    const ret = returnOf[k] !== undefined ? p.elements[returnOf[k]] : null;
    const q = el("div", {class: "q"});
    if (e.delay) q.appendChild(el("div", {}, "sent after " + dur(e.delay.p50) + " (p50)"));
    if (ret && ret.delay) {
      q.appendChild(el("div", {}, (ret.round_trip ? "round trip " : "took ") + dur(ret.delay.p50) + " p50"));
      q.appendChild(el("div", {}, "p90 " + dur(ret.delay.p90) + " · p99 " + dur(ret.delay.p99)));
    }
    row.appendChild(q);
    const hist = el("div");
    const h = ret && ret.delay ? ret.delay : e.delay;
    if (h) hist.appendChild(histogramSvg(h, 250, 28, e.kind === "M" ? "#7a4fc9" : "#2f6fde"));
    row.appendChild(hist);
    box.appendChild(row);
  });
  return box;
}
{
  const body = document.getElementById("pattern-rows");
  let maxShare = 0;
  for (const p of D.patterns) maxShare = Math.max(maxShare, p.share);
  for (const p of D.patterns) {
    const tr = el("tr", {class: "pattern", "data-rank": p.rank});
    const first = el("td", {class: "num"});
    first.appendChild(el("span", {class: "caret"}, "▸"));
    first.appendChild(document.createTextNode(p.rank));
    tr.appendChild(first);
    tr.appendChild(el("td", {class: "num"}, p.count.toLocaleString() +
                   (D.probabilistic ? " (" + p.expected.toFixed(1) + ")" : "")));
    const share = el("td", {class: "num", style: "text-align:left"});
    share.appendChild(el("span", {class: "share", style: "width:" + (80 * p.share / (maxShare || 1)).toFixed(1) + "px"}));
    share.appendChild(document.createTextNode(pct(p.share)));
    tr.appendChild(share);
    for (const k of ["p50", "p90", "p99"]) tr.appendChild(el("td", {class: "num"}, dur(p.latency[k])));
    tr.appendChild(el("td", {class: "shape"}, p.shape));
    body.appendChild(tr);
    const detail = el("tr", {class: "detail", hidden: ""});
    const td = el("td", {colspan: 7});
    detail.appendChild(td);
    body.appendChild(detail);
    tr.addEventListener("click", () => {
      if (!td.firstChild) {
        const lat = el("div", {class: "q"}, "end to end: " + quantiles(p.latency) + " · mean " + dur(p.latency.mean) +
                       " · max " + dur(p.latency.max) + " · " + count(p.latency.n) + " requests" +
                       (D.weighted ? " (expected, weighted by probability)" : ""));
        td.appendChild(lat);
        td.appendChild(histogramSvg(p.latency, 420, 40, "#3b7dd8"));
        td.appendChild(patternTree(p));
        const examples = (D.requests ? D.requests.items : []).filter(r => r.pattern === p.index)
            .sort((a, b) => b.latency - a.latency).slice(0, 8);
        if (examples.length) {
          const line = el("div", {class: "controls", style: "margin-top:8px"});
          line.appendChild(el("span", {class: "note"}, "waterfall of:"));
          for (const r of examples) {
            const b = el("button", {class: "pick"}, "#" + r.id + " · " + dur(r.latency));
            b.addEventListener("click", (ev) => { ev.stopPropagation(); showRequest(r.id, true); });
            line.appendChild(b);
          }
          td.appendChild(line);
        }
      }
      const open = detail.hasAttribute("hidden");
      if (open) detail.removeAttribute("hidden"); else detail.setAttribute("hidden", "");
      first.firstChild.textContent = open ? "▾" : "▸";
    });
  }
  if (D.patterns.length < D.patterns_total) {
    const tr = el("tr");
    tr.appendChild(el("td", {colspan: 7, class: "note"}, "the first " + D.patterns.length + " of " + D.patterns_total +
                   " patterns (--top)"));
    body.appendChild(tr);
  }
}

// ---- waterfalls
// A nice tick step: 1, 2 or 5 times a power of ten, giving about `n` ticks over `span`.
function tickStep(span, n) {
  const raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}
const byId = new Map();
if (D.requests) for (const r of D.requests.items) byId.set(r.id, r);

function first(...xs) { for (const x of xs) if (x !== null && x !== undefined) return x; return null; }

// One lane per node; each CALL or MSG a bar on the lane of the node that handled it, from
// its arrival there to that node's reply (a CALL), with the whole round trip as seen by
// the caller drawn faintly behind; the root's caller gets the request as it saw it. Bars
// that overlap in one lane go on rows of their own.
function drawWaterfall(r) {
  const box = document.getElementById("waterfall");
  box.textContent = "";
  const spans = r.spans.map((s, i) => {
    const start = first(s.recv, s.send, 0);
    const end = Math.max(start, first(s.ret_send, s.ret_recv, s.recv, s.send, start));
    const outerStart = first(s.send, s.recv, start);
    const outerEnd = Math.max(end, first(s.ret_recv, s.ret_send, end));
    return {i: i, s: s, lane: s.to, start: start, end: end, outerStart: Math.min(outerStart, start), outerEnd: outerEnd};
  });
  let tmax = r.latency;
  for (const x of spans) tmax = Math.max(tmax, x.outerEnd);
  if (tmax <= 0) tmax = 1;
  const rowH = 22, laneGap = 8, top = 34, labelW = Math.min(260, Math.max(90, ...r.lanes.map(n => textWidth(n, 12.5)))) + 16;
  const width = Math.max(900, box.clientWidth || 1100);
  const plotW = width - labelW - 24;
  const x = t => labelW + plotW * t / tmax;
  // Each bar's label: inside the bar if it fits, else right of its band, else left of it,
  // else none (the tooltip has it). Bars are packed into rows with their labels, so that
  // nothing drawn in a row overlaps.
  for (const c of spans) {
    let label = (c.s.attrs ? c.s.attrs.split(" ").map(a => a.slice(a.indexOf("=") + 1)).join(" ") + " · " : "") +
                dur(c.end - c.start);
    if (label.length > 60) label = label.slice(0, 57) + "…";
    const lw = textWidth(label, 11), bw = Math.max(2, x(c.end) - x(c.start));
    c.left = x(c.outerStart); c.right = Math.max(x(c.outerEnd), x(c.start) + bw);
    c.label = label; c.anchor = "start"; c.labelFill = "#1d2430";
    if (lw + 6 <= bw) { c.lx = x(c.start) + 4; c.labelFill = "#fff"; }
    else if (c.right + 4 + lw <= width - 2) { c.lx = c.right + 4; c.right = c.lx + lw; }
    else if (c.left - 4 - lw >= labelW) { c.lx = c.left - 4; c.anchor = "end"; c.left = c.lx - lw; }
    else c.label = null;
  }
  const lanes = r.lanes.map((name) => ({name: name, rows: []}));
  const root = spans.length ? spans[0] : null;
  const clientLane = root ? root.s.from : -1;
  // Row 0 of the client's lane is its own view of the request.
  if (root) lanes[clientLane].rows.push([[x(root.outerStart), Math.max(x(root.outerEnd), x(root.outerStart) + 2)]]);
  const placed = [];
  for (const c of spans) {
    const lane = lanes[c.lane];
    const free = row => row.every(iv => c.right + 3 <= iv[0] || iv[1] + 3 <= c.left);
    let row = 0;
    while (row < lane.rows.length && !free(lane.rows[row])) row++;
    if (row === lane.rows.length) lane.rows.push([]);
    lane.rows[row].push([c.left, c.right]);
    c.row = row;
    placed.push(c);
  }
  let y = top;
  for (const lane of lanes) { lane.y = y; lane.h = Math.max(1, lane.rows.length) * rowH + laneGap; y += lane.h; }
  const height = y + 10;
  const s = sv("svg", {width: width, height: height, id: "waterfall-svg"});
  // Lanes: shaded bands, names on the left (cut to fit, full name in the tooltip).
  lanes.forEach((lane, i) => {
    s.appendChild(sv("rect", {x: 0, y: lane.y, width: width, height: lane.h, fill: i % 2 ? "#fbfcfe" : "#f2f5fa"}));
    let name = lane.name;
    while (name.length > 4 && textWidth(name, 12.5) > labelW - 14) name = name.slice(0, -2);
    if (name !== lane.name) name = name.slice(0, -1) + "…";
    const t = sv("text", {x: 8, y: lane.y + 15, "font-size": 12.5, "font-weight": 600, fill: colorOf(i)}, name);
    t.appendChild(sv("title", {}, lane.name));
    s.appendChild(t);
  });
  s.appendChild(sv("line", {x1: labelW, x2: labelW, y1: top - 6, y2: height - 10, stroke: "#c9d1de"}));
  // The time axis: ticks and grid lines; the last label kept inside the drawing.
  const step = tickStep(tmax, Math.max(2, Math.floor(plotW / 110)));
  for (let t = 0; t <= tmax + 1e-9; t += step) {
    const xx = x(t);
    s.appendChild(sv("line", {x1: xx, x2: xx, y1: top - 6, y2: height - 10, stroke: "#e1e6ee"}));
    const label = dur(t);
    const anchor = xx + textWidth(label, 11) / 2 > width - 4 ? "end" : "middle";
    s.appendChild(sv("text", {x: xx, y: top - 12, "font-size": 11, fill: "#5b6577", "text-anchor": anchor}, label));
  }
  // The client's own view of the request.
  if (root) {
    const lane = lanes[clientLane];
    const yy = lane.y + 4;
    const b = sv("rect", {x: x(root.outerStart), y: yy, width: Math.max(2, x(root.outerEnd) - x(root.outerStart)),
                          height: rowH - 8, rx: 3, fill: colorOf(clientLane), opacity: 0.85, class: "client"});
    b.appendChild(sv("title", {}, lane.name + " waits " + dur(root.outerEnd - root.outerStart) + " for the reply"));
    s.appendChild(b);
  }
  // Connectors: from the caller's row down (or up) to the callee's row at the send.
  for (const c of placed) {
    if (c.s.parent < 0 && c.s.from !== clientLane) continue;
    let fromY;
    if (c.s.parent >= 0) { const p = spans[c.s.parent]; fromY = lanes[p.lane].y + p.row * rowH + rowH / 2; }
    else fromY = lanes[clientLane].y + rowH / 2;
    const toY = lanes[c.lane].y + c.row * rowH + rowH / 2;
    const xx = x(c.outerStart);
    s.appendChild(sv("line", {x1: xx, x2: xx, y1: fromY, y2: toY, stroke: "#9aa5b6", "stroke-dasharray": "2,2"}));
  }
  for (const c of placed) {
    const lane = lanes[c.lane];
    const yy = lane.y + c.row * rowH + 4;
    const color = colorOf(c.lane);
    // The caller's view (send to reply's arrival) as a thin band.
    s.appendChild(sv("rect", {x: x(c.outerStart), y: yy + 5, width: Math.max(1, x(c.outerEnd) - x(c.outerStart)),
                              height: rowH - 18, fill: color, opacity: 0.28}));
    const bw = Math.max(2, x(c.end) - x(c.start));
    const bar = sv("rect", {x: x(c.start), y: yy, width: bw, height: rowH - 8, rx: 2, fill: color, class: "span",
                            "data-span": c.i});
    const from = r.lanes[c.s.from], to = r.lanes[c.s.to];
    const kind = c.s.kind === "C" ? "CALL" : "MSG";
    let tip = kind + " " + from + " → " + to + "\nat +" + dur(c.start) + ", " + to + " took " + dur(c.end - c.start);
    if (c.s.kind === "C") tip += "\nround trip from " + from + ": " + dur(c.outerEnd - c.outerStart);
    if (c.s.attrs) tip += "\n" + c.s.attrs;
    bar.appendChild(sv("title", {}, tip));
    s.appendChild(bar);
    if (c.label) s.appendChild(sv("text", {x: c.lx, y: yy + 10.5, "font-size": 11, fill: c.labelFill,
                                           "text-anchor": c.anchor, "pointer-events": "none"}, c.label));
  }
  box.appendChild(s);
  const pattern = D.patterns.find(p => p.index === r.pattern);
  document.getElementById("waterfall-info").textContent = "request #" + r.id + " at " + r.start + ": " +
      dur(r.latency) + " end to end, " + r.spans.length + " calls and messages over " + r.lanes.length + " nodes" +
      (pattern ? ", pattern " + pattern.rank + " (" + pattern.shape + ")" : "") +
      (r.probability < 1 ? ", probability " + r.probability.toFixed(3) : "");
}

function showRequest(id, scroll) {
  const r = byId.get(id);
  if (!r) return false;
  const select = document.getElementById("request-select");
  if (![...select.options].some(o => Number(o.value) === id)) {
    select.appendChild(el("option", {value: id}, optionText(r)));
  }
  select.value = String(id);
  drawWaterfall(r);
  if (scroll) document.getElementById("requests").scrollIntoView();
  return true;
}
function optionText(r) {
  const p = D.patterns.find(p => p.index === r.pattern);
  return "#" + r.id + " · " + dur(r.latency) + " · " + (p ? p.shape : "pattern not shown");
}
function fillSelect(items) {
  const select = document.getElementById("request-select");
  select.textContent = "";
  for (const r of items) select.appendChild(el("option", {value: r.id}, optionText(r)));
}
{
  const note = document.getElementById("requests-note");
  if (!D.requests || !D.requests.total) {
    note.textContent = D.requests ? "No path instances in these paths, so no requests to draw." :
        "No waterfalls: give the trace the paths came from (--trace) to see requests one by one.";
    document.getElementById("request-controls").hidden = true;
  } else {
    const R = D.requests;
    note.textContent = "Each node is a lane; a bar is the time a node spent on a call it received, the faint band " +
        "behind it the round trip its caller saw. Hover a bar for its times and attributes. This page holds " +
        R.embedded.toLocaleString() + " of " + R.total.toLocaleString() + " requests: the " +
        R.slowest_prefix.toLocaleString() + " slowest and " + R.per_pattern + " per pattern shown " +
        "(slowest, median, fastest)" + (R.embedded < R.total ? "; --waterfalls N embeds more." : ".");
    const items = R.items.slice().sort((a, b) => b.latency - a.latency || a.id - b.id);
    fillSelect(items);
    const picks = document.getElementById("slowest-picks");
    picks.appendChild(el("span", {class: "note"}, "slowest:"));
    for (const r of items.slice(0, 8)) {
      const b = el("button", {class: "pick"}, "#" + r.id + " · " + dur(r.latency));
      b.addEventListener("click", () => showRequest(r.id, false));
      picks.appendChild(b);
    }
    document.getElementById("request-select").addEventListener("change", (e) => showRequest(Number(e.target.value), false));
    const search = document.getElementById("request-search");
    search.addEventListener("input", () => {
      const q = search.value.trim().toLowerCase();
      const found = !q ? items : items.filter(r => String(r.id) === q.replace(/^#/, "") ||
          r.lanes.some(n => n.toLowerCase().includes(q)) || r.spans.some(s => (s.attrs || "").toLowerCase().includes(q)));
      fillSelect(found);
      document.getElementById("search-note").textContent = q ? found.length + " match" + (found.length === 1 ? "" : "es") : "";
      if (found.length) showRequest(found[0].id, false);
    });
    if (items.length) showRequest(items[0].id, false);
  }
}

// ---- node delays
{
  const box = document.getElementById("delay-hists");
  if (!D.node_delays.length) box.appendChild(el("div", {class: "note"}, "no node delays in these paths"));
  D.node_delays.forEach((d, i) => {
    const h = el("div", {class: "hist"});
    h.appendChild(el("div", {class: "name"}, d.node));
    h.appendChild(el("div", {class: "q"}, count(d.n) + (D.weighted ? " delays (expected) · mean " : " delays · mean ") + dur(d.mean) + " · " + quantiles(d) +
                     " · max " + dur(d.max) + (d.negative ? " · " + count(d.negative) + " negative (clock skew)" : "")));
    h.appendChild(histogramSvg(d, 300, 60, colorOf(i)));
    box.appendChild(h);
  });
}

// ---- accuracy
if (D.accuracy) {
  document.getElementById("accuracy-note").textContent = "Scored against " + D.accuracy.source + ", as weft eval prints it.";
  const cards = document.getElementById("accuracy-cards");
  for (const f of D.accuracy.figures) card(cards, f[1], f[0]);
  document.getElementById("accuracy-text").textContent = D.accuracy.text;
} else {
  document.getElementById("accuracy").hidden = true;
  document.getElementById("nav-accuracy").hidden = true;
}
window.weftReady = true;
</script>
</body>
</html>
)PAGE";

}  // namespace weft
