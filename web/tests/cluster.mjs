// A real cluster for the dashboard's browser tests: `gangway server` and two `gangway agent
// --inventory` processes on 127.0.0.1, users alice and bob and the admin ops, started in a
// fresh directory and stopped (with every process) by stop().
import {spawn} from 'node:child_process';
import {mkdtempSync, writeFileSync} from 'node:fs';
import {createServer} from 'node:net';
import {tmpdir} from 'node:os';
import {join} from 'node:path';

export const tokens = {alice: 'alice-token-0123456789', bob: 'bob-token-0123456789',
                       ops: 'ops-token-0123456789'};
const kJoin = 'join-token-0123456789';

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const {port} = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Polls `check` (an async function returning a value or a falsy one) until it returns a value
// or `ms` passes; throws naming `what`.
export async function until(what, check, ms = 20000) {
  const deadline = Date.now() + ms;
  let last = null;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? ': ' + last.message : ''}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startCluster(bin) {
  const dir = mkdtempSync(join(tmpdir(), 'gangway-web-'));
  writeFileSync(join(dir, 'auth.yaml'), `users:
  - {name: alice, token: "${tokens.alice}", role: user}
  - {name: bob, token: "${tokens.bob}", role: user}
  - {name: ops, token: "${tokens.ops}", role: admin}
joinToken: "${kJoin}"
`);
  // Queue small may use 2 GPUs and never borrow: bob's third GPU there waits on quota.
  writeFileSync(join(dir, 'queues.yaml'), `queues:
  - name: default
  - name: small
    guarantee: {gpu: 2}
    borrowLimit: {gpu: 0}
`);
  // Each node has two NVLink islands of 2 GPUs: a job needing 3 in one island never fits.
  writeFileSync(join(dir, 'node.yaml'), `cpu: 16
memory: 64Gi
gpus:
  - {model: H100-80GB, count: 2, domain: 0}
  - {model: H100-80GB, count: 2, domain: 1}
`);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const procs = [];
  const logs = [];
  const run = (name, args) => {
    const p = spawn(bin, args, {cwd: dir, stdio: ['ignore', 'pipe', 'pipe']});
    p.stdout.on('data', (d) => logs.push(`[${name}] ${d}`));
    p.stderr.on('data', (d) => logs.push(`[${name}] ${d}`));
    procs.push(p);
    return p;
  };
  run('server', ['server', '--data', join(dir, 'data'), '--listen', `127.0.0.1:${port}`,
                 '--auth', join(dir, 'auth.yaml'), '--config', join(dir, 'queues.yaml'),
                 '--heartbeat', '1s', '--history-interval', '1s',
                 // Developing the page: serve web/ui from disk instead of the copy built in.
                 ...(process.env.GANGWAY_UI_DIR ? ['--ui-dir', process.env.GANGWAY_UI_DIR] : [])]);
  await until('the controller', async () => (await fetch(url + '/healthz')).ok);
  for (const name of ['node-a', 'node-b']) {
    run(name, ['agent', '--server', url, '--join-token', kJoin, '--name', name,
               '--inventory', join(dir, 'node.yaml'), '--data', join(dir, name)]);
  }
  const cluster = {
    dir, url, logs,
    async api(user, path, {method = 'GET', body} = {}) {
      const res = await fetch(url + path, {
        method,
        headers: {Authorization: `Bearer ${tokens[user]}`,
                  ...(body !== undefined ? {'Content-Type': 'application/json'} : {})},
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = await res.json();
      if (!res.ok) {
        const e = new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
        e.status = res.status;
        e.body = json;
        throw e;
      }
      return json;
    },
    async submit(user, job) {
      return (await cluster.api(user, '/v1/jobs', {method: 'POST', body: job})).job.id;
    },
    async job(id) {
      return (await cluster.api('ops', `/v1/jobs/${id}`)).job;
    },
    // Starts one more agent, `name`, with the inventory `yaml`; resolves once it registered.
    async addAgent(name, yaml) {
      writeFileSync(join(dir, `${name}.yaml`), yaml);
      run(name, ['agent', '--server', url, '--join-token', kJoin, '--name', name,
                 '--inventory', join(dir, `${name}.yaml`), '--data', join(dir, name)]);
      await until(`node ${name}`, async () =>
        (await cluster.api('ops', '/v1/nodes?view=summary')).nodes.some((n) => n.name === name));
    },
    async stop() {
      for (const p of procs) p.kill('SIGTERM');
      await Promise.all(procs.map((p) => p.exitCode !== null ? null
        : new Promise((r) => p.once('exit', r))));
    },
  };
  await until('two ready nodes', async () => {
    const nodes = (await cluster.api('ops', '/v1/nodes?view=summary')).nodes;
    return nodes.filter((n) => n.state === 'ready').length === 2;
  });
  return cluster;
}
