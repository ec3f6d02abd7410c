// The dashboard in a real browser (Debian's chromium driven by playwright-core) against a real
// controller and agents (cluster.mjs). Run by ctest (web_dashboard) with GANGWAY_BIN set; each
// view's screenshot goes to GANGWAY_WEB_ARTIFACTS.
import assert from 'node:assert/strict';
import {mkdirSync, readFileSync} from 'node:fs';
import {join} from 'node:path';
import {after, before, test} from 'node:test';
import {chromium} from 'playwright-core';
import {startCluster, tokens, until} from './cluster.mjs';

const bin = process.env.GANGWAY_BIN;
const artifacts = process.env.GANGWAY_WEB_ARTIFACTS || join(process.cwd(), 'web-artifacts');
const kXss = '<img src=x onerror=alert(1)>';

let cluster;
let browser;
const ids = {};
const problems = [];  // console errors, page errors, dialogs and requests off 127.0.0.1

before(async () => {
  assert.ok(bin, 'set GANGWAY_BIN to the gangway binary');
  mkdirSync(artifacts, {recursive: true});
  cluster = await startCluster(bin);
  const job = (name, queue, gpu, command, extra = {}) =>
    ({name, queue, gpu, command, cpu: 1, memory: '1Gi', ...extra});
  ids.running = await cluster.submit('alice', job('alice-train', 'default', 1, ['sleep', '600']));
  ids.bobRunning = await cluster.submit('bob', job('bob-eval', 'small', 2, ['sleep', '600']));
  ids.quota = await cluster.submit('bob', job('bob-over-quota', 'small', 1, ['sleep', '600']));
  ids.topology = await cluster.submit('alice', job('alice-island', 'default', 3, ['true'],
                                                   {topology: {require: 'gpu-domain'}}));
  ids.infeasible = await cluster.submit('alice', job('alice-huge', 'default', 64, ['true']));
  ids.toCancel = await cluster.submit('alice', job('alice-cancel-me', 'default', 1, ['sleep', '600']));
  ids.xss = await cluster.submit('alice', job('alice-echo', 'default', 0,
                                              ['sh', '-c', `echo '${kXss}'; sleep 600`]));
  for (const id of [ids.running, ids.bobRunning, ids.toCancel, ids.xss]) {
    await until(`job ${id} running`, async () => (await cluster.job(id)).state === 'running');
  }
  for (const id of [ids.quota, ids.topology, ids.infeasible]) {
    await until(`job ${id}'s reason`, async () => (await cluster.job(id)).pending?.code);
  }
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  if (browser) await browser.close();
  if (cluster) {
    await cluster.stop();
    if (process.exitCode) console.log(cluster.logs.join(''));
  }
});

// A signed-in page of `user`, watched for anything that should not happen.
async function signIn(user) {
  const context = await browser.newContext({viewport: {width: 1280, height: 900}});
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`${user}: console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`${user}: page error: ${e.message}`));
  page.on('dialog', (d) => {
    problems.push(`${user}: dialog: ${d.message()}`);
    d.dismiss();
  });
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.hostname !== '127.0.0.1') problems.push(`${user}: request to ${r.url()}`);
  });
  await page.goto(cluster.url + '/');
  await page.fill('#token', tokens[user]);
  await page.click('button[type=submit]');
  await page.waitForSelector('header .who');
  return page;
}

async function shot(page, name) {
  await page.screenshot({path: join(artifacts, `${name}.png`), fullPage: true});
}

test('the page is served with a policy that keeps it on this controller', async () => {
  const res = await fetch(cluster.url + '/ui/');
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-security-policy'), /default-src 'self'/);
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  const vendor = await fetch(cluster.url + '/ui/vendor/preact-htm.js');
  assert.equal(vendor.status, 200);
  assert.match(vendor.headers.get('content-type'), /javascript/);
  assert.equal((await fetch(cluster.url + '/ui/../auth.yaml')).status, 404);
});

test('a wrong token is refused with the API\'s reason', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(cluster.url + '/ui/');
  await page.fill('#token', 'not-a-token');
  await page.click('button[type=submit]');
  await page.waitForSelector('.signin .error');
  assert.match(await page.textContent('.signin .error'), /token is not valid/);
  await context.close();
});

test('overview: pending jobs show their reasons, the cluster and the queues', async () => {
  const page = await signIn('alice');
  const row = (id) => page.locator(`#my-jobs tr[data-job="${id}"]`);
  await row(ids.topology).waitFor();
  const code = async (id) => row(id).locator('.reason').getAttribute('data-code');
  assert.equal(await code(ids.infeasible), (await cluster.job(ids.infeasible)).pending.code);
  assert.equal(await code(ids.topology), (await cluster.job(ids.topology)).pending.code);
  assert.match(await row(ids.topology).textContent(), /domain/i);
  assert.match(await row(ids.infeasible).textContent(), /64/);
  assert.equal(await page.locator('#my-jobs table.running tr[data-job]').count(), 3);
  assert.match(await page.textContent('#cluster'), /GPUs\s*8/);
  assert.equal(await page.locator('#queue-cards [data-queue]').count(), 2);
  await shot(page, 'overview');
  await page.context().close();
});

