// Queues and fair share: the queue tree with guarantee, usage, borrowing, lending, fair share,
// pending and running.
import {api} from './api.js';
import {ErrorLine, gpus, html, useLive} from './common.js';

function tree(queues) {
  const children = new Map();
  for (const q of queues) {
    const p = q.parent || '';
    if (!children.has(p)) children.set(p, []);
    children.get(p).push(q);
  }
  const out = [];
  const walk = (parent, depth) => {
    for (const q of children.get(parent) || []) {
      out.push({q, depth});
      walk(q.name, depth + 1);
    }
  };
  walk('', 0);
  return out;
}

export function QueuesView() {
  const {data, error} = useLive(() => api('/v1/queues'), []);
  return html`
    <h1>Queues and fair share</h1>
    <${ErrorLine} error=${error} />
    ${data && html`
      <table class="queues">
        <thead><tr><th>queue</th><th>guarantee</th><th>in use</th><th>borrowing</th>
          <th>lending</th><th>borrow limit</th><th>weight</th><th>fair share</th>
          <th>pending</th><th>running</th></tr></thead>
        <tbody>
          ${tree(data.queues).map(({q, depth}) => {
            const guarantee = q.guarantee.gpuMilli / 1000;
            const used = q.usage.gpuMilli / 1000;
            const borrowing = Math.max(0, used - guarantee);
            const lending = Math.max(0, guarantee - used);
            const scale = Math.max(guarantee, used, q.fairShareGpuMilli / 1000, 1);
            return html`
              <tr data-queue=${q.name}>
                <td style=${{paddingLeft: `${0.5 + depth * 1.5}em`}}>
                  <a href=${'#/queues/' + encodeURIComponent(q.name)}>${q.name}</a></td>
                <td>${gpus(guarantee)}</td>
                <td>
                  <div class="bar small" title=${`${gpus(used)} of ${gpus(guarantee)} guaranteed`}>
                    <span style=${{width: `${(100 * Math.min(used, guarantee)) / scale}%`}}></span>
                    <span class="over" style=${{width: `${(100 * borrowing) / scale}%`}}></span>
                  </div>
                  ${gpus(used)}</td>
                <td>${borrowing > 0 ? gpus(borrowing) : ''}</td>
                <td>${lending > 0 ? gpus(lending) : ''}</td>
                <td>${q.borrowLimit ? gpus(q.borrowLimit.gpuMilli / 1000) : '–'}</td>
                <td>${q.weight}</td>
                <td>${(100 * q.fairShare).toFixed(1)}% (${gpus(q.fairShareGpuMilli / 1000)})</td>
                <td>${q.pending}</td>
                <td>${q.running}</td>
              </tr>`;
          })}
        </tbody>
      </table>
      <p class="muted">Borrowing: GPUs in use beyond the guarantee (they can be reclaimed).
        Lending: guaranteed GPUs not in use, which other queues may borrow.</p>`}`;
}
