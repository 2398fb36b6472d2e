/*
 * app.js - the pages of `tally view`. Every number shown comes from /api/view, which answers with
 * the JSON of `tally print --json` (the report models): this file formats and lays out, it never
 * computes a metric from events (it has none). The only arithmetic: the flame graph's layout of
 * the call tree, the sandwich (the call tree's nodes of one function merged) and the difference
 * of two experiments.
 *
 * A page is a function in PAGES: it fetches the views it needs with api() and fills <main>. A
 * view of the server without a page of its own is shown by the generic page (#/raw/NAME), so a
 * new report model is visible as soon as print serves it.
 *
 * State lives in the URL's hash (#/PAGE?exp=0&fn=main&t0=1.5&t1=2): reloading shows the same.
 * window.tally exposes what the end-to-end tests and the benchmark read (timings, flame rects).
 */
'use strict';

const S = { info: null, page: 'overview', exp: 0, expB: 1, fn: '', t0: null, t1: null,
            flameMode: 'flame', search: '', sort: '', metrics: '', cmpMetric: 'totalcpu',
            raw: '', dobj: '', mon: 0, block: '', counter: '', mpiBy: 'bytes', cache: new Map() };
const PAGES_ORDER = [['overview', 'Overview'], ['functions', 'Functions'],
  ['callers', 'Callers-callees'], ['flame', 'Flame graph'], ['sandwich', 'Sandwich'],
  ['timeline', 'Timeline'], ['source', 'Source'], ['disasm', 'Disassembly'], ['heap', 'Heap'],
  ['sync', 'Sync'], ['io', 'I/O'], ['data', 'Data objects'], ['mpi', 'MPI'], ['blocks', 'Blocks'],
  ['counters', 'Counters'], ['compare', 'Compare'], ['raw', 'All views']];
const T = window.tally = { timings: [], ready: false, page: null, flame: null, state: S };

/* ---- helpers ------------------------------------------------------------------------------- */

const $ = (sel, root) => (root || document).querySelector(sel);
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = v;
    else if (k === 'style') e.style.cssText = v; /* CSSOM: allowed by the page's CSP, attributes are not */
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k);
  return e;
}
function fmt(v, unit) {
  if (v === null || v === undefined) return '';
  if (typeof v !== 'number') return String(v);
  if (unit === 's') return v.toFixed(3);
  if (unit === '%') return v.toFixed(2);
  if (Number.isInteger(v)) return String(v);
  return Math.abs(v) >= 100 ? v.toFixed(1) : v.toPrecision(4);
}
function hue(name) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return h;
}
function color(name) {
  if (name.startsWith('<')) return '#b9c0cc';
  const h = hue(name);
  return `hsl(${10 + h % 45},${65 + (h >> 8) % 25}%,${55 + (h >> 16) % 15}%)`;
}
/* The selected time range (ns since the start of the run, t1 Infinity: to the end) as a filter. */
function rangeFilter() {
  if (S.t0 === null) return '';
  return `TSTAMP >= ${S.t0}` + (isFinite(S.t1) ? ` && TSTAMP < ${S.t1}` : '');
}
function rangeText() {
  return `${(S.t0 / 1e9).toFixed(3)} s – ${isFinite(S.t1) ? (S.t1 / 1e9).toFixed(3) + ' s' : 'the end'}`;
}
function frame() { return new Promise(r => requestAnimationFrame(() => setTimeout(r, 0))); }
/* Records how long an interaction took, from its event to the page painted. */
async function timed(what, t0, fn) {
  await fn();
  await frame();
  T.timings.push({ what, ms: performance.now() - t0 });
}

/* ---- the API ------------------------------------------------------------------------------- */

/* The JSON of one print view on experiment exp (default: the one shown), under the selected
 * time range unless whole; cached by URL (the experiment does not change while served). */
async function api(view, params, opts) {
  const o = opts || {};
  const p = { exp: o.exp !== undefined ? o.exp : S.exp, view, ...(params || {}) };
  const r = o.whole ? '' : rangeFilter();
  if (r) p.filters = p.filters ? `(${r}) && (${p.filters})` : r;
  const url = '/api/view?' + new URLSearchParams(p).toString();
  if (S.cache.has(url)) return S.cache.get(url);
  const res = await fetch(url);
  const j = await res.json();
  if (!res.ok) throw new Error(j.error || res.statusText);
  S.cache.set(url, j);
  return j;
}

/* ---- routing ------------------------------------------------------------------------------- */

function readHash() {
  const h = location.hash.replace(/^#\/?/, '');
  const [page, query] = h.split('?');
  const q = new URLSearchParams(query || '');
  S.page = PAGES[page] ? page : 'overview';
  S.exp = +(q.get('exp') || 0);
  if (!(S.exp >= 0 && S.exp < S.info.experiments.length)) S.exp = 0;
  S.expB = +(q.get('b') || (S.info.experiments.length > 1 ? 1 : 0));
  S.fn = q.get('fn') || '';
  S.t0 = q.has('t0') ? +q.get('t0') : null;
  S.t1 = q.has('t1') ? +q.get('t1') : null;
  S.raw = q.get('v') || '';
  S.dobj = q.get('obj') || '';
  S.mon = +(q.get('mon') || 0);
  S.block = q.get('block') || '';
  S.counter = q.get('counter') || '';
}
function writeHash(changes) {
  Object.assign(S, changes || {});
  const q = new URLSearchParams({ exp: S.exp });
  if (S.fn) q.set('fn', S.fn);
  if (S.t0 !== null) { q.set('t0', S.t0); q.set('t1', S.t1); }
  if (S.page === 'compare') q.set('b', S.expB);
  if (S.page === 'raw' && S.raw) q.set('v', S.raw);
  if (S.page === 'data' && S.dobj) q.set('obj', S.dobj);
  if (S.page === 'blocks' && S.mon) q.set('mon', S.mon);
  if (S.page === 'blocks' && S.block) q.set('block', S.block);
  if (S.page === 'counters' && S.counter) q.set('counter', S.counter);
  const h = `#/${S.page}?${q}`;
  if (location.hash !== h) location.hash = h; else render();
}
function go(page, changes) { writeHash({ page, ...(changes || {}) }); }
function focus(name) { go(S.page === 'overview' || S.page === 'timeline' ? 'callers' : S.page, { fn: name }); }

async function render() {
  const t0 = performance.now();
  T.ready = false;
  for (const a of document.querySelectorAll('#tabs a')) a.classList.toggle('on', a.dataset.page === S.page);
  $('#exp').value = S.exp;
  $('#range').hidden = S.t0 === null;
  if (S.t0 !== null) $('#range-text').textContent = rangeText();
  $('#focus').hidden = !S.fn;
  $('#focus-text').textContent = S.fn;
  const main = $('#main');
  const box = el('div');
  let after = null;
  try {
    after = await PAGES[S.page](box);
  } catch (e) {
    box.append(el('p', { class: 'error', text: e.message }));
  }
  main.replaceChildren(box);
  if (T.page !== S.page) window.scrollTo(0, 0); /* another page starts at its top */
  if (typeof after === 'function') after(); /* what needs the page laid out: canvas widths */
  T.page = S.page;
  await frame();
  T.timings.push({ what: 'page:' + S.page, ms: performance.now() - t0 });
  if (T.firstReady === undefined) T.firstReady = performance.now(); /* since the navigation */
  T.ready = true;
}

/* ---- tables -------------------------------------------------------------------------------- */

/* A table of a view's rows: columns by its "metrics" (value and, where the row has it, percent),
 * the name last (er_print's layout). onName: clicking a name. */
function metricTable(j, rows, opts) {
  const o = opts || {};
  const ms = j.metrics || [];
  const head = el('tr');
  for (const m of ms) {
    const th = el('th', { class: 'sortable' + (o.sort === m.name ? ' sorted' : ''), title: m.title,
      'data-m': m.name, text: m.title.replace(/^(Exclusive|Inclusive|Attributed) /, (w) => w.slice(0, 4) + '. ') });
    if (o.onSort) th.addEventListener('click', () => o.onSort(m.name));
    head.append(th);
    if (rows.some(r => r[m.name.replace('.', '.%')] !== undefined)) head.append(el('th', { text: '%' }));
  }
  const nameTh = el('th', { class: 'name sortable' + (o.sort === 'name' ? ' sorted' : ''), text: o.nameTitle || 'Name' });
  if (o.onSort) nameTh.addEventListener('click', () => o.onSort('name'));
  head.append(nameTh);
  const body = el('tbody');
  for (const r of rows) {
    const tr = el('tr', { class: r.name === '<Total>' ? 'total' : o.rowClass ? o.rowClass(r) : null, 'data-name': r.name });
    for (const m of ms) {
      tr.append(el('td', { 'data-m': m.name, text: fmt(r[m.name], m.unit) }));
      const pk = m.name.replace('.', '.%');
      if (rows.some(x => x[pk] !== undefined)) tr.append(el('td', { class: 'pct', text: r[pk] !== undefined ? fmt(r[pk], '%') : '' }));
    }
    const td = el('td', { class: 'name' });
    if (o.onName && r.name !== '<Total>') td.append(el('a', { text: r.name, onclick: () => o.onName(r.name) }));
    else td.textContent = r.name;
    tr.append(td);
    body.append(tr);
  }
  return el('table', { class: o.cls || 'metrics' }, el('thead', {}, head), body);
}

/* Any array of objects as a table (the generic page, heap, sync, I/O). */
function objTable(rows, opts) {
  const o = opts || {};
  const keys = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!keys.includes(k) && !(o.skip || []).includes(k)) keys.push(k);
  const head = el('tr', {}, keys.map(k => el('th', { class: typeof rows[0][k] === 'string' ? 'name' : null, text: k })));
  const body = el('tbody', {}, rows.map(r => el('tr', {}, keys.map(k => cell(r[k], k)))));
  return el('table', { class: o.cls || 'objects' }, el('thead', {}, head), body);
}
function stackText(st) { return st.map(f => f.function || f.name).join(' ← '); }
function cell(v, k) {
  if (Array.isArray(v) && v.length && (v[0].function || v[0].pc)) return el('td', { class: 'stack', text: stackText(v) });
  if (Array.isArray(v)) return el('td', { class: 'stack', text: v.length ? JSON.stringify(v).slice(0, 200) : '' });
  if (v && typeof v === 'object') return el('td', { class: 'stack', text: JSON.stringify(v).slice(0, 200) });
  if (typeof v === 'string') return el('td', { class: 'name', text: v });
  const unit = /time|wait|duration|cpu|^(start|user|system|wall|total|lock|sleep)$/.test(k) ? 's' : '';
  return el('td', { 'data-k': k, text: fmt(v, unit) });
}
function kv(obj, keys, prefix) {
  const dl = el('dl', { class: 'kv' });
  for (const [k, label, unit] of keys) {
    if (obj[k] === undefined) continue;
    dl.append(el('dt', { text: label }), el('dd', { 'data-k': (prefix || '') + k, text: fmt(obj[k], unit) + (unit === 's' ? ' s' : '') }));
  }
  return dl;
}
function searchBox(onInput, placeholder) {
  return el('input', { type: 'search', id: 'search', placeholder: placeholder || 'search names', value: S.search,
    oninput: (e) => { S.search = e.target.value; onInput(); } });
}

