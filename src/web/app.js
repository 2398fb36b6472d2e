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
            raw: '', cache: new Map() };
const PAGES_ORDER = [['overview', 'Overview'], ['functions', 'Functions'],
  ['callers', 'Callers-callees'], ['flame', 'Flame graph'], ['sandwich', 'Sandwich'],
  ['timeline', 'Timeline'], ['source', 'Source'], ['disasm', 'Disassembly'], ['heap', 'Heap'],
  ['sync', 'Sync'], ['io', 'I/O'], ['compare', 'Compare'], ['raw', 'All views']];
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
}
function writeHash(changes) {
  Object.assign(S, changes || {});
  const q = new URLSearchParams({ exp: S.exp });
  if (S.fn) q.set('fn', S.fn);
  if (S.t0 !== null) { q.set('t0', S.t0); q.set('t1', S.t1); }
  if (S.page === 'compare') q.set('b', S.expB);
  if (S.page === 'raw' && S.raw) q.set('v', S.raw);
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

/* Flat nodes {n name, v value, d depth, x start, p parent, k children, c colour} of a tree
 * {name, children, [key]}, children in the tree's order (the model's: the heaviest first). */
function layout(tree, key) {
  const nodes = [];
  const colors = new Map();
  const walk = (t, d, x, p) => {
    const i = nodes.length;
    const v = t[key] || 0;
    let c = colors.get(t.name);
    if (!c) { c = color(t.name); colors.set(t.name, c); }
    const node = { n: t.name, v, d, x, p, k: [], c };
    nodes.push(node);
    if (p >= 0) nodes[p].k.push(i);
    let cx = x;
    for (const ch of t.children || []) { walk(ch, d + 1, cx, i); cx += ch[key] || 0; }
  };
  walk(tree, 0, 0, -1);
  return nodes;
}

class Flame {
  constructor(nodes, opts) {
    this.nodes = nodes; this.mode = opts.mode; this.unit = opts.unit || 's'; this.total = nodes[0].v || 1;
    this.zoom = 0; this.search = ''; this.rowH = 17; this.rects = [];
    this.depth = nodes.reduce((a, n) => Math.max(a, n.d), 0);
    this.canvas = el('canvas', { class: 'flame ' + opts.mode });
    this.canvas.addEventListener('click', (e) => this.click(e));
    this.canvas.addEventListener('mousemove', (e) => this.hover(e));
    this.canvas.addEventListener('mouseleave', () => { $('#tip').hidden = true; });
    this.onzoom = opts.onzoom;
  }
  at(e) {
    const b = this.canvas.getBoundingClientRect();
    const x = e.clientX - b.left, y = e.clientY - b.top;
    for (const r of this.rects) if (x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + r.h) return r;
    return null;
  }
  click(e) {
    const t0 = performance.now();
    const r = this.at(e);
    if (!r) return;
    timed('zoom', t0, async () => { this.zoom = r.i; this.draw(); if (this.onzoom) this.onzoom(r.i); });
  }
  hover(e) {
    const r = this.at(e), tip = $('#tip');
    if (!r) { tip.hidden = true; return; }
    const n = this.nodes[r.i];
    tip.textContent = `${n.n}: ${fmt(n.v, this.unit)} ${this.unit} (${(100 * n.v / this.total).toFixed(2)}%)`;
    tip.style.left = (e.clientX + 12) + 'px'; tip.style.top = (e.clientY + 12) + 'px'; tip.hidden = false;
  }
  /* Draws the zoomed node's subtree (frames narrower than 0.4 px and what is below them are not
   * visited: a zoom costs what is visible, not the size of the tree) and its ancestors. */
  draw() {
    const width = Math.max(300, (this.canvas.parentElement ? this.canvas.parentElement.clientWidth : 1000) - 4);
    const rows = Math.min(this.depth + 1, 900);
    const dpr = window.devicePixelRatio || 1;
    const H = rows * this.rowH;
    if (this.canvas.width !== width * dpr || this.canvas.height !== H * dpr) { /* (a resize reallocates) */
      this.canvas.width = width * dpr; this.canvas.height = H * dpr;
      this.canvas.style.width = width + 'px'; this.canvas.style.height = H + 'px';
    }
    const g = this.canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, H);
    g.font = '11px system-ui, sans-serif';
    g.textBaseline = 'middle';
    const nodes = this.nodes, z = nodes[this.zoom];
    const scale = width / (z.v || 1);
    const q = this.search.toLowerCase();
    this.rects = [];
    const labels = [];
    const put = (i, x, w, hit, dim) => {
      const n = nodes[i];
      const y = this.mode === 'flame' ? H - (n.d + 1) * this.rowH : n.d * this.rowH;
      g.fillStyle = hit ? '#d63384' : dim ? '#dfe3ea' : n.c;
      g.globalAlpha = q && !hit ? 0.45 : 1;
      g.fillRect(x, y, Math.max(w - 0.5, 0.4), this.rowH - 1);
      if (w > 30) labels.push([n.n, x, y, w]);
      this.rects.push({ i, x, y, w, h: this.rowH - 1 });
    };
    for (let p = z.p; p >= 0; p = nodes[p].p) if (nodes[p].d < rows) put(p, 0, width, q && nodes[p].n.toLowerCase().includes(q), true);
    const stack = [this.zoom];
    while (stack.length) {
      const i = stack.pop();
      const n = nodes[i];
      if (n.d >= rows) continue;
      const w = n.v * scale;
      if (w < 0.4) continue;
      put(i, (n.x - z.x) * scale, w, q && n.n.toLowerCase().includes(q), false);
      for (let k = n.k.length - 1; k >= 0; k--) stack.push(n.k[k]);
    }
    g.globalAlpha = 1;
    g.fillStyle = '#111';
    for (const [name, x, y, w] of labels) { /* cut to the frame (about 6.5 px a character) */
      const fit = Math.floor((w - 6) / 6.5);
      g.fillText(name.length > fit ? name.slice(0, Math.max(fit - 1, 1)) + '…' : name, x + 3, y + this.rowH / 2);
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
  /* The client coordinates of the middle of the widest drawn node called name (tests). */
  find(name) {
    let best = null;
    for (const r of this.rects) if (this.nodes[r.i].n === name && (!best || r.w > best.w)) best = r;
    if (!best) return null;
    const b = this.canvas.getBoundingClientRect();
    return { x: b.left + best.x + Math.min(best.w / 2, 40), y: b.top + best.y + best.h / 2, w: best.w, value: this.nodes[best.i].v };
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
    el('p', { class: 'note', text: `${S.flameMode === 'flame' ? 'Flame graph (callers below)' : 'Icicle (callers above)'}: width is inclusive ${j.metric}; click a frame to zoom, a wider frame below it to zoom out.` }));
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

/* -- every view, generically -- */

PAGES.raw = async (box) => {
  const views = S.info.views.filter(v => !['csingle', 'fsingle', 'source', 'disasm', 'sample_detail'].includes(v));
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
