// GPU map: every node x GPU as a cell on a canvas (80,000 DOM nodes would not stay usable at
// 10,000 nodes), coloured by the job or user holding it and filled by its utilization;
// fractions and MIG slices drawn side by side inside their GPU; cordoned, draining, lost,
// powered-off and booting nodes outlined; hovering names the node, the GPU and who holds it.
import {api} from './api.js';
import {ErrorLine, hueOf, html, percent, useEffect, useLive, useRef, useState} from './common.js';

const kFree = '#e4e7eb';
const kUnhealthy = '#b91c1c';
const kNodeMark = {cordoned: '#d97706', draining: '#d97706', drained: '#d97706', lost: '#7f1d1d',
                   off: '#94a3b8', booting: '#2563eb'};
// The cells of a powered-off node of an autoscaled pool: no capacity now, none lost either.
const kOff = '#f8fafc';

// Every node in the compact map view (GET /v1/nodes?view=map), 10,000 a page (one request
// at 10,000 nodes: a second page, one after the other, cost a round trip and a parse).
// A node is {name, state, models, gpus}; a GPU is [model index, flags (1 healthy, 2 MIG),
// utilization, holders]; a holder is [job, user] for a whole GPU, else [job, user, milli,
// migProfile].
async function loadAll() {
  const nodes = [];
  let after = '';
  for (;;) {
    const page = await api(`/v1/nodes?view=map&limit=10000${after ? '&after=' + encodeURIComponent(after) : ''}`);
    nodes.push(...page.nodes);
    if (!page.next) return nodes;
    after = page.next;
  }
}
const kModel = 0;
const kFlags = 1;
const kUtil = 2;
const kHolders = 3;
const healthy = (g) => (g[kFlags] & 1) !== 0;
const mig = (g) => (g[kFlags] & 2) !== 0;

// Where each node and GPU goes: nodes left to right in rows, each a run of its GPUs' cells.
function layout(nodes, width) {
  const perNode = Math.max(1, ...nodes.map((n) => n.gpus.length));
  const cells = nodes.reduce((s, n) => s + n.gpus.length, 0);
  // As large as fits about 2,400 px of height, between 4 and 16 px.
  const area = (width * 2400) / Math.max(1, cells * 1.4);
  const cell = Math.max(4, Math.min(16, Math.floor(Math.sqrt(area))));
  const gap = cell >= 8 ? 1 : 0;
  const nodeGap = Math.max(2, Math.round(cell / 2));
  const blockW = perNode * (cell + gap) + nodeGap;
  const columns = Math.max(1, Math.floor(width / blockW));
  const rowH = cell + gap + nodeGap;
  return {cell, gap, nodeGap, blockW, columns, rowH, cells,
          height: Math.ceil(nodes.length / columns) * rowH + nodeGap};
}

