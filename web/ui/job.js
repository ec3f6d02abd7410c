// Job detail: its tasks with node and GPUs, a timeline of its events, the reason it waits
// (with its place in line), the log tail that follows, GPU use, and cancel.
import {ApiError, api} from './api.js';
import {ErrorLine, StateBadge, ago, gpus, html, percent, time, until, useEffect, useLive, useRef,
        useState} from './common.js';
import {PendingReason} from './overview.js';

const kFinished = new Set(['succeeded', 'failed', 'cancelled', 'timeout']);
const kTailBytes = 64 * 1024;

async function load(id) {
  const [job, util] = await Promise.all([api(`/v1/jobs/${id}`),
                                         api(`/v1/utilization?job=${id}&nodes=none`)]);
  return {job: job.job, use: util.jobs.find((j) => j.id === Number(id)) || null};
}

// Follows a task's output: the last 64 KB (X-Gangway-Log-Size says where the end is), then
// what is appended, every second until the API says it is complete.
function LogTail({id, task}) {
  const [text, setText] = useState('');
  const [status, setStatus] = useState('');
  const box = useRef(null);
  useEffect(() => {
    let alive = true;
    let offset = -1;
    let timer = null;
    setText('');
    const poll = async () => {
      try {
        if (offset < 0) {
          const head = await api(`/v1/jobs/${id}/logs?task=${task}&offset=0&limit=1`, {text: true});
          offset = Math.max(0, (Number(head.headers.get('X-Gangway-Log-Size')) || 0) - kTailBytes);
        }
        const chunk = await api(`/v1/jobs/${id}/logs?task=${task}&offset=${offset}&limit=${kTailBytes}`,
                                {text: true});
        if (!alive) return;
        offset = Number(chunk.headers.get('X-Gangway-Next-Offset')) || offset;
        if (chunk.text) setText((t) => (t + chunk.text).slice(-kTailBytes * 2));
        const complete = chunk.headers.get('X-Gangway-Log-Complete') === 'true';
        setStatus(complete ? 'complete' : 'following');
        if (!complete) timer = setTimeout(poll, chunk.text.length >= kTailBytes ? 0 : 1000);
      } catch (e) {
        if (!alive) return;
        setStatus(e instanceof ApiError ? e.message : 'cannot read the output');
        timer = setTimeout(poll, 3000);
      }
    };
    poll();
    return () => {
      alive = false;
      if (timer) clearTimeout(timer);
    };
  }, [id, task]);
  useEffect(() => {
    if (box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [text]);
  return html`
    <div class="log">
      <div class="muted">task ${task} output ${status && `(${status})`}</div>
      <pre ref=${box}>${text || ' '}</pre>
    </div>`;
}

// What would change it: the smallest changes that would let the job start now or sooner,
// each tried by the real scheduler on the cluster as it is (POST /v1/whatif, rate-limited).
function WhatIf({id}) {
  const [state, setState] = useState({busy: false, answer: null, error: null});
  const ask = async () => {
    setState({busy: true, answer: null, error: null});
    try {
      setState({busy: false, answer: await api('/v1/whatif', {method: 'POST', body: {job: Number(id)}}),
                error: null});
    } catch (e) {
      setState({busy: false, answer: null, error: e});
    }
  };
  const when = (o) => (o.startsNow ? 'now'
    : o.estimatedStart ? until(o.estimatedStart)
    : o.code === 'Infeasible' ? 'never, as the cluster is' : 'not estimated');
  const a = state.answer;
  return html`
    <div class="whatif">
      <button class="ask-whatif" onClick=${ask} disabled=${state.busy}>
        ${state.busy ? 'Trying changes…' : 'What would start it sooner?'}</button>
      <${ErrorLine} error=${state.error} />
      ${a && (a.asIs.startsNow
        ? html`<p class="whatif-result">It would start in the next cycle as it is.</p>`
        : a.changes.length === 0
          ? html`<p class="whatif-result muted">No change of GPUs, replicas, topology, time limit
              or queue would start it sooner (${a.cycles} tried by the scheduler).</p>`
          : html`<table class="whatif-result">
              <thead><tr><th>change</th><th>field</th><th>would start</th></tr></thead>
              <tbody>${a.changes.map((c) => html`
                <tr data-field=${c.field}><td>${c.summary}</td><td><code>${c.field}: ${c.to || '(none)'}</code></td>
                  <td>${when(c)}</td></tr>`)}</tbody>
            </table>
            <p class="muted">${a.cycles} cycles of the scheduler on the cluster as it is now
              (as it is: starts ${when(a.asIs)})${a.truncated ? '; the search stopped at its budget' : ''}.</p>`)}
    </div>`;
}

// A service's replicas (kind: service): each a job of its own, kept running until the
// service is cancelled; `ready` when its process runs and is not stopping.
function Replicas({service}) {
  return html`
    <h2>Replicas</h2>
    <p class="replica-count">${service.running} of ${service.replicas} running
      (generation ${service.generation})</p>
    <table class="replicas">
      <thead><tr><th>replica</th><th>job</th><th>state</th><th>restarts</th><th>generation</th>
        <th>endpoint</th><th>message</th></tr></thead>
      <tbody>
        ${(service.replicaList || []).map((r) => html`
          <tr data-replica=${r.replica}>
            <td>${r.replica}</td><td><a href=${'#/jobs/' + r.job}>${r.job}</a></td>
            <td><${StateBadge} state=${r.state} />${r.ready ? ' ready' : ''}</td>
            <td>${r.restarts}</td><td>${r.generation}</td>
            <td>${r.endpoint ? `${r.endpoint.host}:${r.endpoint.port} (${r.endpoint.node})` : ''}</td>
            <td>${r.message}</td>
          </tr>`)}
      </tbody>
    </table>`;
}

function Timeline({job}) {
  const events = (job.events || []).slice().sort((a, b) => a.seq - b.seq);
  return html`
    <ol class="timeline">
      <li><span class="when">${time(job.submittedAt)}</span> submitted</li>
      ${events.map((e) => html`
        <li data-type=${e.type}><span class="when">${time(e.time)}</span>
          <span class="type">${e.type}</span> ${e.message}</li>`)}
    </ol>`;
}

export function JobView({id, me}) {
  const {data, error, reload} = useLive(() => load(id), [id],
                                        {when: (events) => events.some((e) => String(e.job) === String(id))});
  const [task, setTask] = useState(0);
  const [actionError, setActionError] = useState(null);
  const [confirming, setConfirming] = useState(false);
  if (!data) return html`<${ErrorLine} error=${error} /><p class="muted">loading…</p>`;
  const j = data.job;
  const cancel = async () => {
    setConfirming(false);
    try {
      await api(`/v1/jobs/${j.id}/cancel`, {method: 'POST', body: {}});
      setActionError(null);
      reload();
    } catch (e) {
      setActionError(e);
    }
  };
  // A replica is its service's: cancelling one alone is refused (scale the service instead).
  const mayCancel = !kFinished.has(j.state) && !j.replicaOf &&
                    (me.role === 'admin' || me.user === j.user);
  const el = j.elastic;
  return html`
    <h1>Job ${j.id}: <span class="name">${j.name}</span> <${StateBadge} state=${j.state} /></h1>
    <${ErrorLine} error=${error || actionError} />
    <dl class="figures">
      <div><dt>user</dt><dd>${j.user}</dd></div>
      <div><dt>queue</dt><dd><a href=${'#/queues/' + encodeURIComponent(j.queue)}>${j.queue}</a></dd></div>
      ${j.service
        ? html`<div><dt>kind</dt><dd>service of ${j.service.replicas} replicas</dd></div>`
        : html`<div><dt>GPUs</dt><dd>${gpus(j.gpus)} over ${j.tasks} task${j.tasks === 1 ? '' : 's'}</dd></div>`}
      ${j.replicaOf && html`<div><dt>replica</dt><dd class="replica-of">${j.replicaOf.replica} of
        service <a href=${'#/jobs/' + j.replicaOf.service}>${j.replicaOf.service}</a></dd></div>`}
      ${j.endpoint && html`<div><dt>endpoint</dt><dd>${j.endpoint.host}:${j.endpoint.port}</dd></div>`}
      ${el && html`<div><dt>elastic</dt><dd class="elastic">${
        `${(j.taskList || []).length} tasks now, ${el.minTasks} to ${el.maxTasks}` +
        (el.resizingTo !== null ? `, resizing to ${el.resizingTo}` : '') +
        (el.generation > 0 ? `, generation ${el.generation}` : '')}</dd></div>`}
      <div><dt>priority</dt><dd>${j.priorityClass || j.priority}</dd></div>
      <div><dt>submitted</dt><dd>${ago(j.submittedAt)}</dd></div>
      ${j.startedAt && html`<div><dt>started</dt><dd>${ago(j.startedAt)}</dd></div>`}
      ${j.finishedAt && html`<div><dt>finished</dt><dd>${ago(j.finishedAt)}</dd></div>`}
      ${j.timeLimit && html`<div><dt>time limit</dt><dd>${j.timeLimit}</dd></div>`}
      ${data.use && html`<div><dt>GPU use</dt><dd>${percent(data.use.utilization)}</dd></div>`}
      ${j.exitCode !== null && html`<div><dt>exit code</dt><dd>${j.exitCode}</dd></div>`}
    </dl>
    ${mayCancel && !confirming &&
      html`<button class="danger" onClick=${() => setConfirming(true)}>Cancel job</button>`}
    ${mayCancel && confirming && html`
      <p class="confirm">Cancel job ${j.id} (<span class="name">${j.name}</span>)? Running tasks
        get their checkpoint grace first.
        <button class="danger confirm-cancel" onClick=${cancel}>Yes, cancel it</button>
        <button onClick=${() => setConfirming(false)}>Keep it</button></p>`}
    ${j.message && html`<p class="message">${j.message}</p>`}
    ${j.state === 'pending' && html`
      <section class="card wide pending-detail">
        <h2>Why it waits</h2>
        <p><${PendingReason} pending=${j.pending} /></p>
        ${j.pending && j.pending.position && html`
          <p>Position <strong class="position">${j.pending.position}</strong> in queue${' '}
            ${j.queue}, with ${gpus(j.pending.gpusAhead)} GPUs asked for ahead of it.
            ${j.pending.estimatedStart && html` Estimated start ${until(j.pending.estimatedStart)}
              (${time(j.pending.estimatedStart)}).`}</p>`}
        <${WhatIf} id=${j.id} />
      </section>`}
    ${j.service && j.service.replicaList && html`<${Replicas} service=${j.service} />`}
    ${!j.service && html`
    <h2>Tasks</h2>
    <table class="tasks">
      <thead><tr><th>task</th><th>group</th><th>node</th><th>GPUs</th><th>state</th>
        <th>exit</th><th>message</th></tr></thead>
      <tbody>
        ${(j.taskList || []).map((t) => html`
          <tr class=${t.index === task ? 'selected' : ''} onClick=${() => setTask(t.index)}>
            <td>${t.index}</td><td>${t.group}</td><td>${t.node}</td>
            <td>${(t.gpus || []).join(', ')}${t.gpuMilli && t.gpuMilli % 1000 ? ` (${t.gpuMilli / 1000})` : ''}</td>
            <td>${t.state}</td><td>${t.exitCode ?? ''}</td><td>${t.message}</td>
          </tr>`)}
      </tbody>
    </table>`}
    ${(j.taskList || []).length > 0 && html`<${LogTail} id=${j.id} task=${task} />`}
    <h2>Timeline</h2>
    <${Timeline} job=${j} />`;
}
