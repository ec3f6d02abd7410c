// Nodes: state, GPUs, heartbeat age; drain, undrain, cordon and uncordon for admins.
import {api} from './api.js';
import {ErrorLine, ago, html, useLive, useState} from './common.js';

const kPage = 200;
const kStates = ['ready', 'cordoned', 'draining', 'drained', 'lost', 'off', 'booting'];

// A page of kPage nodes in name order (the API's cursor), filtered by state and by whether
// a GPU is unhealthy.
export function NodesView({me}) {
  const [state, setState] = useState('');
  const [unhealthy, setUnhealthy] = useState(false);
  const [cursors, setCursors] = useState(['']);  // the `after` of each page seen
  const after = cursors[cursors.length - 1];
  const {data, error, reload} = useLive(
    () => api(`/v1/nodes?view=summary&limit=${kPage}` +
              `${after ? '&after=' + encodeURIComponent(after) : ''}` +
              `${state ? '&state=' + state : ''}${unhealthy ? '&unhealthy=true' : ''}`),
    [after, state, unhealthy]);
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
    <p class="toolbar">
      <label>state <select value=${state}
          onChange=${(e) => { setState(e.target.value); setCursors(['']); }}>
        <option value="">all</option>
        ${kStates.map((s) => html`<option value=${s}>${s}</option>`)}</select></label>
      <label><input type="checkbox" class="unhealthy-only" checked=${unhealthy}
          onChange=${(e) => { setUnhealthy(e.target.checked); setCursors(['']); }} />
        with an unhealthy GPU</label>
      <span class="muted">page ${cursors.length}, ${kPage} nodes a page</span>
      <button disabled=${cursors.length === 1}
              onClick=${() => setCursors(cursors.slice(0, -1))}>previous</button>
      <button class="next-page" disabled=${!data || !data.next}
              onClick=${() => setCursors([...cursors, data.next])}>next</button>
    </p>
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
                ${n.draining
                  ? html`<button onClick=${() => act(n.name, 'undrain')}>undrain</button>`
                  : html`<button onClick=${() => act(n.name, 'drain')}>drain</button>`}
                ${n.cordoned
                  ? html`<button onClick=${() => act(n.name, 'uncordon')}>uncordon</button>`
                  : !n.draining && html`<button onClick=${() => act(n.name, 'cordon')}>cordon</button>`}
              </td>`}
            </tr>`)}
        </tbody>
      </table>
      `}`;
}
