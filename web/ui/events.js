// Events: a live feed of what happens to jobs and nodes, with filters. Users see their own
// jobs' events and the cluster's.
import {api} from './api.js';
import {ErrorLine, JobLink, html, onEvents, time, useEffect, useState} from './common.js';

const kKeep = 2000;

export function EventsView() {
  const [events, setEvents] = useState([]);
  const [error, setError] = useState(null);
  const [type, setType] = useState('');
  const [job, setJob] = useState('');
  const [text, setText] = useState('');
  useEffect(() => {
    let alive = true;
    api('/v1/events?last=200').then((page) => {
      if (alive) setEvents((now) => merge(page.events, now));
    }, setError);
    const off = onEvents((batch) => setEvents((now) => merge(now, batch)));
    return () => {
      alive = false;
      off();
    };
  }, []);
  const types = [...new Set(events.map((e) => e.type))].sort();
  const shown = events.filter((e) => (!type || e.type === type) &&
                                     (!job || String(e.job) === job.trim()) &&
                                     (!text || e.message.toLowerCase().includes(text.toLowerCase())))
                      .slice().reverse();
  return html`
    <h1>Events</h1>
    <${ErrorLine} error=${error} />
    <p class="toolbar">
      <label>type <select value=${type} onChange=${(e) => setType(e.target.value)}>
        <option value="">all</option>
        ${types.map((t) => html`<option value=${t}>${t}</option>`)}</select></label>
      <label>job <input size="6" value=${job} onInput=${(e) => setJob(e.target.value)} /></label>
      <label>text <input value=${text} onInput=${(e) => setText(e.target.value)} /></label>
      <span class="muted">${shown.length} of ${events.length}, newest first, live</span>
    </p>
    <table class="events">
      <thead><tr><th>time</th><th>job</th><th>type</th><th>message</th></tr></thead>
      <tbody>
        ${shown.map((e) => html`
          <tr key=${e.seq} data-seq=${e.seq}>
            <td>${time(e.time)}</td>
            <td>${e.job ? html`<${JobLink} id=${e.job}>${e.job}<//>` : 'cluster'}</td>
            <td>${e.type}</td>
            <td>${e.message}</td>
          </tr>`)}
      </tbody>
    </table>`;
}

// The events of both lists once each, oldest first, the newest kKeep of them.
function merge(a, b) {
  const bySeq = new Map();
  for (const e of a) bySeq.set(e.seq, e);
  for (const e of b) bySeq.set(e.seq, e);
  return [...bySeq.values()].sort((x, y) => x.seq - y.seq).slice(-kKeep);
}