/* ---- pages --------------------------------------------------------------------------------- */

const PAGES = {};

PAGES.overview = async (box) => {
  const [ov, hd, th, sl] = await Promise.all([api('overview'), api('header', {}, { whole: true }),
    api('thread_list'), api('sample_list', {}, { whole: true })]);
  box.append(el('h2', { text: 'What was collected' }));
  for (const x of hd.experiments) for (const p of x.processes)
    box.append(el('p', {}, `${p.exe} (pid ${p.pid}${p.name ? ', ' + p.name : ''}): ${p.threads} thread${p.threads === 1 ? '' : 's'}, `,
      `clock profiling ${p.clock_interval_ns ? (p.clock_interval_ns / 1e6) + ' ms' : 'off'}, heap ${p.heap_tracing ? 'on' : 'off'}, `,
      `I/O ${p.io_tracing ? 'on' : 'off'}, sync ${p.sync_threshold_ns === null ? 'off' : 'on'}; ${p.ended}.`));
  box.append(kv(ov, [['duration', 'Duration', 's'], ['processes', 'Processes'], ['threads', 'Threads'], ['ended', 'Root process']], 'overview.'));
  box.append(el('h2', { text: 'Data quality' }));
  const share = ov.expected ? (100 * ov.samples / ov.expected).toFixed(1) + '% of expected' : '';
  box.append(kv(ov, [['samples', 'Samples recorded'], ['expected', 'Samples expected'], ['unwind_failures', 'Unwind failures'], ['dropped', 'Events dropped']], 'overview.'));
  if (share) box.append(el('p', { class: 'note', text: `${ov.samples} samples recorded, ${share}.` }));
  box.append(el('h2', { text: 'CPU and thread states' }));
  const states = [['user', 'User CPU', '#e07b39'], ['system', 'System CPU', '#c0392b'], ['wait', 'Wait CPU', '#f1c40f'],
    ['lock', 'User lock', '#8e44ad'], ['iowait', 'I/O wait', '#2f5fb3'], ['sleep', 'Sleep', '#b9c0cc']];
  const tot = states.reduce((a, s) => a + (ov[s[0]] || 0), 0) || 1;
  box.append(el('div', { class: 'split', title: 'share of the threads\' time in each state' },
    states.map(s => el('span', { style: `width:${100 * (ov[s[0]] || 0) / tot}%;background:${s[2]}`, title: s[1] }))));
  box.append(el('p', { class: 'legend' }, states.map(s => el('span', {}, el('i', { style: `background:${s[2]}` }), `${s[1]} `,
    el('b', { 'data-k': 'overview.' + s[0], text: fmt(ov[s[0]] || 0, 's') }), ' s'))));
  box.append(kv(ov, [['totalcpu', 'Total CPU time', 's'], ['total', 'Total thread time', 's']], 'overview.'));
  box.append(el('h2', { text: 'Threads' }), objTable(th.threads, { cls: 'threads' }));
  box.append(el('h2', { text: 'Samples' }), el('p', { class: 'note', text: 'Sample packets: the process\'s resources between one packet and the next. Click a row to select its time range.' }));
  const t = objTable(sl.samples, { cls: 'samples' });
  t.querySelectorAll('tbody tr').forEach((tr, i) => {
    const s = sl.samples[i];
    tr.style.cursor = 'pointer';
    tr.addEventListener('click', () => go('functions', { t0: Math.floor(s.start * 1e9), t1: Math.ceil((s.start + s.duration) * 1e9) }));
  });
  box.append(t);
};

PAGES.functions = async (box) => {
  const params = {};
  if (S.metrics) params.metrics = S.metrics;
  if (S.sort) params.sort = S.sort;
  const j = await api('functions', params);
  /* the metrics there are: asked after the table is drawn (the first view waits for no more) */
  const list = el('datalist', { id: 'mlist' });
  const avail = el('span', { class: 'note' });
  const mIn = el('input', { id: 'metrics', list: 'mlist', size: 40, placeholder: j.metrics.map(m => m.name).join(':') + ':name',
    value: S.metrics, onchange: (e) => { S.metrics = e.target.value.trim(); render(); } });
  api('metric_list', {}, { whole: true }).then((ml) => {
    list.replaceChildren(...ml.available.flatMap(m => [`e.${m.name}:i.${m.name}:name`, `e.%${m.name}:name`]).map(v => el('option', { value: v })));
    avail.textContent = `available: ${ml.available.map(m => m.name).join(', ')}`;
  }).catch(() => {});
  const hold = el('div');
  const draw = () => {
    const q = S.search.toLowerCase();
    const rows = j.rows.filter(r => r.name === '<Total>' || !q || r.name.toLowerCase().includes(q));
    hold.replaceChildren(metricTable(j, rows, { sort: S.sort || (j.metrics[0] && j.metrics[0].name),
      onSort: (m) => { const t0 = performance.now(); S.sort = m; timed('sort', t0, render); },
      onName: (n) => go('callers', { fn: n }) }));
  };
  box.append(el('div', { class: 'bar' }, searchBox(draw), el('label', {}, 'metrics ', mIn), list, avail));
  box.append(hold);
  draw();
};

/* The function the page is about: the focus, else the hottest by the default sort. */
async function focusFn() {
  if (S.fn) return S.fn;
  const j = await api('functions', { limit: 2 });
  return j.rows.length > 1 ? j.rows[1].name : '';
}

PAGES.callers = async (box) => {
  const fn = await focusFn();
  if (!fn) { box.append(el('p', { class: 'note', text: 'No function has data.' })); return; }
  const j = await api('csingle', { arg: fn });
  const e = j.entries[0];
  const pick = (n) => go('callers', { fn: n });
  box.append(el('h2', { text: `Callers and callees of ${e.function}` }),
    el('p', { class: 'bar' }, el('a', { href: '#', onclick: (ev) => { ev.preventDefault(); go('source', { fn: e.function }); }, text: 'source' }),
      el('a', { href: '#', onclick: (ev) => { ev.preventDefault(); go('disasm', { fn: e.function }); }, text: 'disassembly' }),
      el('a', { href: '#', onclick: (ev) => { ev.preventDefault(); go('sandwich', { fn: e.function }); }, text: 'sandwich' })));
  box.append(el('h3', { text: 'Callers (attributed)' }), metricTable(j, e.callers, { onName: pick, cls: 'callers' }));
  const selfMs = Object.keys(e.self).filter(k => k !== 'name').map(k => ({ name: k, title: (k[0] === 'e' ? 'Exclusive ' : 'Inclusive ') + k.slice(2), unit: 's' }));
  box.append(el('h3', { text: 'The function' }), metricTable({ metrics: selfMs }, [e.self], { cls: 'self', rowClass: () => 'self' }));
  box.append(el('h3', { text: 'Callees (attributed)' }), metricTable(j, e.callees, { onName: pick, cls: 'callees' }));
};

