/**
 * Who the dashboard answers, over real HTTP against the real broker: the Host it is reached by (DNS
 * rebinding), requests that came through a proxy, the session cookie's attributes, the cap on event
 * streams, and management credentials kept out of what viewers see. Each refusal has its positive twin.
 */
import { after, before, describe, it } from 'node:test';
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createOps, type WarrenOps } from '../../src/ops';
import { createDashboard, type DashboardServer, type DashboardServerOptions } from '../../src/ui';
import { deadLogOptions } from '../fixtures/dead-log-jobs';
import {
  type BrokerUser,
  createBrokerUser,
  deleteBrokerUser,
  FULL_PERMISSIONS,
} from '../support/broker-user';
import { type DashboardApp, startDashboardApp } from '../support/dashboard-app';
import { makeTestCertificates, type TestCertificates } from '../support/test-certificates';
import { MANAGEMENT_URL, testNamespace } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** One request to 127.0.0.1:port with exactly these headers (fetch cannot set Host). */
function ask(
  port: number,
  path: string,
  headers: Record<string, string>,
  options: { method?: string; body?: string; tls?: TestCertificates } = {},
): Promise<Answer> {
  const send = options.tls ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        headers,
        // A request without a Host header is one of the cases: Node would add one.
        setHost: headers.host !== undefined,
        ...(options.tls ? { ca: options.tls.ca, servername: 'localhost' } : {}),
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** An open event stream, or the refusal it got. */
function openStream(port: number, headers: Record<string, string>) {
  return new Promise<{ status: number; close: () => void }>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/api/events', headers }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

const portOf = (server: DashboardServer) => Number(new URL(server.url).port);

describe('who the dashboard answers', () => {
  const namespace = testNamespace('uitrust');
  let app: DashboardApp;
  let ops: WarrenOps;

  before(async () => {
    app = await startDashboardApp(namespace);
    ops = app.ops;
  });

  after(() => app?.close());

  const serve = (options: Partial<DashboardServerOptions> = {}) => app.serve(options);

  it('refuses a rebound Host before any session or token; pausing through it does nothing, and the real Host pauses', async () => {
    const server = await serve({ loopbackRole: 'operator' });
    const port = portOf(server);
    const evil = { host: `evil.test:${port}`, origin: `http://evil.test:${port}` };
    const session = await ask(port, '/api/session', evil);
    assert.equal(session.status, 421, session.body);
    assert.equal(session.headers['set-cookie'], undefined, 'no cookie');
    assert.doesNotMatch(session.body, /csrf/);
    assert.match(JSON.parse(session.body).error, /does not answer to Host "evil\.test:\d+"/);
    for (const path of ['/', '/app.js', '/api/snapshot', '/api/dead', '/api/events'])
      assert.equal((await ask(port, path, evil)).status, 421, path);

    // What the rebinding page would send next, with a session and token it got from the real name.
    const real = await ask(port, '/api/session', { host: `127.0.0.1:${port}` });
    assert.equal(real.status, 200);
    const cookie = String(real.headers['set-cookie']).split(';')[0]!;
    const { csrf, role } = JSON.parse(real.body) as { csrf: string; role: string };
    assert.equal(role, 'operator');
    const pause = (host: string) =>
      ask(
        port,
        '/api/actions/pause',
        {
          host,
          origin: `http://${host}`,
          cookie,
          'x-warren-csrf': csrf,
          'content-type': 'application/json',
        },
        { method: 'POST', body: JSON.stringify({ queue: 'billing' }) },
      );
    assert.equal((await pause(`evil.test:${port}`)).status, 421);
    assert.equal((await ops.queues()).find((q) => q.key === 'billing')?.paused, false);

    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const answer = await ask(port, '/api/session', { host });
      assert.equal(answer.status, 200, `${host}: ${answer.body}`);
    }
    const done = await pause(`localhost:${port}`);
    assert.equal(done.status, 200, done.body);
    assert.equal((await ops.queues()).find((q) => q.key === 'billing')?.paused, true);
    await ops.resume('billing');
    // The right name on the wrong port is another site too.
    assert.equal((await ask(port, '/api/session', { host: `127.0.0.1:${port + 1}` })).status, 421);
  });

  it('answers the names given in allowedHosts, on any port or the one given, and no others', async () => {
    const server = await serve({ allowedHosts: ['warren.test', 'ops.test:8443'] });
    const port = portOf(server);
    assert.equal((await ask(port, '/api/session', { host: 'warren.test' })).status, 200);
    assert.equal((await ask(port, '/api/session', { host: 'WARREN.test:8080' })).status, 200);
    assert.equal((await ask(port, '/api/session', { host: 'ops.test:8443' })).status, 200);
    assert.equal((await ask(port, '/api/session', { host: 'ops.test:9443' })).status, 421);
    assert.equal((await ask(port, '/api/session', { host: 'evil.warren.test' })).status, 421);
    // No Host at all: Node's server answers 400 itself (HTTP/1.1 requires one), the guard 421 otherwise.
    assert.ok([400, 421].includes((await ask(port, '/api/session', {})).status), 'no Host at all');
  });

  it('refuses a request that came through a proxy without authorize, and answers it with authorize', async () => {
    const plain = await serve();
    const trusted = await serve({
      allowedHosts: ['warren.example.com'],
      authorize: (r) => ({ role: r.headers['x-user'] === 'ada' ? 'operator' : 'viewer', user: 'ada' }),
    });
    // A reverse proxy on this machine, as nginx would be: every client it forwards is loopback.
    let target = portOf(plain);
    const proxy: Server = createServer((req, res) => {
      const upstream = httpRequest(
        {
          host: '127.0.0.1',
          port: target,
          path: req.url,
          method: req.method,
          headers: {
            ...req.headers,
            host: `127.0.0.1:${target}`,
            'x-forwarded-for': '192.0.2.2',
            'x-forwarded-host': 'warren.example.com',
            'x-forwarded-proto': 'https',
          },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxyPort = (proxy.address() as AddressInfo).port;
    try {
      const refused = await ask(proxyPort, '/api/session', { host: 'warren.example.com', 'x-user': 'ada' });
      assert.equal(refused.status, 403, refused.body);
      assert.match(JSON.parse(refused.body).error, /came through a proxy.*configure authorize/);
      // Each proxy header alone, sent straight to the dashboard, is refused the same way.
      for (const header of [
        'forwarded',
        'x-forwarded-for',
        'x-forwarded-host',
        'x-forwarded-proto',
        'x-real-ip',
      ])
        assert.equal(
          (await ask(target, '/api/session', { host: `127.0.0.1:${target}`, [header]: '192.0.2.2' })).status,
          403,
          header,
        );

      target = portOf(trusted);
      const answered = await ask(proxyPort, '/api/session', { host: 'warren.example.com', 'x-user': 'ada' });
      assert.equal(answered.status, 200, answered.body);
      assert.equal(JSON.parse(answered.body).role, 'operator');
      assert.match(String(answered.headers['set-cookie']), /; Secure/, 'https at the proxy: a Secure cookie');
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
    // With authorize the forwarded host is checked too: a page rebinding through the proxy names itself.
    const forged = await ask(portOf(trusted), '/api/session', {
      host: `127.0.0.1:${portOf(trusted)}`,
      'x-forwarded-host': 'evil.test',
    });
    assert.equal(forged.status, 421);
    // ...and an http proxy, or none, gets a cookie without Secure.
    const direct = await ask(portOf(trusted), '/api/session', {
      host: `127.0.0.1:${portOf(trusted)}`,
      'x-forwarded-proto': 'http',
    });
    assert.doesNotMatch(String(direct.headers['set-cookie']), /Secure/);
  });

  it('marks the session cookie Secure over HTTPS, and not over plain HTTP', async () => {
    const tls = makeTestCertificates();
    const dashboard = createDashboard({ ops, audit: () => undefined });
    const server = createHttpsServer(
      { cert: readFileSync(tls.serverCertFile), key: readFileSync(tls.serverKeyFile) },
      (req, res) => void dashboard(req, res),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const answer = await ask(port, '/api/session', { host: `localhost:${port}` }, { tls });
      assert.equal(answer.status, 200, answer.body);
      assert.match(String(answer.headers['set-cookie']), /; Path=\/; Secure$/);
      assert.equal((await ask(port, '/api/session', { host: `evil.test:${port}` }, { tls })).status, 421);
    } finally {
      dashboard.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      tls.remove();
    }
    const plain = await serve();
    const answer = await ask(portOf(plain), '/api/session', { host: `127.0.0.1:${portOf(plain)}` });
    assert.match(String(answer.headers['set-cookie']), /; Path=\/$/);
  });

  it('caps the event streams one client holds (429) and all clients hold (503), and frees a place on close', async () => {
    const server = await serve({
      authorize: (r) => ({ role: 'viewer', user: String(r.headers['x-user']) }),
      maxStreamsPerClient: 2,
      maxStreams: 3,
    });
    const port = portOf(server);
    const as = (user: string) => openStream(port, { host: `127.0.0.1:${port}`, 'x-user': user });
    const ada = [await as('ada'), await as('ada')];
    assert.deepEqual(
      ada.map((s) => s.status),
      [200, 200],
    );
    const third = await as('ada');
    assert.equal(third.status, 429);
    const grace = await as('grace');
    assert.equal(grace.status, 200, 'another client still gets one');
    const linus = await as('linus');
    assert.equal(linus.status, 503, 'the dashboard is full');
    ada[0]!.close();
    const again = await waitFor(
      async () => {
        const s = await as('linus');
        if (s.status === 200) return s;
        s.close();
        return undefined;
      },
      { what: 'a stream place freed by the closed one', intervalMs: 50 },
    );
    for (const s of [ada[1]!, grace, again, third, linus]) s.close();
  });

  it('keeps a management password out of the snapshot, and reads the real management API as a non-default user', async () => {
    const badOps = createOps({
      ...deadLogOptions(namespace),
      replyTimeoutMs: 300,
      management: { url: 'http://warren-ops:S3cretPw@127.0.0.1:1' },
    });
    let user: BrokerUser | undefined;
    let goodOps: WarrenOps | undefined;
    try {
      const bad = await serve({ ops: badOps });
      const snapshot = await ask(portOf(bad), '/api/snapshot', { host: `127.0.0.1:${portOf(bad)}` });
      assert.equal(snapshot.status, 200);
      const { errors } = JSON.parse(snapshot.body) as { errors: string[] };
      assert.ok(errors.length > 0, 'the unreachable management API is reported');
      assert.doesNotMatch(snapshot.body, /S3cretPw/);
      assert.match(errors.join('\n'), /cannot reach the management API at http:\/\/127\.0\.0\.1:1/);

      user = await createBrokerUser('mgmt', FULL_PERMISSIONS, ['management']);
      const url = new URL(MANAGEMENT_URL);
      url.username = user.name;
      url.password = user.password;
      goodOps = createOps({
        ...deadLogOptions(namespace),
        replyTimeoutMs: 300,
        management: { url: url.href },
      });
      const good = await serve({ ops: goodOps });
      const real = await ask(portOf(good), '/api/snapshot', { host: `127.0.0.1:${portOf(good)}` });
      const read = JSON.parse(real.body) as { errors: string[]; queues: { key: string; unacked?: number }[] };
      assert.deepEqual(read.errors, []);
      assert.equal(
        read.queues.find((q) => q.key === 'billing')?.unacked,
        0,
        'unacked comes from the management API',
      );
      assert.doesNotMatch(real.body, new RegExp(user.password));
    } finally {
      await badOps.close();
      await goodOps?.close();
      await deleteBrokerUser(user);
    }
  });
});
