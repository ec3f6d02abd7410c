// Overview: my jobs by state (each pending one with its reason and estimated start), the
// cluster's GPUs allocated and used, queue cards, nodes that are not ready or have an
// unhealthy GPU, and jobs holding
// GPUs they do not use.
import {api} from './api.js';
import {ErrorLine, JobLink, StateBadge, ago, gpus, html, percent, until, useLive} from './common.js';

const kStates = ['pending', 'scheduled', 'running', 'preempted', 'succeeded', 'failed',
                 'cancelled', 'timeout'];

async function load() {
  const [jobs, util, queues, nodes, sick] = await Promise.all([
    api('/v1/jobs?limit=200'),
    api('/v1/utilization?jobs=10&nodes=none'),
    api('/v1/queues'),
    api('/v1/nodes?view=summary&state=cordoned,draining,drained,lost&limit=100'),
    api('/v1/nodes?view=summary&state=ready&unhealthy=true&limit=100'),
  ]);
  // Nodes that need an operator: not ready (an autoscaled pool's powered-off or booting nodes
  // are not trouble), or ready with a GPU that failed.
  return {jobs: jobs.jobs, util, queues: queues.queues, nodes: nodes.nodes, sick: sick.nodes};
}

export function PendingReason({pending}) {
  if (!pending) return html`<span class="muted">waiting for the next cycle</span>`;
  return html`
    <span class="reason" data-code=${pending.code}>${pending.message || pending.code}</span>
    ${pending.estimatedStart &&
      html` <span class="eta" title=${pending.estimatedStart}>
        (estimated start ${until(pending.estimatedStart)})</span>`}`;
}

function MyJobs({jobs}) {
  const counts = {};
  for (const j of jobs) counts[j.state] = (counts[j.state] || 0) + 1;
  const pending = jobs.filter((j) => j.state === 'pending');
  const running = jobs.filter((j) => j.state === 'running' || j.state === 'scheduled');
  return html`
    <section class="card wide" id="my-jobs">
      <h2>My jobs</h2>
      <div class="counts">
        ${kStates.filter((s) => counts[s]).map((s) => html`
          <span class="count"><${StateBadge} state=${s} /> ${counts[s]}</span>`)}
        ${jobs.length === 0 && html`<span class="muted">none yet: gangway submit JOB.yaml</span>`}
      </div>
      ${pending.length > 0 && html`
        <h3>Pending</h3>
        <table class="jobs pending">
          <thead><tr><th>job</th><th>name</th><th>queue</th><th>GPUs</th><th>waiting</th>
            <th>why</th></tr></thead>
          <tbody>
            ${pending.map((j) => html`
              <tr data-job=${j.id}>
                <td><${JobLink} id=${j.id} /></td>
                <td class="name">${j.name}</td>
                <td><a href=${'#/queues/' + encodeURIComponent(j.queue)}>${j.queue}</a></td>
                <td>${gpus(j.gpus)}</td>
                <td>${ago(j.submittedAt)}</td>
                <td><${PendingReason} pending=${j.pending} /></td>
              </tr>`)}
          </tbody>
        </table>`}
      ${running.length > 0 && html`
        <h3>Running</h3>
        <table class="jobs running">
          <thead><tr><th>job</th><th>name</th><th>queue</th><th>GPUs</th><th>state</th>
            <th>started</th></tr></thead>
          <tbody>
            ${running.map((j) => html`
              <tr data-job=${j.id}>
                <td><${JobLink} id=${j.id} /></td>
                <td class="name">${j.name}</td>
                <td>${j.queue}</td>
                <td>${gpus(j.gpus)}</td>
                <td><${StateBadge} state=${j.state} /></td>
                <td>${ago(j.startedAt)}</td>
              </tr>`)}
          </tbody>
        </table>`}
    </section>`;
}

