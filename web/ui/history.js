// History: GPUs allocated and used, pending and running jobs, wait-time percentiles and
// GPU-hours per queue over time, as the controller sampled them (GET /v1/history, no
// Prometheus needed); a CSV export; and how close the estimated starts came to the actual ones.
import {api, token} from './api.js';
import {ErrorLine, colourOf, html, span, useEffect, useLive, useRef, useState} from './common.js';

// uPlot only when a chart is drawn: compiling it cost every other view about 35 ms.
let uPlotLoading = null;
const loadUPlot = () => (uPlotLoading ??= import('./vendor/uPlot.js').then((m) => m.default));

const kRanges = [['1h', 3600], ['6h', 6 * 3600], ['1d', 86400], ['7d', 7 * 86400], ['30d', 30 * 86400]];

function Chart({title, series, xs, unit}) {
  const box = useRef(null);
  useEffect(() => {
    if (!box.current || xs.length === 0) return undefined;
    let alive = true;
    let plot = null;
    loadUPlot().then((uPlot) => {
      if (!alive || !box.current) return;
      const width = Math.max(300, box.current.clientWidth);
      plot = new uPlot({
        width, height: 200,
        series: [{}, ...series.map((s) => ({label: s.label, stroke: s.colour, width: 1.5,
                                            spanGaps: false}))],
        axes: [{}, {label: unit, size: 64,
                    values: (u, ticks) => ticks.map((v) => Number(v.toPrecision(3)).toString())}],
        scales: {x: {time: true}},
      }, [xs, ...series.map((s) => s.values)], box.current);
    });
    return () => {
      alive = false;
      if (plot) plot.destroy();
    };
  }, [xs, series]);
  return html`<section class="card chart" data-chart=${title}>
    <h2>${title}</h2>
    ${xs.length === 0 ? html`<p class="muted">no samples yet</p>` : html`<div ref=${box}></div>`}
  </section>`;
}

function Accuracy({label, a}) {
  if (!a || a.count === 0) {
    return html`<div class="accuracy"><h3>${label}</h3>
      <p class="muted">no job with an estimated start has started</p></div>`;
  }
  const pct = (x) => `${Math.round(100 * x)}%`;
  return html`<div class="accuracy" data-window=${label}>
    <h3>${label}: ${a.count} start${a.count === 1 ? '' : 's'}</h3>
    <dl class="figures">
      <div><dt>median error</dt><dd>${span(a.medianAbsErrorSeconds)}</dd></div>
      <div><dt>90th percentile</dt><dd>${span(a.p90AbsErrorSeconds)}</dd></div>
      <div><dt>within 5 min</dt><dd>${pct(a.within5m)}</dd></div>
      <div><dt>within 25% of the wait</dt><dd>${pct(a.within25Percent)}</dd></div>
      <div><dt>started later than estimated</dt><dd>${pct(a.late / a.count)}</dd></div>
    </dl></div>`;
}

async function downloadCsv(seconds) {
  const res = await fetch(`/v1/history?format=csv&seconds=${seconds}&points=10000`,
                          {headers: {Authorization: `Bearer ${token()}`}});
  if (!res.ok) throw new Error(`CSV export: ${res.status}`);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = 'gangway-history.csv';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function HistoryView() {
  const [range, setRange] = useState(86400);
  const [csvError, setCsvError] = useState(null);
  const {data, error} = useLive(async () => {
    const [h, e] = await Promise.all([api(`/v1/history?seconds=${range}&points=600`),
                                      api('/v1/estimates')]);
    return {h, e};
  }, [range], {everyMs: 30000, when: () => false});
  if (!data) return html`<h1>History</h1><${ErrorLine} error=${error} /><p class="muted">loading…</p>`;
  const samples = data.h.samples;
  const xs = samples.map((s) => s.time);
  const col = (key) => samples.map((s) => s[key]);
  const queues = [...new Set(samples.flatMap((s) => Object.keys(s.queues)))].sort();
  const charts = [
    {title: 'GPUs', unit: 'GPUs', series: [
      {label: 'total', colour: '#6b7280', values: col('gpus')},
      {label: 'allocated', colour: '#2563eb', values: col('allocatedGpus')},
      {label: 'used (measured)', colour: '#15803d', values: col('usedGpus')}]},
    {title: 'Jobs', unit: 'jobs', series: [
      {label: 'pending', colour: '#d97706', values: col('pendingJobs')},
      {label: 'running', colour: '#2563eb', values: col('runningJobs')}]},
    {title: 'Wait before placement', unit: 'seconds', series: [
      {label: 'p50', colour: '#15803d', values: col('waitP50')},
      {label: 'p90', colour: '#d97706', values: col('waitP90')},
      {label: 'p99', colour: '#b91c1c', values: col('waitP99')}]},
    {title: 'GPU-hours per queue (per sample)', unit: 'GPU-hours', series: queues.map((q) => ({
      label: q, colour: colourOf(q),
      values: samples.map((s) => (s.queues[q] ? s.queues[q].gpuHours : null))}))},
  ];
  return html`
    <h1>History</h1>
    <${ErrorLine} error=${error || csvError} />
    <p class="toolbar">
      ${kRanges.map(([label, s]) => html`<button class=${range === s ? 'active' : ''}
        onClick=${() => setRange(s)}>${label}</button>`)}
      <button class="csv" onClick=${() => downloadCsv(range).then(() => setCsvError(null), setCsvError)}>
        Export CSV</button>
      <span class="muted">${samples.length} samples, one every ${span(data.h.intervalSeconds)},
        kept ${span(data.h.retentionSeconds)}</span>
    </p>
    <div class="grid charts">
      ${charts.map((c) => html`<${Chart} key=${c.title + range} ...${c} xs=${xs} />`)}
    </div>
    <section class="card wide" id="estimates">
      <h2>How good the estimated starts are</h2>
      <p class="muted">Each job's first estimated start set against when it started.</p>
      <div class="grid"><${Accuracy} label="last day" a=${data.e.day} />
        <${Accuracy} label="last week" a=${data.e.week} /></div>
    </section>`;
}
