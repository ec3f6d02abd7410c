// Queue line: a queue's pending jobs in the order the scheduler will consider them, with
// position, GPUs ahead, reason, estimated start, priority and age. Other users' jobs show as
// their id, user and size only (the API gives no more).
import {api} from './api.js';
import {ErrorLine, JobLink, ago, gpus, html, until, useLive} from './common.js';

export function QueueLineView({queue, me}) {
  const {data, error} = useLive(() => api(`/v1/queues/${encodeURIComponent(queue)}/jobs`),
                                [queue]);
  return html`
    <h1>Queue ${queue}</h1>
    <p class="muted">Pending jobs in the order the scheduler considers them; jobs submitted
      since its last cycle come last.</p>
    <${ErrorLine} error=${error} />
    ${data && (data.jobs.length === 0 ? html`<p class="muted">nothing pending</p>` : html`
      <table class="line">
        <thead><tr><th>#</th><th>job</th><th>user</th><th>name</th><th>GPUs</th>
          <th>GPUs ahead</th><th>priority</th><th>waiting</th><th>why</th>
          <th>estimated start</th></tr></thead>
        <tbody>
          ${data.jobs.map((j) => html`
            <tr data-job=${j.id} class=${j.user === me.user ? 'mine' : ''}>
              <td class="position">${j.position}</td>
              <td>${j.name !== null ? html`<${JobLink} id=${j.id} />` : j.id}</td>
              <td>${j.user}</td>
              <td class="name">${j.name ?? html`<span class="muted">hidden</span>`}</td>
              <td>${gpus(j.gpus)}</td>
              <td class="ahead">${gpus(j.gpusAhead)}</td>
              <td>${j.priorityClass || j.priority}</td>
              <td>${ago(j.submittedAt)}</td>
              <td class="reason" data-code=${j.pending ? j.pending.code : ''}>
                ${!j.considered ? html`<span class="muted">not yet considered</span>`
                  : j.pending && (j.pending.message || j.pending.code)}</td>
              <td>${j.pending && j.pending.estimatedStart ? until(j.pending.estimatedStart) : ''}</td>
            </tr>`)}
        </tbody>
      </table>`)}`;
}