function Cluster({util, nodes, sick}) {
  const c = util.cluster;
  const allocated = c.gpus > 0 ? (100 * c.allocatedGpus) / c.gpus : 0;
  const bad = nodes;  // the API's filter: cordoned, draining, drained or lost
  const count = Object.values(c.nodes || {}).reduce((s, n) => s + n, 0);
  return html`
    <section class="card" id="cluster">
      <h2>Cluster</h2>
      <dl class="figures">
        <div><dt>GPUs</dt><dd>${c.gpus}</dd></div>
        <div><dt>allocated</dt><dd>${gpus(c.allocatedGpus)} (${percent(allocated)})</dd></div>
        <div><dt>used (measured)</dt>
          <dd>${c.gpusReporting > 0 ? percent(c.utilization) : 'not reported'}</dd></div>
        <div><dt>nodes</dt><dd>${count}</dd></div>
      </dl>
      <div class="bar" title="GPUs allocated">
        <span style=${{width: `${allocated}%`}}></span></div>
      <h3>Nodes not ready</h3>
      ${bad.length === 0 ? html`<p class="muted">every node is ready</p>` : html`
        <ul class="nodes-bad">
          ${bad.map((n) => html`<li><span class=${'badge node-' + n.state}>${n.state}</span>
            ${' '}${n.name}, last heartbeat ${ago(n.lastHeartbeat)}</li>`)}
        </ul>`}
      ${sick.length > 0 && html`
        <h3>Ready nodes with unhealthy GPUs</h3>
        <ul class="nodes-sick">
          ${sick.map((n) => html`<li>${
            `${n.name}: GPU ${n.unhealthyGpus.join(', ')} of ${n.gpuCount} unhealthy`}</li>`)}
        </ul>`}
    </section>`;
}

function Idle({util}) {
  const idle = util.jobs.filter((j) => j.idleGpus !== null && j.idleGpus >= 0.5);
  return html`
    <section class="card" id="idle">
      <h2>Holding GPUs they do not use</h2>
      ${idle.length === 0
        ? html`<p class="muted">${util.cluster.gpusReporting > 0
            ? 'no job holds an idle GPU'
            : 'no GPU reports its utilization (fake GPUs report none)'}</p>`
        : html`<table><thead><tr><th>job</th><th>user</th><th>GPUs</th><th>used</th>
            <th>idle GPUs</th></tr></thead><tbody>
            ${idle.map((j) => html`<tr><td>${j.name !== undefined && j.name !== null
                ? html`<${JobLink} id=${j.id}>${j.id} ${j.name}<//>` : j.id}</td>
              <td>${j.user}</td><td>${gpus(j.gpus)}</td><td>${percent(j.utilization)}</td>
              <td>${gpus(j.idleGpus)}</td></tr>`)}
          </tbody></table>`}
    </section>`;
}

function QueueCards({queues}) {
  return html`
    <section class="card wide" id="queue-cards">
      <h2>Queues</h2>
      <div class="cards">
        ${queues.map((q) => html`
          <a class="queue-card" href=${'#/queues/' + encodeURIComponent(q.name)}
             data-queue=${q.name}>
            <strong>${q.name}</strong>
            <span>${q.pending} pending, ${q.running} running</span>
            <span>${gpus(q.usage.gpuMilli / 1000)} GPUs in use
              ${q.guarantee.gpuMilli > 0 && html` of ${gpus(q.guarantee.gpuMilli / 1000)}
                guaranteed`}</span>
          </a>`)}
      </div>
    </section>`;
}

export function OverviewView() {
  // Events drive it; the slow refresh is for utilization, which changes without events.
  const {data, error} = useLive(load, [], {everyMs: 15000, batchMs: 1000});
  if (!data) return html`<${ErrorLine} error=${error} /><p class="muted">loading…</p>`;
  return html`
    <${ErrorLine} error=${error} />
    <div class="grid">
      <${MyJobs} jobs=${data.jobs} />
      <${Cluster} util=${data.util} nodes=${data.nodes} sick=${data.sick} />
      <${Idle} util=${data.util} />
      <${QueueCards} queues=${data.queues} />
    </div>`;
}
