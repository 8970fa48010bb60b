/** The dashboard mounted in Express 5 and Fastify 5 under a path, with the real broker behind it. */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { Test } from '@nestjs/testing';
import type { Warren } from '../../src';
import { createOps, type WarrenOps } from '../../src/ops';
import { type DashboardOptions, expressDashboard, fastifyDashboard } from '../../src/ui';
import { Charge, ChargeSwitch, deadLogOptions, Refund, StalePing } from '../fixtures/dead-log-jobs';
import { cleanup, testNamespace, testWarren } from '../support/test-broker';

/** Loads the page, reads the snapshot, and pauses then resumes `billing` as an operator. */
async function exercise(base: string): Promise<void> {
  const bare = await fetch(base, { redirect: 'manual' });
  assert.equal(bare.status, 308);
  assert.equal(bare.headers.get('location'), `${new URL(base).pathname}/`);
  assert.match(await (await fetch(`${base}/`)).text(), /<script src="app.js">/);
  assert.match(await (await fetch(`${base}/app.js`)).text(), /EventSource/);
  const snapshot = (await (await fetch(`${base}/api/snapshot`)).json()) as { queues: { key: string }[] };
  assert.ok(snapshot.queues.some((q) => q.key === 'billing'));
  const session = await fetch(`${base}/api/session`, { headers: { 'x-role': 'operator' } });
  const { csrf } = (await session.json()) as { csrf: string };
  // The cookie goes back to the dashboard only, not to the rest of the app.
  assert.match(session.headers.get('set-cookie') ?? '', new RegExp(`; Path=${new URL(base).pathname}(;|$)`));
  const headers = {
    'x-role': 'operator',
    cookie: session.headers.get('set-cookie')!.split(';')[0]!,
    origin: new URL(base).origin,
    'content-type': 'application/json',
    'x-warren-csrf': csrf,
  };
  for (const action of ['pause', 'resume']) {
    const answer = await fetch(`${base}/api/actions/${action}`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ queue: 'billing' }),
    });
    assert.equal(answer.status, 200, await answer.clone().text());
    assert.equal(((await answer.json()) as { paused: boolean }).paused, action === 'pause');
  }
  const viewer = await fetch(`${base}/api/actions/pause`, {
    method: 'POST',
    headers: { ...headers, 'x-role': 'viewer' },
    body: JSON.stringify({ queue: 'billing' }),
  });
  assert.equal(viewer.status, 403);
}

describe('dashboard adapters', () => {
  const namespace = testNamespace('uiad');
  let warren: Warren<object>;
  let ops: WarrenOps;
  let options: DashboardOptions;

  before(async () => {
    warren = await testWarren({
      ...deadLogOptions(namespace),
      handlers: [new Charge(new ChargeSwitch()), new Refund(), new StalePing()],
    });
    await warren.start();
    ops = createOps({ ...deadLogOptions(namespace), replyTimeoutMs: 300 });
    options = {
      ops,
      authorize: (r) => (r.headers['x-role'] === 'operator' ? 'operator' : 'viewer'),
      audit: () => undefined,
    };
  });

  after(async () => {
    await ops?.close();
    await cleanup();
  });

  it('mounts in Express 5 under a path, behind its JSON body parser, leaving other routes alone', async () => {
    const app = express();
    app.use(express.json()); // parsed before the dashboard sees it, as NestJS does by default
    const dashboard = expressDashboard(options);
    app.use('/admin/warren', dashboard);
    app.get('/health', (_req, res) => void res.send('ok'));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      await exercise(`${base}/admin/warren`);
      assert.equal(await (await fetch(`${base}/health`)).text(), 'ok');
      assert.equal((await fetch(`${base}/admin/warren/nothing-here`)).status, 404);
    } finally {
      dashboard.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('checks the Host when mounted with allowedHosts or without authorize; with authorize alone the app owns it', async () => {
    const app = express();
    const listed = expressDashboard({ ...options, allowedHosts: ['app.example.com'] });
    const loopbackOnly = expressDashboard({ ops, audit: () => undefined });
    const appOwned = expressDashboard(options);
    app.use('/listed', listed);
    app.use('/loopback', loopbackOnly);
    app.use('/owned', appOwned);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const port = (server.address() as AddressInfo).port;
    const status = (path: string, headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path, headers }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    try {
      assert.equal(await status('/listed/api/session', { host: 'app.example.com' }), 200);
      assert.equal(await status('/listed/api/session', { host: `127.0.0.1:${port}` }), 200);
      assert.equal(await status('/listed/api/session', { host: 'evil.test' }), 421);
      assert.equal(await status('/loopback/api/session', { host: `localhost:${port}` }), 200);
      assert.equal(await status('/loopback/api/session', { host: 'evil.test' }), 421);
      assert.equal(
        await status('/loopback/api/session', { host: `localhost:${port}`, 'x-forwarded-for': '192.0.2.2' }),
        403,
      );
      assert.equal(await status('/owned/api/session', { host: 'app.example.com' }), 200);
    } finally {
      for (const d of [listed, loopbackOnly, appOwned]) d.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('registers as a Fastify 5 plugin under a prefix', async () => {
    const app = Fastify();
    await app.register(fastifyDashboard(options), { prefix: '/warren' });
    app.get('/health', async () => 'ok');
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
      await exercise(`${base}/warren`);
      assert.equal(await (await fetch(`${base}/health`)).text(), 'ok');
    } finally {
      await app.close();
    }
  });

  it('mounts in a NestJS (Express) application with app.use, behind Nest’s body parser', async () => {
    const moduleRef = await Test.createTestingModule({}).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    const dashboard = expressDashboard(options);
    app.use('/warren', dashboard);
    await app.listen(0, '127.0.0.1');
    try {
      const address = app.getHttpServer().address() as AddressInfo;
      await exercise(`http://127.0.0.1:${address.port}/warren`);
    } finally {
      dashboard.close();
      await app.close();
    }
  });
});