test('queue line: bob\'s job waits on quota, in order, and alice sees no names of his', async () => {
  const bob = await signIn('bob');
  await bob.goto(cluster.url + '/ui/#/queues/small');
  const line = bob.locator('table.line tbody tr');
  await line.first().waitFor();
  assert.equal(await line.count(), 1);
  assert.equal(await line.first().getAttribute('data-job'), String(ids.quota));
  assert.equal(await line.first().locator('.reason').getAttribute('data-code'), 'QuotaExceeded');
  assert.match(await line.first().textContent(), /bob-over-quota/);
  await shot(bob, 'queue-line-small');
  await bob.context().close();

  const alice = await signIn('alice');
  await alice.goto(cluster.url + '/ui/#/queues/default');
  const rows = alice.locator('table.line tbody tr');
  await rows.first().waitFor();
  // The scheduler's order, from the API, is what the page shows.
  const api = (await cluster.api('alice', '/v1/queues/default/jobs')).jobs;
  assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.job))),
                   api.map((j) => j.id));
  assert.deepEqual(await rows.locator('.position').allTextContents(),
                   api.map((j) => String(j.position)));
  let ahead = 0;
  for (const [i, j] of api.entries()) {
    assert.equal(j.gpusAhead, ahead, `GPUs ahead of job ${j.id}`);
    assert.equal(await rows.nth(i).locator('.ahead').textContent(), String(ahead));
    ahead += j.gpus;
  }
  await alice.goto(cluster.url + '/ui/#/queues/small');
  await alice.locator('table.line tbody tr').first().waitFor();
  const text = await alice.textContent('#view');
  assert.doesNotMatch(text, /bob-over-quota|bob-eval/);
  assert.match(text, /hidden/);
  await alice.goto(cluster.url + '/ui/#/events');
  await alice.locator('table.events tbody tr').first().waitFor();
  assert.doesNotMatch(await alice.textContent('#view'), /bob-/);
  await shot(alice, 'events');
  await alice.goto(cluster.url + '/ui/#/queues');
  await alice.locator('table.queues tr[data-queue="small"]').waitFor();
  await shot(alice, 'queues');
  await alice.context().close();
});

test('job detail: a pending job says where it stands; output is shown as text', async () => {
  const page = await signIn('alice');
  await page.goto(`${cluster.url}/ui/#/jobs/${ids.infeasible}`);
  await page.locator('.pending-detail').waitFor();
  const job = await cluster.job(ids.infeasible);
  assert.match(await page.textContent('.pending-detail'), new RegExp(`Position\\s*${job.pending.position}`));
  await shot(page, 'job-pending');

  // What would change it: the page shows what the API answers, tried by the scheduler.
  await page.click('button.ask-whatif');
  const rows = page.locator('table.whatif-result tbody tr');
  await rows.first().waitFor();
  const api = await cluster.api('alice', '/v1/whatif', {method: 'POST', body: {job: ids.infeasible}});
  assert.ok(api.changes.length > 0);
  assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.field)),
                   api.changes.map((c) => c.field));
  assert.equal(api.changes[0].field, 'gpu');
  assert.match(await rows.first().textContent(), /GPUs per task instead of 64/);
  await shot(page, 'job-whatif');

  await page.goto(`${cluster.url}/ui/#/jobs/${ids.xss}`);
  await until('the task output', async () => (await page.textContent('.log pre')).includes(kXss));
  assert.equal(await page.locator('.log pre img, #view img').count(), 0);
  await shot(page, 'job-running');
  await page.context().close();
});

