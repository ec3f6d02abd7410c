// The dashboard's shell: sign-in, navigation and the hash router. Each view has its own URL
// (#/jobs/12, #/queues/nlp, ...), so a link or a reload lands on the same view.
import {api, onSignedOut, setToken, token} from './api.js';
import {html, render, startLive, stopLive, useEffect, useState} from './common.js';
import {EventsView} from './events.js';
import {GpuMapView} from './gpu_map.js';
import {HistoryView} from './history.js';
import {JobView} from './job.js';
import {NodesView} from './nodes.js';
import {OverviewView} from './overview.js';
import {QueueLineView} from './queue_line.js';
import {QueuesView} from './queues.js';

const kViews = [
  {path: '', title: 'Overview'},
  {path: 'queues', title: 'Queues'},
  {path: 'gpus', title: 'GPU map'},
  {path: 'nodes', title: 'Nodes'},
  {path: 'history', title: 'History'},
  {path: 'events', title: 'Events'},
];

function route() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  return parts.filter((p, i) => p !== '' || i === 0);
}

function useRoute() {
  const [r, setR] = useState(route());
  useEffect(() => {
    const on = () => setR(route());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return r;
}

function SignIn({onSignedIn, message}) {
  const [value, setValue] = useState('');
  const [error, setError] = useState(message || '');
  const submit = async (e) => {
    e.preventDefault();
    setToken(value.trim());
    try {
      const me = await api('/v1/whoami');
      onSignedIn(me);
    } catch (err) {
      setToken('');
      setError(err.message);
    }
  };
  return html`
    <main class="signin">
      <h1>Gangway</h1>
      <form onSubmit=${submit}>
        <label for="token">Your API token</label>
        <input id="token" type="password" autocomplete="current-password" value=${value}
               onInput=${(e) => setValue(e.target.value)} autofocus />
        <button type="submit">Sign in</button>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        <p class="hint">The token stays in this tab (sessionStorage) and is sent only to this
          controller. <code>gangway up</code> writes the admin's to gangway-data/client.json.</p>
      </form>
    </main>`;
}

// `me` is null while a stored token is being checked: the views that show everyone the same
// (GPU map, queues, events, history) ask for their data meanwhile instead of after whoami;
// those that depend on who is asking wait for it.
function Page({me, onSignOut}) {
  const r = useRoute();
  const [head, arg] = [r[0] || '', r[1]];
  let view;
  if (!me && !['gpus', 'events', 'history'].includes(head) && !(head === 'queues' && !arg)) view = null;
  else if (head === '') view = html`<${OverviewView} me=${me} />`;
  else if (head === 'queues' && arg) view = html`<${QueueLineView} key=${arg} queue=${arg} me=${me} />`;
  else if (head === 'queues') view = html`<${QueuesView} />`;
  else if (head === 'jobs' && arg) view = html`<${JobView} key=${arg} id=${arg} me=${me} />`;
  else if (head === 'gpus') view = html`<${GpuMapView} />`;
  else if (head === 'nodes') view = html`<${NodesView} me=${me} />`;
  else if (head === 'events') view = html`<${EventsView} />`;
  else if (head === 'history') view = html`<${HistoryView} />`;
  else view = html`<p class="error">No such view: #/${r.join('/')}</p>`;
  return html`
    <header>
      <a class="brand" href="#/">Gangway</a>
      <nav>
        ${kViews.map((v) => html`
          <a href=${'#/' + v.path} class=${head === v.path ? 'active' : ''}>${v.title}</a>`)}
      </nav>
      ${me && html`<span class="who">${me.user} (${me.role})
        <button class="link" onClick=${onSignOut}>sign out</button></span>`}
    </header>
    <main id="view">${view}</main>`;
}

function App() {
  const [me, setMe] = useState(null);
  const [checked, setChecked] = useState(false);
  const [message, setMessage] = useState('');
  useEffect(() => {
    const off = onSignedOut((why) => {
      stopLive();
      setMe(null);
      setMessage(`Signed out: ${why}`);
    });
    if (!token()) {
      setChecked(true);
    } else {
      api('/v1/whoami').then(setMe, () => setToken('')).finally(() => setChecked(true));
    }
    return off;
  }, []);
  useEffect(() => {
    if (me) startLive();
  }, [me]);
  if (!me && checked) return html`<${SignIn} message=${message} onSignedIn=${setMe} />`;
  if (!me && !token()) return null;
  const signOut = () => {
    setToken('');
    stopLive();
    setMe(null);
    setMessage('');
  };
  return html`<${Page} me=${me} onSignOut=${signOut} />`;
}

render(html`<${App} />`, document.getElementById('app'));
