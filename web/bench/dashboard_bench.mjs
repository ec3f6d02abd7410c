// The dashboard at scale (issue 20's benchmarks): a real `gangway server` holding N nodes x 8
// GPUs registered through the agent API (no agent processes: --node-timeout keeps them) and J
// running jobs, then Debian's chromium measuring, per view, the time to first paint and to
// the view's data on screen; the bytes one live refresh moves; and the controller's CPU while
// D dashboards stay open and a job is submitted and cancelled every second.
//
//   node web/bench/dashboard_bench.mjs --gangway build/release/gangway \
//        [--nodes 10000] [--jobs 40000] [--backlog 4000] [--dashboards 20] [--seconds 60]
//
// Prints a Markdown table; numbers vary from run to run on a shared VM.
import {spawn} from 'node:child_process';
import {mkdtempSync, readFileSync, writeFileSync} from 'node:fs';
import {createServer} from 'node:net';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {chromium} from 'playwright-core';

const args = Object.fromEntries(process.argv.slice(2).reduce((out, a, i, all) => {
  if (a.startsWith('--')) out.push([a.slice(2), all[i + 1]]);
  return out;
}, []));
const bin = args.gangway || 'build/release/gangway';
const kNodes = Number(args.nodes || 10000);
const kJobs = Number(args.jobs || 40000);
const kDashboards = Number(args.dashboards || 20);
const kBacklog = Number(args.backlog || 4000);
const kSeconds = Number(args.seconds || 60);
const kAdmin = 'bench-admin-token-0123456789';
const kUser = 'bench-user-token-0123456789';
const kJoin = 'bench-join-token-0123456789';

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const {port} = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Runs `fn(i)` for i in [0, n) with `width` in flight.
async function pool(n, width, fn) {
  let next = 0;
  await Promise.all(Array.from({length: width}, async () => {
    while (next < n) await fn(next++);
  }));
}

function cpuSeconds(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;  // utime + stime, in clock ticks of 1/100 s
}

const dir = mkdtempSync(join(tmpdir(), 'gangway-dash-bench-'));
writeFileSync(join(dir, 'auth.yaml'), `users:
  - {name: ops, token: "${kAdmin}", role: admin}
  - {name: alice, token: "${kUser}", role: user}
joinToken: "${kJoin}"
`);
writeFileSync(join(dir, 'queues.yaml'), `queues:
  - {name: training, guarantee: {gpu: ${Math.floor(kNodes * 8 * 0.6)}}}
  - {name: inference, guarantee: {gpu: ${Math.floor(kNodes * 8 * 0.3)}}}
  - {name: research}
`);
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const server = spawn(bin, ['server', '--data', join(dir, 'data'), '--listen', `127.0.0.1:${port}`,
                           '--auth', join(dir, 'auth.yaml'), '--config', join(dir, 'queues.yaml'),
                           '--node-timeout', '10h', '--history-interval', '10s'],
                     {stdio: ['ignore', 'ignore', 'inherit']});