/* -- the flame graph: the call tree laid out once, drawn on a canvas -- */

/* Flat nodes {n name, v value, d depth, x start, p parent, k children, c colour index} of a
 * tree {name, children, [key]}, children in the tree's order (the model's: the heaviest first);
 * nodes.palette: the colours (a function's colour once, whatever its number of nodes). */
function layout(tree, key) {
  const nodes = [];
  const colors = new Map(), palette = [];
  const walk = (t, d, x, p) => {
    const i = nodes.length;
    const v = t[key] || 0;
    let c = colors.get(t.name);
    if (c === undefined) { c = palette.length; palette.push(color(t.name)); colors.set(t.name, c); }
    const node = { n: t.name, v, d, x, p, k: [], c };
    nodes.push(node);
    if (p >= 0) nodes[p].k.push(i);
    let cx = x;
    for (const ch of t.children || []) { walk(ch, d + 1, cx, i); cx += ch[key] || 0; }
  };
  walk(tree, 0, 0, -1);
  nodes.palette = palette;
  return nodes;
}

const HIT_COLOR = '#d63384', DIM_COLOR = '#dfe3ea', THIN_COLOR = '#c3c8d1';

class Flame {
  constructor(nodes, opts) {
    this.nodes = nodes; this.mode = opts.mode; this.unit = opts.unit || 's'; this.total = nodes[0].v || 1;
    this.zoom = 0; this.search = ''; this.rowH = 17;
    /* the frames drawn, n of them: node, x, y, width, colour (typed arrays, reused) */
    this.n = 0; this.cap = 0;
    this.palette = [...nodes.palette, HIT_COLOR, DIM_COLOR];
    this.depth = nodes.reduce((a, n) => Math.max(a, n.d), 0);
    this.canvas = el('canvas', { class: 'flame ' + opts.mode });
    this.canvas.addEventListener('click', (e) => this.click(e));
    this.canvas.addEventListener('mousemove', (e) => this.hover(e));
    this.canvas.addEventListener('mouseleave', () => { $('#tip').hidden = true; });
    this.onzoom = opts.onzoom;
  }
  /* The frames drawn as objects {i, x, y, w, h} (the tests and the benchmark read them). */
  get rects() {
    const out = [];
    for (let k = 0; k < this.n; k++) out.push({ i: this.ri[k], x: this.rx[k], y: this.ry[k], w: this.rw[k], h: this.rowH - 1 });
    return out;
  }
  /* The index of the frame under a mouse event, or -1. */
  hit(e) {
    const b = this.canvas.getBoundingClientRect();
    const x = e.clientX - b.left, y = e.clientY - b.top, h = this.rowH - 1;
    for (let k = 0; k < this.n; k++) {
      const rx = this.rx[k], ry = this.ry[k];
      if (x >= rx && x < rx + this.rw[k] && y >= ry && y < ry + h) return k;
    }
    return -1;
  }
  click(e) {
    const t0 = performance.now();
    const k = this.hit(e);
    if (k < 0) return;
    const i = this.ri[k];
    timed('zoom', t0, async () => { this.zoom = i; this.draw(); if (this.onzoom) this.onzoom(i); });
  }
  hover(e) {
    const k = this.hit(e), tip = $('#tip');
    if (k < 0) { tip.hidden = true; return; }
    const n = this.nodes[this.ri[k]];
    tip.textContent = `${n.n}: ${fmt(n.v, this.unit)} ${this.unit} (${(100 * n.v / this.total).toFixed(2)}%)`;
    tip.style.left = (e.clientX + 12) + 'px'; tip.style.top = (e.clientY + 12) + 'px'; tip.hidden = false;
  }
  /* Draws the zoomed node's subtree (frames narrower than 1 px and what is below them are not
   * visited: a zoom costs what is visible, not the size of the tree) and its ancestors. The
   * frames are gathered first and then filled a colour at a time: a fill style (a colour to
   * parse) per colour, not per frame. */
  draw() {
    const width = Math.max(300, (this.canvas.parentElement ? this.canvas.parentElement.clientWidth : 1000) - 4);
    const rows = Math.min(this.depth + 1, 900);
    const dpr = window.devicePixelRatio || 1;
    const H = rows * this.rowH, rh = this.rowH - 1;
    if (this.canvas.width !== width * dpr || this.canvas.height !== H * dpr) { /* (a resize reallocates) */
      this.canvas.width = width * dpr; this.canvas.height = H * dpr;
      this.canvas.style.width = width + 'px'; this.canvas.style.height = H + 'px';
    }
    const nodes = this.nodes, z = nodes[this.zoom];
    const scale = width / (z.v || 1);
    const q = this.search.toLowerCase();
    const HIT = this.palette.length - 2, DIM = HIT + 1;
    const flame = this.mode === 'flame', rowH = this.rowH;
    const labels = [];
    let n = 0;
    const put = (i, x, w, ci) => {
      if (n === this.cap) this.grow();
      const nd = nodes[i];
      const y = flame ? H - (nd.d + 1) * rowH : nd.d * rowH;
      this.ri[n] = i; this.rx[n] = x; this.ry[n] = y; this.rw[n] = w; this.rc[n] = ci;
      n++;
      if (w > 30) labels.push(i, x, y, w);
    };
    for (let p = z.p; p >= 0; p = nodes[p].p)
      if (nodes[p].d < rows) put(p, 0, width, q && nodes[p].n.toLowerCase().includes(q) ? HIT : DIM);
    /* Frames narrower than a pixel are not drawn one by one (on a large profile they are most
     * of the frames, and most of a zoom's cost): each run of narrow siblings is one grey frame,
     * "calls too narrow to draw", and what is below them is not visited. */
    const stack = [this.zoom];
    const least = 1 / scale; /* the value of a frame 1 px wide */
    const thin = [];
    const thinRun = (d, a, b) => {
      if ((b - a) * scale < 0.4) return;
      thin.push((a - z.x) * scale, flame ? H - (d + 1) * rowH : d * rowH, (b - a) * scale);
    };
    while (stack.length) {
      const i = stack.pop();
      const nd = nodes[i];
      put(i, (nd.x - z.x) * scale, nd.v * scale, q && nd.n.toLowerCase().includes(q) ? HIT : nd.c);
      if (nd.d + 1 >= rows) continue;
      const k = nd.k;
      let a = -1, b = 0; /* the run of narrow children [a, b) */
      for (let c = 0; c < k.length; c++) {
        const ch = nodes[k[c]];
        if (ch.v >= least) {
          if (a >= 0) { thinRun(nd.d + 1, a, b); a = -1; }
        } else {
          if (a < 0) a = ch.x;
          b = ch.x + ch.v;
        }
      }
      if (a >= 0) thinRun(nd.d + 1, a, b);
      for (let c = k.length - 1; c >= 0; c--) if (nodes[k[c]].v >= least) stack.push(k[c]);
    }
    this.n = n;
    /* by colour: a counting sort of the frames */
    const nc = this.palette.length;
    const start = new Uint32Array(nc + 1), order = new Uint32Array(n);
    for (let k = 0; k < n; k++) start[this.rc[k] + 1]++;
    for (let c = 0; c < nc; c++) start[c + 1] += start[c];
    const at = start.slice(0, nc);
    for (let k = 0; k < n; k++) order[at[this.rc[k]]++] = k;
    const g = this.canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, H);
    for (let c = 0; c < nc; c++) {
      if (start[c] === start[c + 1]) continue;
      g.fillStyle = this.palette[c];
      g.globalAlpha = q && c !== HIT ? 0.45 : 1;
      for (let o = start[c]; o < start[c + 1]; o++) {
        const k = order[o];
        g.fillRect(this.rx[k], this.ry[k], Math.max(this.rw[k] - 0.5, 0.4), rh);
      }
    }
    g.fillStyle = THIN_COLOR;
    g.globalAlpha = q ? 0.45 : 1;
    for (let t = 0; t < thin.length; t += 3) g.fillRect(thin[t], thin[t + 1], Math.max(thin[t + 2] - 0.5, 0.4), rh);
    this.thin = thin.length / 3;
    g.globalAlpha = 1;
    g.fillStyle = '#111';
    g.font = '11px system-ui, sans-serif';
    g.textBaseline = 'middle';
    for (let l = 0; l < labels.length; l += 4) { /* cut to the frame (about 6.5 px a character) */
      const name = nodes[labels[l]].n, x = labels[l + 1], y = labels[l + 2], w = labels[l + 3];
      const fit = Math.floor((w - 6) / 6.5);
      g.fillText(name.length > fit ? name.slice(0, Math.max(fit - 1, 1)) + '…' : name, x + 3, y + rowH / 2);
    }
    /* the matches below the zoom, invisible ones too; the outermost only: nested ones count once */
    let matched = 0;
    if (q) {
      const st = [[this.zoom, false]];
      while (st.length) {
        const [i, inside] = st.pop();
        const hit = nodes[i].n.toLowerCase().includes(q);
        if (hit && !inside) { matched += nodes[i].v; continue; }
        for (const k of nodes[i].k) st.push([k, inside || hit]);
      }
    }
    this.matched = q ? matched : null;
  }
  grow() {
    const cap = Math.max(1024, this.cap * 2);
    const copy = (T, a) => { const b = new T(cap); if (a) b.set(a); return b; };
    this.ri = copy(Uint32Array, this.ri); this.rc = copy(Uint32Array, this.rc);
    this.rx = copy(Float64Array, this.rx); this.ry = copy(Float64Array, this.ry); this.rw = copy(Float64Array, this.rw);
    this.cap = cap;
  }
  /* The client coordinates of the middle of the widest drawn node called name (tests). */
  find(name) {
    let best = -1;
    for (let k = 0; k < this.n; k++) if (this.nodes[this.ri[k]].n === name && (best < 0 || this.rw[k] > this.rw[best])) best = k;
    if (best < 0) return null;
    const b = this.canvas.getBoundingClientRect();
    return { x: b.left + this.rx[best] + Math.min(this.rw[best] / 2, 40), y: b.top + this.ry[best] + (this.rowH - 1) / 2, w: this.rw[best], value: this.nodes[this.ri[best]].v };
  }
}