test('cancelling through the API updates the page within 3 s, without a reload', async () => {
  const page = await signIn('alice');
  const row = page.locator(`#my-jobs table.running tr[data-job="${ids.toCancel}"]`);
  await row.waitFor();
  await page.evaluate(() => { window.__sameDocument = true; });
  await cluster.api('alice', `/v1/jobs/${ids.toCancel}/cancel`, {method: 'POST', body: {}});
  await row.waitFor({state: 'detached', timeout: 3000});
  assert.equal(await page.evaluate(() => window.__sameDocument), true);

  await page.goto(`${cluster.url}/ui/#/jobs/${ids.running}`);
  await page.locator('h1 .state-running').waitFor();
  await page.click('button.danger');  // the page asks first
  await page.click('button.confirm-cancel');
  await page.locator('h1 .state-cancelled').waitFor({timeout: 3000});
  assert.equal((await cluster.job(ids.running)).state, 'cancelled');
  await page.context().close();
});

test('GPU map: one cell per GPU, and hovering names the node and holder', async () => {
  const page = await signIn('ops');
  await page.goto(cluster.url + '/ui/#/gpus');
  const canvas = page.locator('canvas.gpu-map');
  await until('the map drawn', async () => Number(await canvas.getAttribute('data-drawn')) > 0);
  const nodes = (await cluster.api('ops', '/v1/nodes')).nodes;
  const gpus = nodes.reduce((s, n) => s + n.gpus.length, 0);
  assert.equal(Number(await canvas.getAttribute('data-cells')), gpus);
  assert.equal(Number(await canvas.getAttribute('data-drawn')), gpus);
  assert.equal(Number(await canvas.getAttribute('data-nodes')), nodes.length);
  await canvas.hover({position: {x: 3, y: 3}});
  assert.match(await page.textContent('.tip'), /node-a \(ready\) GPU 0 H100-80GB/);
  await shot(page, 'gpu-map');
  await page.context().close();
});

test('nodes: an admin cordons and uncordons; a user has no such buttons', async () => {
  const page = await signIn('ops');
  await page.goto(cluster.url + '/ui/#/nodes');
  const row = page.locator('tr[data-node="node-b"]');
  await row.locator('button', {hasText: 'cordon'}).click();
  await row.locator('.node-cordoned').waitFor({timeout: 3000});
  assert.equal((await cluster.api('ops', '/v1/nodes/node-b')).node?.state ??
               (await cluster.api('ops', '/v1/nodes/node-b')).state, 'cordoned');
  await shot(page, 'nodes');
  await row.locator('button', {hasText: 'uncordon'}).click();
  await row.locator('.node-ready').waitFor({timeout: 3000});
  await page.context().close();

  const user = await signIn('bob');
  await user.goto(cluster.url + '/ui/#/nodes');
  await user.locator('tr[data-node="node-a"]').waitFor();
  assert.equal(await user.locator('table.nodes button').count(), 0);
  await user.context().close();
});