// Colours as packed pixels (ImageData is RGBA in memory: 0xAABBGGRR on little-endian).
function pixel(r, g, b) {
  return (0xff000000 | (b << 16) | (g << 8) | r) >>> 0;
}
function hex(h) {
  const v = parseInt(h.slice(1), 16);
  return [(v >> 16) & 255, (v >> 8) & 255, v & 255];
}
// colourOf's colour of a hue (saturation 65 %, lightness 52 %), as RGB.
function rgbOf(hue) {
  const s = 0.65;
  const l = 0.52;
  const a = s * Math.min(l, 1 - l);
  const f = (n) => {
    const k = (n + hue / 30) % 12;
    return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [f(0), f(8), f(4)];
}
const mix = (c, base, alpha) =>
  pixel(...c.map((v, i) => Math.round(alpha * v + (1 - alpha) * base[i])));

// A holder's pixels: full, and pale over the free colour (for the part of the cell above its
// utilization, or all of it where utilization is unknown), made once per hue: a colour per
// job of 40,000 was a fifth of drawing the map.
const shades = [];
function shadesOf(key, free) {
  const hue = hueOf(key);
  let s = shades[hue];
  if (s) return s;
  const c = rgbOf(hue);
  s = {full: pixel(...c), used: mix(c, free, 0.3), unknown: mix(c, free, 0.85)};
  shades[hue] = s;
  return s;
}

// Draws every cell into one pixel buffer and puts it on the canvas at once: 80,000 cells
// drawn with fillRect, each with its own fill style, took most of the view's second.
function draw(canvas, nodes, lay, colourBy) {
  const dpr = window.devicePixelRatio || 1;
  const width = canvas.clientWidth;
  const W = Math.floor(width * dpr);
  const H = Math.floor(lay.height * dpr);
  canvas.width = W;
  canvas.height = H;
  canvas.style.height = `${lay.height}px`;
  const ctx = canvas.getContext('2d');
  const image = ctx.createImageData(W, H);
  const px = new Uint32Array(image.data.buffer);
  px.fill(pixel(255, 255, 255));
  // A cell is a few pixels wide: a plain loop beats a fill call per row by three times.
  const rect = (x, y, w, h, colour) => {
    const x0 = Math.max(0, Math.round(x * dpr));
    const x1 = Math.min(W, Math.round((x + w) * dpr));
    const y0 = Math.max(0, Math.round(y * dpr));
    const y1 = Math.min(H, Math.round((y + h) * dpr));
    for (let yy = y0; yy < y1; yy++) {
      const row = yy * W;
      for (let xx = x0; xx < x1; xx++) px[row + xx] = colour;
    }
  };
  const free = hex(kFree);
  const freePx = pixel(...free);
  const unhealthyPx = pixel(...hex(kUnhealthy));
  const offPx = pixel(...hex(kOff));
  const marks = Object.fromEntries(Object.entries(kNodeMark).map(([k, v]) => [k, pixel(...hex(v))]));
  const tick = pixel(17, 24, 39);
  for (let i = 0; i < nodes.length; i++) {
    const n = nodes[i];
    const x0 = (i % lay.columns) * lay.blockW;
    const y0 = Math.floor(i / lay.columns) * lay.rowH;
    const mark = marks[n.state];
    if (mark) rect(x0 - 1, y0 - 1, n.gpus.length * (lay.cell + lay.gap) + 1, lay.cell + 2, mark);
    for (let k = 0; k < n.gpus.length; k++) {
      const g = n.gpus[k];
      const x = x0 + k * (lay.cell + lay.gap);
      const ok = healthy(g) && n.state !== 'lost' && n.state !== 'off';
      rect(x, y0, lay.cell, lay.cell,
           !healthy(g) ? unhealthyPx : ok ? freePx : n.state === 'off' ? offPx : marks.lost);
      if (!ok) continue;
      // Each holder gets a slice of the cell's width by its share (a whole GPU: all of it);
      // pale where unused, full up to its measured utilization.
      let sx = x;
      const util = g[kUtil];
      for (const [job, user, milli] of g[kHolders]) {
        const share = Math.min(1, (milli || 1000) / 1000);
        const w = Math.max(1, Math.round(lay.cell * share));
        const c = shadesOf(colourBy === 'user' ? user : job, free);
        if (util === null) {
          rect(sx, y0, w, lay.cell, c.unknown);
        } else {
          const h = Math.round((lay.cell * Math.min(100, util)) / 100);
          rect(sx, y0, w, lay.cell - h, c.used);
          rect(sx, y0 + lay.cell - h, w, h, c.full);
        }
        sx += w;
      }
      if (mig(g) && lay.cell >= 8) rect(x, y0, 2, 2, tick);  // a MIG GPU: a corner tick
    }
  }
  ctx.putImageData(image, 0, 0);
  canvas.dataset.drawn = String(lay.cells);  // what the benchmark waits for
}

function hit(nodes, lay, x, y) {
  const col = Math.floor(x / lay.blockW);
  const row = Math.floor(y / lay.rowH);
  if (col >= lay.columns) return null;
  const i = row * lay.columns + col;
  if (i < 0 || i >= nodes.length) return null;
  const k = Math.floor((x - col * lay.blockW) / (lay.cell + lay.gap));
  if (y - row * lay.rowH > lay.cell || k >= nodes[i].gpus.length) return {node: nodes[i], gpu: null};
  return {node: nodes[i], gpu: nodes[i].gpus[k], index: k};
}

function describe(h) {
  if (!h) return '';
  const n = h.node;
  if (!h.gpu) return `${n.name} (${n.state})`;
  const g = h.gpu;
  const who = g[kHolders].length === 0 ? 'free'
    : g[kHolders].map(([job, user, milli, profile]) =>
      `job ${job} of ${user}${milli < 1000 ? ` (${milli / 1000} GPU)` : ''}` +
      `${profile ? ` MIG ${profile}` : ''}`).join(', ');
  return `${n.name} (${n.state}) GPU ${h.index} ${n.models[g[kModel]]}${healthy(g) ? '' : ' UNHEALTHY'}: ${who}` +
         `${g[kUtil] !== null ? `; ${percent(g[kUtil])} used` : ''}`;
}

export function GpuMapView() {
  const {data, error} = useLive(loadAll, [], {everyMs: 10000});
  const [colourBy, setColourBy] = useState('job');
  const [hover, setHover] = useState(null);
  const canvas = useRef(null);
  const lay = useRef(null);
  useEffect(() => {
    if (!data || !canvas.current) return;
    const paint = () => {
      lay.current = layout(data, canvas.current.clientWidth);
      draw(canvas.current, data, lay.current, colourBy);
    };
    paint();
    window.addEventListener('resize', paint);
    return () => window.removeEventListener('resize', paint);
  }, [data, colourBy]);
  const move = (e) => {
    if (!lay.current) return;
    const r = canvas.current.getBoundingClientRect();
    const h = hit(data, lay.current, e.clientX - r.left, e.clientY - r.top);
    setHover(h ? {text: describe(h), x: e.clientX - r.left, y: e.clientY - r.top} : null);
  };
  const total = data ? data.reduce((s, n) => s + n.gpus.length, 0) : 0;
  const held = data ? data.reduce((s, n) => s + n.gpus.filter((g) => g[kHolders].length).length, 0) : 0;
  return html`
    <h1>GPU map</h1>
    <${ErrorLine} error=${error} />
    <p class="toolbar">
      ${data && html`<span>${data.length} nodes, ${total} GPUs, ${held} held.</span>`}
      <label>colour by <select value=${colourBy} onChange=${(e) => setColourBy(e.target.value)}>
        <option value="job">job</option><option value="user">user</option></select></label>
      <span class="legend"><i class="free"></i>free <i class="unhealthy"></i>unhealthy
        <i class="cordoned"></i>cordoned or draining <i class="lost"></i>lost
        <i class="off"></i>powered off <i class="booting"></i>booting; a cell's fill is
        its measured utilization</span>
    </p>
    <div class="map-wrap">
      <canvas ref=${canvas} class="gpu-map" data-nodes=${data ? data.length : 0}
              data-cells=${total} onMouseMove=${move} onMouseLeave=${() => setHover(null)}></canvas>
      ${hover && html`<div class="tip" role="tooltip"
                           style=${{left: `${hover.x + 12}px`, top: `${hover.y + 12}px`}}>${hover.text}</div>`}
    </div>`;
}