PAGES.flame = async (box) => {
  const j = await api('calltree');
  const nodes = layout(j.tree, j.metric);
  const f = new Flame(nodes, { mode: S.flameMode, unit: 's' });
  T.flame = f;
  const info = el('span', { id: 'flame-info', class: 'note' });
  const status = () => {
    const z = nodes[f.zoom];
    info.textContent = `${j.metric}: ${fmt(z.v, 's')} s shown (${z.n})` +
      (f.matched !== null && f.matched !== undefined ? `; "${f.search}" matches ${fmt(f.matched, 's')} s, ${(100 * f.matched / (nodes[0].v || 1)).toFixed(2)}%` : '');
  };
  f.onzoom = status;
  const modeBtn = el('button', { id: 'flame-mode', text: S.flameMode === 'flame' ? 'icicle' : 'flame graph',
    onclick: () => { S.flameMode = S.flameMode === 'flame' ? 'icicle' : 'flame'; render(); } });
  const reset = el('button', { id: 'flame-reset', text: 'reset zoom', onclick: () => { f.zoom = 0; f.draw(); status(); } });
  const search = el('input', { type: 'search', id: 'flame-search', placeholder: 'highlight names', value: S.search,
    oninput: (e) => { const t0 = performance.now(); S.search = f.search = e.target.value; timed('search', t0, async () => { f.draw(); status(); }); } });
  f.search = S.search;
  box.append(el('div', { class: 'bar' }, modeBtn, reset, search, info),
    el('p', { class: 'note', text: `${S.flameMode === 'flame' ? 'Flame graph (callers below)' : 'Icicle (callers above)'}: width is inclusive ${j.metric}; click a frame to zoom, a wider frame below it to zoom out; calls narrower than a pixel are drawn together in grey.` }));
  const hold = el('div', { id: 'flame-hold' }, f.canvas);
  box.append(hold);
  return () => { f.draw(); status(); };
};

/* The sandwich of fn: its callers (the paths into it, merged, inverted) and its callees (its
 * subtrees merged), from the call tree; each occurrence counted once (the outermost). */
function sandwich(tree, key, fn) {
  const up = { name: fn, children: [], [key]: 0 }, down = { name: fn, children: [], [key]: 0 };
  const add = (into, t) => {
    into[key] += t[key] || 0;
    for (const c of t.children || []) {
      let k = into.children.find(x => x.name === c.name);
      if (!k) { k = { name: c.name, children: [], [key]: 0 }; into.children.push(k); }
      add(k, c);
    }
  };
  const walk = (t, path) => {
    if (t.name === fn) {
      add(down, t);
      up[key] += t[key] || 0;
      let into = up;
      for (let i = path.length - 1; i >= 0; i--) {
        let k = into.children.find(x => x.name === path[i].name);
        if (!k) { k = { name: path[i].name, children: [], [key]: 0 }; into.children.push(k); }
        k[key] += t[key] || 0;
        into = k;
      }
      return;
    }
    path.push(t);
    for (const c of t.children || []) walk(c, path);
    path.pop();
  };
  walk(tree, []);
  const order = (t) => { t.children.sort((a, b) => b[key] - a[key]); t.children.forEach(order); };
  order(up); order(down);
  return { up, down };
}

PAGES.sandwich = async (box) => {
  const fn = await focusFn();
  const j = await api('calltree');
  const { up, down } = sandwich(j.tree, j.metric, fn);
  box.append(el('h2', { text: `Sandwich of ${fn}: ${fmt(up[j.metric], 's')} s inclusive` }),
    el('p', { class: 'note', text: 'Above: who calls it (callers outwards); below: what it calls. Click to zoom.' }));
  const a = new Flame(layout(up, j.metric), { mode: 'flame' });
  const b = new Flame(layout(down, j.metric), { mode: 'icicle' });
  box.append(el('h3', { text: 'Callers' }), el('div', {}, a.canvas), el('h3', { text: 'Callees' }), el('div', {}, b.canvas));
  T.sandwich = { up: a, down: b };
  return () => { a.draw(); b.draw(); };
};

/* -- the timeline -- */

const STATE_COLORS = { '^': '#f1c40f', '=': '#8e44ad', '%': '#2f5fb3', '.': '#e3e6eb', ' ': '#ffffff' };

/* The cells of a time_functions model as typed arrays, with where each column starts (the model
 * sorts them by column): a range's sum then reads only its own columns. */
function indexModel(tf) {
  if (tf.ix) return tf.ix;
  const n = tf.cells.length;
  const ix = { start: new Uint32Array(tf.columns + 1), fn: new Uint32Array(n), e: new Float64Array(n), i: new Float64Array(n) };
  for (let k = 0; k < n; k++) {
    const c = tf.cells[k];
    ix.start[c[0] + 1] = k + 1;
    ix.fn[k] = c[1]; ix.e[k] = c[2]; ix.i[k] = c[3];
  }
  for (let c = 1; c <= tf.columns; c++) if (ix.start[c] < ix.start[c - 1]) ix.start[c] = ix.start[c - 1];
  tf.ix = ix;
  return ix;
}

/* The function table of columns ca..cb-1 of a time_functions model: the same rows and values as
 * the server's functions view under the filter of that range (report_range.c), summed here
 * (integers below 2^53: exact in doubles). */
