// Nodes: state, GPUs, heartbeat age; drain, undrain, cordon and uncordon for admins.
import {api} from './api.js';
import {ErrorLine, ago, html, useLive, useState} from './common.js';

export function NodesView({me}) {
  const {data, error, reload} = useLive(() => api('/v1/nodes?view=summary'), []);
  const [actionError, setActionError] = useState(null);
  const act = async (name, action) => {
    try {
      await api(`/v1/nodes/${encodeURIComponent(name)}/${action}`, {method: 'POST', body: {}});
      setActionError(null);
      reload();
    } catch (e) {
      setActionError(e);
    }
  };
  const admin = me.role === 'admin';
  return html`
    <h1>Nodes</h1>
    <${ErrorLine} error=${error || actionError} />
    ${data && html`
      <table class="nodes">
        <thead><tr><th>node</th><th>state</th><th>GPUs</th><th>free</th><th>unhealthy</th>
          <th>MIG</th><th>CPU</th><th>last heartbeat</th>${admin && html`<th>actions</th>`}</tr></thead>
        <tbody>
          ${data.nodes.map((n) => html`
            <tr data-node=${n.name}>
              <td>${n.name}</td>
              <td><span class=${'badge node-' + n.state}>${n.state}</span></td>
              <td>${n.gpuCount} ${Object.entries(n.gpuModels).map(([m, c]) => `${c}x${m}`).join(' ')}</td>
              <td>${n.gpusFree}</td>
              <td>${n.unhealthyGpus.join(', ')}</td>
              <td>${n.migGpus.join(', ')}</td>
              <td>${n.cpuMilli / 1000}</td>
              <td>${ago(n.lastHeartbeat)}</td>
              ${admin && html`<td class="actions">
                ${n.state === 'ready' || n.state === 'cordoned'
                  ? html`<button onClick=${() => act(n.name, 'drain')}>drain</button>`
                  : html`<button onClick=${() => act(n.name, 'undrain')}>undrain</button>`}
                ${n.state === 'cordoned'
                  ? html`<button onClick=${() => act(n.name, 'uncordon')}>uncordon</button>`
                  : n.state === 'ready' && html`<button onClick=${() => act(n.name, 'cordon')}>cordon</button>`}
              </td>`}
            </tr>`)}
        </tbody>
      </table>
      ${data.next && html`<p class="muted">more nodes follow (the first page is shown)</p>`}`}`;
}