const call = async (token, path, body) => {
  const res = await fetch(url + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {Authorization: `Bearer ${token}`, 'Content-Type': 'application/json'},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
};
try {
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(url + '/healthz')).ok) break;
    } catch (_) { /* not yet */ }
    if (i > 200) throw new Error('the controller did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  let t = Date.now();
  await pool(kNodes, 32, async (i) => {
    const name = `node-${String(i).padStart(5, '0')}`;
    const gpus = Array.from({length: 8}, (_, k) => ({index: k, model: 'H100-80GB',
      memoryBytes: 85899345920, uuid: `GPU-${name}-${k}`, domain: 0}));
    await call(kJoin, '/v1/agents/register', {node: {name, address: '127.0.0.1', cpuMilli: 128000,
      memoryBytes: 2199023255552, gpus}, agentId: `${name}-agent`});
  });
  console.error(`registered ${kNodes} nodes in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  t = Date.now();
  const queues = ['training', 'inference', 'research'];
  await pool(kJobs, 32, async (i) => {
    const token = i % 10 === 0 ? kUser : kAdmin;
    await call(token, '/v1/jobs', {name: `job-${i}`, queue: queues[i % 3], gpu: 1 + (i % 2),
                                   cpu: 1, memory: '1Gi', command: ['sleep', '1000']});
  });
  console.error(`submitted ${kJobs} jobs in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  for (;;) {
    const m = await (await fetch(url + '/metrics')).text();
    const pending = Number((m.match(/gangway_jobs\{state="pending"\} (\d+)/) || [])[1]);
    if (pending === 0) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  // A backlog: whole-node jobs, more than the empty nodes left, so that queue lines are long.
  await pool(kBacklog, 32, async (i) => {
    await call(i % 10 === 0 ? kUser : kAdmin, '/v1/jobs',
               {name: `wide-${i}`, queue: 'training', gpu: 8, cpu: 1, memory: '1Gi',
                command: ['sleep', '1000']});
  });
  await new Promise((r) => setTimeout(r, 3000));
  const m = await (await fetch(url + '/metrics')).text();
  const pendingNow = Number((m.match(/gangway_jobs\{state="pending"\} (\d+)/) || [])[1]);
  console.error(`backlog of ${kBacklog} 8-GPU jobs: ${pendingNow} pending`);
  if (args.hold) {
    // Keep the cluster up to probe it by hand: print where, wait to be killed.
    console.log(`holding: ${url} admin token ${kAdmin}, user token ${kUser}; data in ${dir}`);
    await new Promise(() => {});
  }
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  const open = async (token, hash) => {
    const context = await browser.newContext({viewport: {width: 1400, height: 900}});
    await context.addInitScript((tok) => sessionStorage.setItem('gangway.token', tok), token);
    const page = await context.newPage();
    // What crossed the wire (headers and compressed bodies) for every finished request.
    let bytes = 0;
    page.on('requestfinished', async (r) => {
      try {
        const s = await r.sizes();
        bytes += s.responseBodySize + s.responseHeadersSize;
      } catch (_) { /* the page went away */ }
    });
    const t0 = Date.now();
    await page.goto(`${url}/ui/#/${hash}`);
    return {page, context, t0, bytes: () => bytes};
  };
  const views = [
    ['overview', '', '#my-jobs'],
    ['queue line (training)', 'queues/training', 'table.line tbody tr'],
    ['job detail', 'jobs/1', 'table.tasks tbody tr'],
    ['GPU map', 'gpus', 'canvas.gpu-map[data-drawn]:not([data-drawn="0"])'],
    ['queues', 'queues', 'table.queues tbody tr'],
    ['nodes', 'nodes', 'table.nodes tbody tr'],
    ['history', 'history', '[data-chart] canvas'],
    ['events', 'events', 'table.events tbody tr'],
  ];
  const rows = [];
  for (const [name, hash, selector] of views) {
    const v = await open(kAdmin, hash);
    await v.page.locator(selector).first().waitFor({timeout: 120000});
    const shown = Date.now() - v.t0;
    const paint = await v.page.evaluate(() =>
      (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || null);
    const firstBytes = v.bytes();
    rows.push({name, paint, shown, firstBytes});
    await v.context.close();
  }
  // One live refresh of the overview: a job submitted, and what the page fetches for it.
  const live = await open(kAdmin, '');
  await live.page.locator('#my-jobs').waitFor({timeout: 120000});
  await new Promise((r) => setTimeout(r, 1000));
  const before = live.bytes();
  const id = (await call(kAdmin, '/v1/jobs', {name: 'refresh', queue: 'research', gpu: 1, command: ['true']})).job.id;
  await new Promise((r) => setTimeout(r, 2000));
  const refreshBytes = live.bytes() - before;
  await call(kAdmin, `/v1/jobs/${id}/cancel`, {});
  await live.context.close();

  // The same load without dashboards, then with D overviews open: a job submitted and
  // cancelled every second (with 1,500 jobs pending, the controller also plans every second).
  const tick = async () => {
    const cpu0 = cpuSeconds(server.pid);
    const w0 = Date.now();
    while (Date.now() - w0 < kSeconds * 1000) {
      const j = (await call(kUser, '/v1/jobs', {name: 'tick', queue: 'research', gpu: 1,
                                                command: ['true']})).job.id;
      await call(kUser, `/v1/jobs/${j}/cancel`, {});
      await new Promise((r) => setTimeout(r, 1000));
    }
    return (cpuSeconds(server.pid) - cpu0) / ((Date.now() - w0) / 1000);
  };
  const cpuAlone = await tick();
  const pages = [];
  for (let i = 0; i < kDashboards; i++) pages.push(await open(i % 2 ? kUser : kAdmin, ''));
  await Promise.all(pages.map((p) => p.page.locator('#my-jobs').waitFor({timeout: 300000})));
  const cpu = await tick();
  const idleBytes = pages.reduce((s, p) => s + p.bytes(), 0);
  await browser.close();

  console.log(`\n${kNodes} nodes x 8 GPUs, ${kJobs} running jobs, ${pendingNow} pending (release build, chromium ` +
              `headless, this machine)\n`);
  console.log('| view | first paint | data shown | bytes transferred to show it |');
  console.log('|---|---|---|---|');
  for (const r of rows) {
    console.log(`| ${r.name} | ${r.paint ? Math.round(r.paint) + ' ms' : '-'} | ${r.shown} ms | ` +
                `${(r.firstBytes / 1e3).toFixed(0)} kB |`);
  }
  console.log(`\nOne live refresh of the overview (a job submitted): ${(refreshBytes / 1e3).toFixed(1)} kB transferred`);
  console.log(`${kDashboards} overviews open for ${kSeconds} s, a job submitted and cancelled each second: ` +
              `controller CPU ${(100 * cpu).toFixed(1)} % of a core (${(100 * cpuAlone).toFixed(1)} % ` +
              `without dashboards); the pages fetched ` +
              `${(idleBytes / 1e6).toFixed(1)} MB in all (transferred)`);
} finally {
  server.kill('SIGTERM');
}