function rangeTable(tf, ca, cb, limit) {
  const ix = indexModel(tf);
  const nf = tf.functions.length;
  const ex = new Float64Array(nf), inc = new Float64Array(nf), seen = new Uint8Array(nf);
  let total = 0;
  for (let k = ca; k < cb; k++) total += tf.totals[k];
  for (let k = ix.start[ca]; k < ix.start[cb]; k++) {
    const f = ix.fn[k];
    ex[f] += ix.e[k]; inc[f] += ix.i[k]; seen[f] = 1;
  }
  const m = tf.metric, sc = tf.scale;
  const rows = [];
  for (let f = 0; f < nf; f++) if (seen[f]) rows.push({ name: tf.functions[f], e: ex[f], i: inc[f] });
  rows.sort((a, b) => b.e - a.e || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const out = [{ name: '<Total>', e: total, i: total }, ...rows.slice(0, limit || rows.length)].map(r => ({
    name: r.name, ['e.' + m]: r.e * sc, ['e.%' + m]: total ? 100 * r.e / total : 0,
    ['i.' + m]: r.i * sc, ['i.%' + m]: total ? 100 * r.i / total : 0 }));
  return { metrics: [{ name: 'e.' + m, title: 'Exclusive ' + tf.title, unit: tf.unit },
    { name: 'i.' + m, title: 'Inclusive ' + tf.title, unit: tf.unit }], rows: out };
}

PAGES.timeline = async (box) => {
  const [tl, sl, tf] = await Promise.all([api('timeline', {}, { whole: true }),
    api('sample_list', {}, { whole: true }), api('time_functions', {}, { whole: true })]);
  const span = tl.end - tl.start;
  box.append(el('h2', { text: 'Timeline' }), el('p', { class: 'note', text:
    'Each thread against time: per column, its hottest function (or its main state when it mostly did not run). ' +
    `Drag across to select a time range (in steps of ${(tf.column_ns / 1e6).toFixed(1)} ms): every view then shows only that range.` }));
  const legend = el('p', { class: 'legend' }, Object.entries(tl.legend).map(([k, v]) =>
    el('span', {}, el('i', { style: `background:${STATE_COLORS[k] || color(v)}` }), v)));
  const rowH = 20, left = 130, width = Math.max(500, ($('#main').clientWidth || 1000) - 40);
  const H = (tl.threads.length + 1) * rowH + 18;
  const cv = el('canvas', { id: 'timeline' });
  const dpr = window.devicePixelRatio || 1;
  cv.width = width * dpr; cv.height = H * dpr; cv.style.width = width + 'px'; cv.style.height = H + 'px';
  const plotW = width - left - 10;
  const tx = (t) => left + (t - tl.start) / (span || 1) * plotW;
  const draw = (sel) => {
    const g = cv.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, H);
    g.font = '11px system-ui, sans-serif'; g.textBaseline = 'middle';
    tl.threads.forEach((th, r) => {
      const y = r * rowH + 2;
      g.fillStyle = '#1d2330';
      g.fillText(`thread ${th.thread} (${th.tid})`, 4, y + rowH / 2);
      const cw = plotW / tl.columns;
      for (let c = 0; c < th.cells.length; c++) {
        const ch = th.cells[c];
        g.fillStyle = STATE_COLORS[ch] || color(tl.legend[ch] || ch);
        g.fillRect(left + c * cw, y, Math.ceil(cw), rowH - 3);
      }
    });
    const ay = tl.threads.length * rowH + 6;
    g.fillStyle = '#687083';
    for (const s of sl.samples) g.fillRect(tx(s.start), ay, 1, 6);
    for (let k = 0; k <= 8; k++) {
      const t = tl.start + span * k / 8;
      g.fillText(t.toFixed(2) + ' s', Math.min(tx(t), width - 40), ay + 14);
    }
    if (sel) {
      g.fillStyle = 'rgba(47,95,179,0.25)';
      g.fillRect(tx(sel[0]), 0, tx(Math.min(sel[1], tl.end)) - tx(sel[0]), ay);
    }
  };
  const timeAt = (e) => {
    const b = cv.getBoundingClientRect();
    return Math.min(tl.end, Math.max(tl.start, tl.start + (e.clientX - b.left - left) / plotW * span));
  };
  const selected = () => S.t0 === null ? null : [S.t0 / 1e9, isFinite(S.t1) ? S.t1 / 1e9 : tl.end];
  let drag = null;
  cv.addEventListener('mousedown', (e) => { drag = [timeAt(e), timeAt(e)]; });
  cv.addEventListener('mousemove', (e) => { if (drag) { drag[1] = timeAt(e); draw([Math.min(...drag), Math.max(...drag)]); } });
  cv.addEventListener('mouseup', (e) => {
    if (!drag) return;
    const t0 = performance.now();
    const a = Math.min(drag[0], timeAt(e)), b = Math.max(drag[0], timeAt(e));
    drag = null;
    /* snapped to the model's columns, so that the sums are exactly the filter's */
    const ca = Math.min(tf.columns - 1, Math.floor(a * 1e9 / tf.column_ns));
    const cb = Math.max(ca + 1, Math.min(tf.columns, Math.ceil(b * 1e9 / tf.column_ns)));
    S.t0 = ca * tf.column_ns; S.t1 = cb >= tf.columns ? Infinity : cb * tf.column_ns;
    timed('range', t0, async () => { draw(selected()); fillTable(); });
    history.replaceState(null, '', `#/timeline?exp=${S.exp}&t0=${S.t0}&t1=${S.t1}`);
    $('#range').hidden = false;
    $('#range-text').textContent = rangeText();
  });
  const hold = el('div', { id: 'range-functions' });
  const fillTable = () => {
    let j;
    if (S.t0 === null) j = rangeTable(tf, 0, tf.columns, 30);
    else j = rangeTable(tf, Math.floor(S.t0 / tf.column_ns), isFinite(S.t1) ? Math.ceil(S.t1 / tf.column_ns) : tf.columns, 30);
    hold.replaceChildren(el('h3', { text: S.t0 === null ? 'Functions, the whole run' : `Functions from ${rangeText()}` }),
      metricTable(j, j.rows, { onName: (n) => go('callers', { fn: n }) }));
  };
  box.append(legend, cv, hold);
  draw(selected());
  fillTable();
  T.timeline = { start: tl.start, end: tl.end, left, plotW, canvas: cv, model: tf };
};

/* -- source and disassembly -- */

function listing(j, rows, first) {
  const ms = j.metrics;
  const head = el('tr', {}, ms.map(m => el('th', { title: m.title, text: m.title.replace(/^(Exclusive|Inclusive) /, (w) => w.slice(0, 4) + '. ') })), first.map(h => el('th', { class: 'name', text: h[0] })));
  const body = el('tbody');
  for (const r of rows) {
    const tr = el('tr', { class: r.hot ? 'hot' : null });
    for (const m of ms) tr.append(el('td', { 'data-m': m.name, text: r.code === false || r.code === undefined && r.line === undefined ? '' : fmt(r[m.name], m.unit) }));
    for (const h of first) tr.append(el('td', { class: h[1], text: h[2](r) }));
    body.append(tr);
  }
  return el('table', { class: 'listing' }, el('thead', {}, head), body);
}

PAGES.source = async (box) => {
  const fn = await focusFn();
  const j = await api('source', { arg: fn });
  box.append(el('h2', { text: `Source of ${fn}` }), el('p', { class: 'note', text: j.file || '' }),
    el('p', { class: 'bar' }, el('a', { href: '#', text: 'disassembly', onclick: (e) => { e.preventDefault(); go('disasm', { fn }); } })));
  const rows = j.lines || [];
  box.append(listing(j, rows, [['Line', 'num', (r) => r.line !== undefined ? String(r.line) : ''], ['Source', 'text', (r) => r.text !== undefined ? r.text : (r.name || r.group || '')]]));
  const extra = Object.keys(j).filter(k => !['view', 'file', 'metrics', 'lines'].includes(k) && Array.isArray(j[k]) && j[k].length);
  for (const k of extra) box.append(el('h3', { text: k }), objTable(j[k]));
  return () => {
    const hot = box.querySelector('tr.hot');
    if (hot) hot.scrollIntoView({ block: 'center' });
  };
};

PAGES.disasm = async (box) => {
  const fn = await focusFn();
  const j = await api('disasm', { arg: fn });
  box.append(el('h2', { text: `Disassembly of ${j.function}` }), el('p', { class: 'note', text: j.object || '' }),
    kv(j, j.metrics.map(m => [m.name, m.title, m.unit]), 'disasm.'));
  box.append(listing(j, j.instructions.map(r => ({ ...r, code: true })), [['Address', 'num', (r) => r.address],
    ['Instruction', 'text', (r) => r.text + (r.call ? '   ; ' + r.call : '')], ['Line', 'num', (r) => r.line ? String(r.line) : '']]));
};

/* -- traced data -- */

function section(box, title, j, key, opts) {
  box.append(el('h2', { text: title }));
  const rows = j[key] || [];
  if (!rows.length) { box.append(el('p', { class: 'note', text: 'None recorded (was this tracing on? tally collect -H on, -s on, -i on).' })); return; }
  box.append(objTable(rows, opts));
}

PAGES.heap = async (box) => {
  const [h, l, a] = await Promise.all([api('heap_peak'), api('leaks'), api('allocs')]);
  box.append(el('h2', { text: 'Heap by process' }));
  for (const p of h.processes || []) {
    box.append(kv(p, [['pid', 'Process'], ['allocations', 'Allocations'], ['bytes_allocated', 'Bytes allocated'], ['frees', 'Frees'],
      ['peak_bytes', 'Peak bytes'], ['peak_blocks', 'Peak blocks'], ['peak_time', 'Peak at', 's'], ['leaked_bytes', 'Leaked bytes'], ['leaked_blocks', 'Leaked blocks']], 'heap.'));
    if (p.at_peak && p.at_peak.length) box.append(el('h3', { text: 'Live at the peak' }), objTable(p.at_peak));
  }
  if (!(h.processes || []).length) box.append(el('p', { class: 'note', text: 'No heap data (tally collect -H on).' }));
  section(box, `Leaks: ${fmt(l.bytes || 0)} bytes in ${fmt(l.instances || 0)} blocks`, l, 'entries', { cls: 'leaks' });
  section(box, `Allocations: ${fmt(a.bytes || 0)} bytes in ${fmt(a.instances || 0)} calls`, a, 'entries', { cls: 'allocs' });
};
PAGES.sync = async (box) => {
  const j = await api('sync_objects');
  section(box, `Sync objects: ${fmt(j.wait || 0, 's')} s waited in ${fmt(j.count || 0)} waits`, j, 'objects', { cls: 'sync' });
};
PAGES.io = async (box) => {
  const j = await api('io_files');
  section(box, 'I/O by file', j, 'files', { cls: 'io' });
};

/* -- two experiments side by side -- */