test('a ready node with a failed GPU shows on the overview and under the nodes filter', async () => {
  // One GPU, unhealthy: the node adds no capacity the other tests' jobs could land on.
  await cluster.addAgent('node-sick', `cpu: 4
memory: 8Gi
gpus:
  - {model: H100-80GB, count: 1, domain: 0, healthy: false}
`);
  const page = await signIn('ops');
  await page.goto(cluster.url + '/ui/#/');
  const sick = page.locator('ul.nodes-sick li', {hasText: 'node-sick'});
  await sick.waitFor({timeout: 5000});
  assert.match(await sick.textContent(), /node-sick: GPU 0 of 1 unhealthy/);
  assert.equal(await page.locator('ul.nodes-bad li', {hasText: 'node-sick'}).count(), 0,
               'it is ready, not among the nodes that are not');
  await page.goto(cluster.url + '/ui/#/nodes');
  await page.locator('tr[data-node="node-a"]').waitFor();
  await page.locator('input.unhealthy-only').check();
  await until('only node-sick listed', async () =>
    (await page.locator('table.nodes tbody tr').count()) === 1 &&
    (await page.locator('tr[data-node="node-sick"]').count()) === 1, 5000);
  await page.context().close();
});

test('job detail of a service lists its replicas; a replica links to it and has no cancel', async () => {
  const id = await cluster.submit('alice', {name: 'alice-web', kind: 'service', replicas: 2, gpu: 0,
                                            cpu: 1, memory: '1Gi', command: ['sleep', '600']});
  const replicas = await until('both replicas running', async () => {
    const list = (await cluster.job(id)).service?.replicaList || [];
    return list.length === 2 && list.every((r) => r.state === 'running' && r.ready) && list;
  });
  const page = await signIn('alice');
  await page.goto(`${cluster.url}/ui/#/jobs/${id}`);
  await page.locator('.replica-count', {hasText: '2 of 2 running'}).waitFor({timeout: 5000});
  assert.equal(await page.locator('table.replicas tbody tr').count(), 2);
  assert.match(await page.locator('tr[data-replica="1"]').textContent(),
               new RegExp(`${replicas[1].job}.*running ready`));
  await shot(page, 'service');
  await page.locator(`tr[data-replica="0"] a[href="#/jobs/${replicas[0].job}"]`).click();
  await page.locator('.replica-of', {hasText: `0 of service ${id}`}).waitFor({timeout: 5000});
  assert.equal(await page.locator('button', {hasText: 'Cancel job'}).count(), 0);

  // An elastic job says its size and its bounds.
  const elastic = await cluster.submit('alice', {name: 'alice-elastic', replicas: '1-3', gpu: 0,
                                                 cpu: 1, memory: '1Gi', command: ['sleep', '600']});
  await until('the elastic job running', async () => (await cluster.job(elastic)).state === 'running');
  const tasks = (await cluster.job(elastic)).taskList.length;
  await page.goto(`${cluster.url}/ui/#/jobs/${elastic}`);
  await page.locator('.elastic', {hasText: `${tasks} tasks now, 1 to 3`}).waitFor({timeout: 5000});
  await page.context().close();
  await cluster.api('alice', `/v1/jobs/${id}/cancel`, {method: 'POST', body: {}});
  await cluster.api('alice', `/v1/jobs/${elastic}/cancel`, {method: 'POST', body: {}});
});

test('history: charts of the controller\'s samples, and a CSV export', async () => {
  await until('two history samples',
              async () => (await cluster.api('alice', '/v1/history?seconds=3600')).samples.length >= 2);
  const page = await signIn('alice');
  await page.goto(cluster.url + '/ui/#/history');
  for (const title of ['GPUs', 'Jobs', 'Wait before placement', 'GPU-hours per queue (per sample)']) {
    await page.locator(`[data-chart="${title}"] canvas`).first().waitFor();
  }
  assert.match(await page.textContent('#estimates'), /last day/);
  await shot(page, 'history');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('button.csv')]);
  const csv = readFileSync(await download.path(), 'utf8');
  assert.match(csv, /^time,gpus,allocated_gpus,used_gpus,pending_jobs,running_jobs/);
  assert.ok(csv.trim().split('\n').length >= 3, csv);
  assert.match(csv.split('\n')[0], /small_gpu_hours/);
  await page.context().close();
});

test('a job named like markup is refused by the API, naming the field', async () => {
  await assert.rejects(cluster.submit('alice', {name: kXss, gpu: 1, command: ['true']}),
                       (e) => e.status === 400 && /name/.test(JSON.stringify(e.body)));
});

test('no console errors, dialogs or requests off 127.0.0.1 in any of the above', () => {
  assert.deepEqual(problems, []);
});