PAGES.compare = async (box) => {
  const n = S.info.experiments.length;
  if (n < 2) { box.append(el('p', { class: 'note', text: 'Give two experiments to compare them: tally view A.tally B.tally' })); return; }
  const sel = (id, v, on) => el('select', { id, onchange: (e) => on(+e.target.value) },
    S.info.experiments.map(x => el('option', { value: x.index, selected: x.index === v, text: `${x.index}: ${x.path}` })));
  const ml = await api('metric_list', {}, { whole: true });
  const mSel = el('select', { id: 'cmp-metric', onchange: (e) => { S.cmpMetric = e.target.value; render(); } },
    ml.available.map(m => el('option', { value: m.name, selected: m.name === S.cmpMetric, text: m.name })));
  box.append(el('div', { class: 'bar' }, 'A ', sel('cmp-a', S.exp, (v) => writeHash({ exp: v })), ' B ',
    sel('cmp-b', S.expB, (v) => writeHash({ expB: v })), ' metric ', mSel));
  const m = S.cmpMetric;
  const p = { metrics: `e.${m}:i.${m}:name`, sort: `e.${m}` };
  const [A, B] = await Promise.all([api('functions', p, { exp: S.exp, whole: true }), api('functions', p, { exp: S.expB, whole: true })]);
  const by = new Map();
  for (const [side, j] of [['a', A], ['b', B]]) for (const r of j.rows) {
    const o = by.get(r.name) || { name: r.name };
    o[side + 'e'] = r['e.' + m]; o[side + 'i'] = r['i.' + m];
    by.set(r.name, o);
  }
  const rows = [...by.values()];
  for (const r of rows) { r.de = (r.be || 0) - (r.ae || 0); r.di = (r.bi || 0) - (r.ai || 0); }
  rows.sort((x, y) => (y.name === '<Total>') - (x.name === '<Total>') || Math.abs(y.de) - Math.abs(x.de) || x.name.localeCompare(y.name));
  const unit = (ml.available.find(x => x.name === m) || {}).unit;
  const head = el('tr', {}, ['A excl.', 'B excl.', 'B − A excl.', 'A incl.', 'B incl.', 'B − A incl.'].map(t => el('th', { text: t })), el('th', { class: 'name', text: 'Name' }));
  const body = el('tbody', {}, rows.map(r => el('tr', { class: r.name === '<Total>' ? 'total' : null, 'data-name': r.name },
    el('td', { text: fmt(r.ae, unit) }), el('td', { text: fmt(r.be, unit) }), el('td', { class: r.de > 0 ? 'pos' : r.de < 0 ? 'neg' : null, text: (r.de > 0 ? '+' : '') + fmt(r.de, unit) }),
    el('td', { text: fmt(r.ai, unit) }), el('td', { text: fmt(r.bi, unit) }), el('td', { class: r.di > 0 ? 'pos' : r.di < 0 ? 'neg' : null, text: (r.di > 0 ? '+' : '') + fmt(r.di, unit) }),
    el('td', { class: 'name', text: r.name }))));
  box.append(el('h2', { text: `${m}: A = ${S.info.experiments[S.exp].path}, B = ${S.info.experiments[S.expB].path}` }),
    el('p', { class: 'note', text: 'Functions of both by name; the largest exclusive difference first (red: B spends more).' }),
    el('table', { class: 'compare' }, el('thead', {}, head), body));
};

/* -- data objects and structure layouts (dataspace profiling: collect -p +on, -h +COUNTER) -- */

/* The metric keys of a dataspace row: e.user (seconds), e.NAME (a counter's events, NAME its metric), samples. */
function dsKeys(row) { return Object.keys(row).filter(k => k === 'samples' || k.startsWith('e.')); }
function dsCells(row, keys, prefix) {
  return keys.map(k => el('td', { 'data-k': prefix + k, text: fmt(row[k], k === 'e.user' ? 's' : '') }));
}
function dsHead(keys) {
  return keys.map(k => el('th', { text: k === 'e.user' ? 'Excl. User CPU (s)' : k === 'samples' ? 'Samples' : k }));
}
/* A bar of share v/total (0..1) in a cell. */
function shareBar(v, total) {
  const p = total ? Math.max(0, Math.min(1, v / total)) : 0;
  return el('td', { class: 'barcell' }, el('span', { class: 'fill', style: `width:${(100 * p).toFixed(1)}%` }));
}
/* A section whose view may refuse (no data of its kind): its message instead of the page failing. */
async function optional(view, params) {
  try { return await api(view, params); } catch (e) { return { error: e.message }; }
}

PAGES.data = async (box) => {
  const j = await optional('data_objects');
  box.append(el('h2', { text: 'Data objects' }));
  if (j.error || !j.memrefs) {
    box.append(el('p', { class: 'note', id: 'no-data', text: (j.error ? j.error + ' ' : 'No memory reference was recorded ') +
      '(dataspace profiling: tally collect -p +on, or -h +COUNTER).' }));
    return;
  }
  const rows = j.objects || [];
  const keys = rows.length ? dsKeys(rows[0]) : ['samples'];
  const total = rows.length ? rows[0][keys[0]] : 0;
  box.append(el('p', { class: 'note', text: `${j.memrefs} memory references. Click an object for its details; aggregates (structures) contain their members.` }));
  const body = el('tbody', {}, rows.map(r => el('tr', { class: r.kind === 'total' ? 'total' : r.kind === 'aggregate' ? 'agg' : null, 'data-name': r.name },
    dsCells(r, keys, ''), shareBar(r[keys[0]], total), el('td', { class: 'name' },
      r.kind === 'total' ? r.name : el('a', { text: r.name, onclick: () => writeHash({ dobj: r.name }) })),
    el('td', { class: 'note', text: [r.kind, r.scope, r.via ? 'via ' + r.via : ''].filter(Boolean).join(', ') }))));
  box.append(el('table', { class: 'dobjs' }, el('thead', {}, el('tr', {}, dsHead(keys), el('th', {}), el('th', { class: 'name', text: 'Data object' }), el('th', { class: 'name', text: 'Kind' }))), body));
  if (S.dobj) {
    const x = await optional('data_single', { arg: S.dobj });
    const det = el('div', { id: 'dobj' }, el('h3', { text: S.dobj }));
    if (x.error) det.append(el('p', { class: 'error', text: x.error }));
    else {
      det.append(kv(x, [['kind', 'Kind'], ['scope', 'Scope'], ['via', 'Reached as'], ...keys.map(k => [k, k === 'e.user' ? 'Excl. User CPU' : k, k === 'e.user' ? 's' : '']),
        ['samples_without_address', 'Samples without a known address']], 'dobj.'));
      if (x.containers.length) det.append(el('p', {}, 'In: ', x.containers.map(c => el('a', { class: 'container', text: c + ' ', onclick: () => writeHash({ dobj: c }) }))));
    }
    box.append(det);
  }
  const [lay, lines, fs] = await Promise.all([optional('data_layout'), optional('memobj', { arg: 'cacheline', limit: 50 }), optional('false_sharing')]);
  box.append(el('h2', { text: 'Structure layouts' }));
  if (lay.error) box.append(el('p', { class: 'error', text: lay.error }));
  else if (!lay.structures.length) box.append(el('p', { class: 'note', text: 'No structure type has samples.' }));
  for (const s of lay.structures || []) {
    const k = dsKeys(s);
    box.append(el('h3', { text: `${s.name}, ${s.size} bytes: ` }, el('span', { 'data-k': 'layout.' + s.name, text: fmt(s[k[0]], k[0] === 'e.user' ? 's' : '') + (k[0] === 'e.user' ? ' s' : '') })));
    const tb = el('tbody', {}, s.members.map(m => el('tr', { class: m.name.startsWith('<') ? 'hole' : null, 'data-name': m.name },
      el('td', { text: '+' + m.offset }), el('td', { text: String(m.size) }), dsCells(m, k, ''), shareBar(m[k[0]], s[k[0]]), el('td', { class: 'name', text: m.name }))));
    box.append(el('table', { class: 'layout' }, el('thead', {}, el('tr', {}, el('th', { text: 'Offset' }), el('th', { text: 'Size' }), dsHead(k), el('th', {}), el('th', { class: 'name', text: 'Member' }))), tb));
  }
  const mobj = (title, d, cls) => {
    box.append(el('h2', { text: title }));
    if (d.error) { box.append(el('p', { class: 'error', text: d.error })); return; }
    const objs = d.objects || [];
    if (!objs.length) box.append(el('p', { class: 'note', text: 'None.' }));
    else {
      const k = dsKeys(objs[0]);
      box.append(el('table', { class: cls }, el('thead', {}, el('tr', {}, el('th', { class: 'name', text: 'Address' }), el('th', { text: 'Threads' }), el('th', { text: 'Reads' }), el('th', { text: 'Writes' }), dsHead(k), el('th', { class: 'name', text: 'Data object' }))),
        el('tbody', {}, objs.map(o => el('tr', { class: o.false_sharing ? 'hot' : null, 'data-name': o.address }, el('td', { class: 'name', text: o.address }), el('td', { text: String(o.threads) }),
          el('td', { text: String(o.reads) }), el('td', { text: String(o.writes) }), dsCells(o, k, ''), el('td', { class: 'name', text: o.data_object }))))));
    }
    const w = d.without_address;
    if (w && w.samples) box.append(el('p', { class: 'note', text: `Without a known address: ${w.samples} samples` + (w.reasons.length ? ': ' + w.reasons.map(r => `${r.samples} ${r.name}`).join('; ') : '') }));
  };
  mobj(`Cache lines (${lines.size || 64} bytes), the 50 hottest; false sharing highlighted`, lines, 'lines');
  mobj('False sharing: cache lines threads share at different offsets, with writes', fs, 'fsharing');
};

/* -- MPI: ranks, imbalance, the communication matrix, MPI calls over time -- */

PAGES.mpi = async (box) => {
  const rl = await optional('rank_list');
  box.append(el('h2', { text: 'MPI ranks' }));
  if (rl.error) { box.append(el('p', { class: 'note', text: rl.error })); return; }
  const cols = [['rank', 'Rank'], ['threads', 'Threads'], ['mpitime', 'MPI time (s)', 's'], ['totalcpu', 'CPU (s)', 's'], ['mpisends', 'Sends'],
    ['mpibytessent', 'Bytes sent'], ['mpireceives', 'Receives'], ['mpibytesrecv', 'Bytes recv.'], ['mpiother', 'Other calls'], ['mpicollsent', 'Coll. bytes sent'],
    ['mpicollrecv', 'Coll. bytes recv.'], ['dropped', 'Dropped'], ['host', 'Host']];
  const maxT = Math.max(...rl.ranks.map(r => r.mpitime), 0);
  box.append(el('table', { class: 'ranks' }, el('thead', {}, el('tr', {}, cols.map(c => el('th', { class: c[0] === 'host' ? 'name' : null, text: c[1] })), el('th', { text: 'MPI time' }))),
    el('tbody', {}, rl.ranks.map(r => el('tr', { 'data-name': String(r.rank) }, cols.map(c => el('td', { 'data-k': c[0], class: c[0] === 'host' ? 'name' : null, text: fmt(r[c[0]], c[2]) })), shareBar(r.mpitime, maxT))))));
  const [imb, cs, mx, tl] = await Promise.all([optional('mpi_imbalance', { limit: 30 }), optional('mpi_callsites', { limit: 30 }), optional('mpi_matrix'), optional('mpi_timeline')]);
  /* min..max over ranks as a bar, the mean marked */
  const imbTable = (title, d, cls) => {
    box.append(el('h2', { text: title }));
    if (d.error) { box.append(el('p', { class: 'error', text: d.error })); return; }
    const top = Math.max(...d.rows.map(r => r.max), 0) || 1;
    box.append(el('p', { class: 'note', text: `MPI time over ${d.ranks} ranks: the bar runs from the least to the most a rank spent, the mark is the mean.` }));
    box.append(el('table', { class: cls }, el('thead', {}, el('tr', {}, ['Min (s)', 'Mean (s)', 'Max (s)', 'Max/mean', 'Min rank', 'Max rank', ''].map(t => el('th', { text: t })), el('th', { class: 'name', text: 'Name' }))),
      el('tbody', {}, d.rows.map(r => el('tr', { 'data-name': r.name }, el('td', { 'data-k': 'min', text: fmt(r.min, 's') }), el('td', { 'data-k': 'mean', text: fmt(r.mean, 's') }),
        el('td', { 'data-k': 'max', text: fmt(r.max, 's') }), el('td', { text: r.mean > 0 ? (r.max / r.mean).toFixed(2) : '' }), el('td', { text: String(r.min_rank) }), el('td', { text: String(r.max_rank) }),
        el('td', { class: 'barcell' }, el('span', { class: 'range', style: `margin-left:${(100 * r.min / top).toFixed(1)}%;width:${(100 * (r.max - r.min) / top).toFixed(1)}%` }),
          el('i', { class: 'mean', style: `left:${(100 * r.mean / top).toFixed(1)}%` })),
        el('td', { class: 'name', text: r.name }))))));
  };
  imbTable('Imbalance by function (inclusive MPI time)', imb, 'imbalance');
  imbTable('Imbalance by MPI call site', cs, 'callsites');
  /* the communication matrix: a heat map, sender by row, receiver by column */
  box.append(el('h2', { text: 'Communication matrix' }));
  if (mx.error) box.append(el('p', { class: 'error', text: mx.error }));
  else {
    const by = S.mpiBy || 'bytes';
    const n = mx.ranks, cell = new Map();
    let most = 0;
    for (const p of mx.pairs) { cell.set(p.from + ',' + p.to, p); most = Math.max(most, p[by]); }
    const pick = el('select', { id: 'mpi-by', onchange: (e) => { S.mpiBy = e.target.value; render(); } },
      ['bytes', 'msgs'].map(v => el('option', { value: v, selected: v === by, text: v === 'bytes' ? 'bytes' : 'messages' })));
    box.append(el('p', { class: 'bar' }, 'point-to-point ', pick, el('span', { class: 'note', text: ' from the rank of the row to the rank of the column; darker is more' })));
    const head = el('tr', {}, el('th', { text: 'from \\ to' }), [...Array(n).keys()].map(t => el('th', { text: String(t) })));
    const rows = [...Array(n).keys()].map(f => el('tr', {}, el('th', { text: String(f) }), [...Array(n).keys()].map(t => {
      const p = cell.get(f + ',' + t), v = p ? p[by] : 0, a = most ? v / most : 0;
      return el('td', { class: 'heat', 'data-from': f, 'data-to': t, title: p ? `${f} → ${t}: ${p.msgs} messages, ${p.bytes} bytes` : `${f} → ${t}: none`,
        style: `background:rgba(47,95,179,${(a * 0.9).toFixed(3)});color:${a > 0.5 ? '#fff' : 'inherit'}`, text: v ? String(v) : '' });
    })));
    box.append(el('table', { class: 'matrix' }, el('thead', {}, head), el('tbody', {}, rows)));
  }
  /* MPI calls over time, a row per rank */
  box.append(el('h2', { text: 'MPI calls over time' }));
  if (tl.error) { box.append(el('p', { class: 'error', text: tl.error })); return; }
  const rowH = 20, left = 70, width = Math.max(500, ($('#main').clientWidth || 1000) - 40);
  const H = tl.ranks.length * rowH + 22, plotW = width - left - 10, cw = plotW / tl.columns, colS = tl.span / tl.columns;
  const cv = el('canvas', { id: 'mpi-timeline' });
  const dpr = window.devicePixelRatio || 1;
  cv.width = width * dpr; cv.height = H * dpr; cv.style.width = width + 'px'; cv.style.height = H + 'px';
  const fns = new Set();
  box.append(el('p', { class: 'note', text: `${tl.columns} columns of ${(colS * 1e3).toFixed(1)} ms; a cell is coloured by the MPI function that took most of it, darker the more of the column MPI took. Hover for the time.` }), cv);
  const legend = el('p', { class: 'legend' });
  box.append(legend);
  T.mpiTimeline = { canvas: cv, left, cw, rowH, model: tl };
  cv.addEventListener('mousemove', (e) => {
    const b = cv.getBoundingClientRect(), c = Math.floor((e.clientX - b.left - left) / cw), r = Math.floor((e.clientY - b.top - 2) / rowH), tip = $('#tip');
    const x = tl.ranks[r] && tl.ranks[r].cells[c];
    if (!x) { tip.hidden = true; return; }
    tip.textContent = `rank ${tl.ranks[r].rank}, ${(c * colS).toFixed(3)}–${((c + 1) * colS).toFixed(3)} s: ${fmt(x.mpi, 's')} s in MPI${x.function ? ' (' + x.function + ')' : ''}`;
    tip.style.left = (e.clientX + 12) + 'px'; tip.style.top = (e.clientY + 12) + 'px'; tip.hidden = false;
  });
  cv.addEventListener('mouseleave', () => { $('#tip').hidden = true; });
  return () => {
    const g = cv.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.font = '11px system-ui, sans-serif'; g.textBaseline = 'middle';
    tl.ranks.forEach((rk, r) => {
      const y = r * rowH + 2;
      g.fillStyle = '#1d2330'; g.fillText(`rank ${rk.rank}`, 4, y + rowH / 2);
      g.fillStyle = '#f4f6fa'; g.fillRect(left, y, plotW, rowH - 3);
      rk.cells.forEach((x, c) => {
        if (!x.mpi) return;
        fns.add(x.function);
        g.globalAlpha = Math.max(0.15, Math.min(1, x.mpi / colS));
        g.fillStyle = x.function ? color(x.function) : '#687083';
        g.fillRect(left + c * cw, y, Math.ceil(cw), rowH - 3);
      });
      g.globalAlpha = 1;
    });
    g.fillStyle = '#687083';
    for (let k = 0; k <= 8; k++) g.fillText((tl.span * k / 8).toFixed(2) + ' s', Math.min(left + plotW * k / 8, width - 40), tl.ranks.length * rowH + 12);
    legend.replaceChildren(...[...fns].filter(Boolean).sort().map(f => el('span', {}, el('i', { style: `background:${color(f)}` }), f)));
  };
};

/* -- profiled blocks: the whole-run profile, the callstack at each monitor point, its history -- */

/* Columns of a blocks row: calls, subrs, then each quantity's exclusive and inclusive (and the
 * instance's, inst) with print's JSON names. */
function blockCols(quantities, inst, delta) {
  const cols = [['calls', 'Calls'], ['subrs', 'Subrs']];
  if (delta) cols.push(['d_calls', 'Δ Calls']);
  quantities.forEach((q, k) => {
    const s = k ? '_' + q : '';
    cols.push(['excl' + s, `Excl. ${q} (s)`, 's'], ['incl' + s, `Incl. ${q} (s)`, 's']);
    if (inst) cols.push(['inst_excl' + s, `Inst. excl. ${q} (s)`, 's'], ['inst_incl' + s, `Inst. incl. ${q} (s)`, 's']);
    if (delta) cols.push(['d_excl' + s, `Δ Excl. ${q} (s)`, 's'], ['d_incl' + s, `Δ Incl. ${q} (s)`, 's']);
  });
  return cols;
}
function blockTable(rows, cols, cls, opts) {
  const o = opts || {};
  return el('table', { class: cls }, el('thead', {}, el('tr', {}, (o.pre || []).map(p => el('th', { class: p[2], text: p[1] })), cols.map(c => el('th', { text: c[1] })), el('th', { class: 'name', text: 'Block' }))),
    el('tbody', {}, rows.map(r => el('tr', { 'data-name': r.name }, (o.pre || []).map(p => el('td', { class: p[2], 'data-k': p[0], text: p[3] ? p[3](r) : String(r[p[0]]) })),
      cols.map(c => el('td', { 'data-k': c[0], text: fmt(r[c[0]], c[2]) })),
      el('td', { class: 'name', style: r.depth !== undefined ? `padding-left:${8 + 14 * r.depth}px` : null },
        o.onName ? el('a', { text: r.name, onclick: () => o.onName(r.name) }) : r.name)))));
}

PAGES.blocks = async (box) => {
  const [bl, cs] = await Promise.all([api('blocks', {}, { whole: true }), api('callstack', { arg: 'all' }, { whole: true })]);
  const q = bl.quantities;
  box.append(el('h2', { text: 'Profiled blocks: the whole run' }));
  if (!bl.total.length) { box.append(el('p', { class: 'note', text: 'No profiled blocks (the program calls no tally_start / TAU_START, and was not built with -finstrument-functions).' })); return; }
  const pickBlock = (n) => writeHash({ block: n });
  box.append(blockTable(bl.total, blockCols(q, false), 'blocks-total', { onName: pickBlock }));
  for (const t of bl.threads) {
    box.append(el('h3', { text: `Thread ${t.tid} of process ${t.pid}: call paths` + (t.unmatched || t.lost ? ` (${t.unmatched} unmatched, ${t.lost} lost)` : '') }));
    box.append(blockTable(t.paths, blockCols(q, false), 'blocks-paths', { onName: pickBlock }));
  }
  box.append(el('h2', { text: 'Performance callstack at each monitor point' }));
  const mons = cs.callstacks;
  if (!mons.length) { box.append(el('p', { class: 'note', text: 'No monitor points (the program calls no tally_monitor or TAU_MONITOR).' })); return; }
  const at = Math.min(Math.max(+S.mon || 0, 0), mons.length - 1);
  const monText = (m) => `${m.n}${m.label ? ' "' + m.label + '"' : ''}, thread ${m.tid}, ${fmt(m.t, 's')} s`;
  box.append(el('div', { class: 'bar' }, 'monitor point ', el('select', { id: 'mon', onchange: (e) => writeHash({ mon: +e.target.value }) },
    mons.map((m, i) => el('option', { value: i, selected: i === at, text: monText(m) }))),
    el('button', { id: 'mon-prev', disabled: at === 0, onclick: () => writeHash({ mon: at - 1 }), text: '◀' }),
    el('button', { id: 'mon-next', disabled: at === mons.length - 1, onclick: () => writeHash({ mon: at + 1 }), text: '▶' })));
  box.append(blockTable(mons[at].rows, blockCols(q, true), 'callstack', { onName: pickBlock }));
  const hist = await api('callstack_history', S.block ? { arg: S.block } : {}, { whole: true });
  box.append(el('h2', { text: `Callstack history${S.block ? ' of ' + S.block : ''}` }),
    el('p', { class: 'note', text: 'Each block at each monitor point it was on the callstack, and the change since the previous one. Click a block to follow it alone.' }));
  if (S.block) box.append(el('p', {}, el('a', { id: 'block-all', href: '#', text: 'all blocks', onclick: (e) => { e.preventDefault(); writeHash({ block: '' }); } })));
  box.append(blockTable(hist.history, blockCols(q, false, true), 'history', { onName: pickBlock,
    pre: [['n', 'Point', null, (r) => String(r.n) + (r.label ? ' "' + r.label + '"' : '')], ['tid', 'Thread'], ['t', 'At (s)', null, (r) => fmt(r.t, 's')]] }));
};

/* -- counters as metrics (collect -h) -- */

PAGES.counters = async (box) => {
  const hd = await api('header', {}, { whole: true });
  const cnt = [];
  for (const x of hd.experiments) for (const p of x.processes) for (const c of p.counters || []) cnt.push({ pid: p.pid, ...c });
  box.append(el('h2', { text: 'Counters' }));
  if (!cnt.length) { box.append(el('p', { class: 'note', text: 'No counter was recorded (tally collect -h COUNTER; tally collect -h lists them).' })); return; }
  box.append(objTable(cnt.map(c => ({ pid: c.pid, name: c.name, interval: c.interval, samples: c.samples, events: c.events, counted: c.counted,
    'running %': c.enabled_ns ? +(100 * c.running_ns / c.enabled_ns).toFixed(1) : 100, throttled: c.throttled, lost: c.lost, dropped: c.dropped })), { cls: 'counters' }));
  const names = [...new Set(cnt.map(c => c.metric))];
  const m = names.includes(S.counter) ? S.counter : names[0];
  const spec = names.flatMap(n => [`e.%${n}`, `i.${n}`]).join(':') + ':name';
  const j = await api('functions', { metrics: spec, sort: `e.${m}` });
  box.append(el('h2', { text: 'Functions by counter' }), el('p', { class: 'note', text: 'Each counter as a metric (e. exclusive, i. inclusive), sorted by the one chosen; the other pages show them too (the metrics field of Functions).' }));
  const hold = el('div');
  box.append(el('div', { class: 'bar' }, searchBox(() => draw())), hold);
  const draw = () => {
    const s = S.search.toLowerCase();
    hold.replaceChildren(metricTable(j, j.rows.filter(r => r.name === '<Total>' || !s || r.name.toLowerCase().includes(s)), { cls: 'metrics', sort: `e.${m}`,
      onSort: (k) => { if (k !== 'name') writeHash({ counter: k.slice(2) }); }, onName: (n) => go('callers', { fn: n }) }));
  };
  draw();
};

/* -- every view, generically -- */

PAGES.raw = async (box) => {
  const views = S.info.views.filter(v => !['csingle', 'fsingle', 'source', 'disasm', 'sample_detail', 'data_single', 'memobj'].includes(v)); /* (those need an argument: their pages give it) */
  box.append(el('div', { class: 'bar' }, el('select', { id: 'raw-view', onchange: (e) => writeHash({ raw: e.target.value }) },
    el('option', { value: '', text: 'choose a view' }), views.map(v => el('option', { value: v, selected: v === S.raw, text: v })))));
  if (!S.raw) return;
  const j = await api(S.raw);
  const scal = {};
  for (const [k, v] of Object.entries(j)) {
    if (Array.isArray(v) && v.length && typeof v[0] === 'object') {
      if (j.metrics && k === 'rows') box.append(el('h2', { text: k }), metricTable(j, v));
      else if (k !== 'metrics') box.append(el('h2', { text: k }), objTable(v));
    } else if (v && typeof v === 'object' && !Array.isArray(v)) box.append(el('h2', { text: k }), el('pre', { class: 'stack', text: JSON.stringify(v, null, 1).slice(0, 20000) }));
    else scal[k] = v;
  }
  box.prepend(kv(scal, Object.keys(scal).map(k => [k, k])));
};

/* ---- start --------------------------------------------------------------------------------- */

async function start() {
  const res = await fetch('/api/info');
  S.info = await res.json();
  const sel = $('#exp');
  for (const x of S.info.experiments) sel.append(el('option', { value: x.index, text: `${x.index}: ${x.path}` }));
  sel.addEventListener('change', () => writeHash({ exp: +sel.value, fn: '', t0: null, t1: null }));
  for (const [p, title] of PAGES_ORDER)
    $('#tabs').append(el('a', { href: `#/${p}`, 'data-page': p, text: title, onclick: (e) => { e.preventDefault(); go(p); } }));
  $('#range-clear').addEventListener('click', () => writeHash({ t0: null, t1: null }));
  window.addEventListener('hashchange', () => { readHash(); render(); });
  readHash();
  await render();
}
start().catch(e => { $('#main').replaceChildren(el('p', { class: 'error', text: 'tally view: ' + e.message })); });
