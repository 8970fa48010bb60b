import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { ConfigurationError } from '../../../src';
import type { WarrenOps } from '../../../src/ops';
import { resolveDashboardOptions } from '../../../src/ui/options';
import { mountPath, RequestGuard } from '../../../src/ui/request-guard';

const ops = { queues: async () => [] } as unknown as WarrenOps;

function request(remoteAddress: string, headers: Record<string, string> = {}): IncomingMessage {
  return { socket: { remoteAddress }, headers } as unknown as IncomingMessage;
}

describe('dashboard request guard', () => {
  it('answers loopback clients as viewers without configuration, and nobody else', async () => {
    const guard = new RequestGuard(resolveDashboardOptions({ ops }));
    assert.deepEqual(await guard.caller(request('127.0.0.1')), { role: 'viewer', who: '127.0.0.1' });
    assert.equal((await guard.caller(request('::1'))).role, 'viewer');
    assert.equal((await guard.caller(request('::ffff:127.0.0.1'))).role, 'viewer');
    await assert.rejects(guard.caller(request('10.1.2.3')), { status: 403 });
  });

  it('ignores X-Forwarded-For: a remote client claiming loopback is still refused', async () => {
    const guard = new RequestGuard(resolveDashboardOptions({ ops }));
    await assert.rejects(
      guard.caller(request('10.1.2.3', { 'x-forwarded-for': '127.0.0.1', forwarded: 'for=127.0.0.1' })),
      { status: 403 },
    );
  });

  it('takes the role and user from authorize; a throw or an unknown role is refused', async () => {
    const guard = new RequestGuard(
      resolveDashboardOptions({
        ops,
        authorize: (r) => {
          const role = r.headers['x-role'];
          if (role === 'boom') throw new Error('no session');
          return role === 'admin' ? { role: 'admin', user: 'ada' } : (role as 'viewer');
        },
      }),
    );
    assert.deepEqual(await guard.caller(request('10.0.0.1', { 'x-role': 'admin' })), {
      role: 'admin',
      who: 'ada',
    });
    assert.deepEqual(await guard.caller(request('10.0.0.1', { 'x-role': 'viewer' })), {
      role: 'viewer',
      who: '10.0.0.1',
    });
    await assert.rejects(guard.caller(request('10.0.0.1', { 'x-role': 'boom' })), { status: 403 });
    await assert.rejects(guard.caller(request('10.0.0.1', { 'x-role': 'root' })), { status: 403 });
  });

  it('accepts a mutation only with the session’s token, a same-host Origin and a JSON body', () => {
    const guard = new RequestGuard(resolveDashboardOptions({ ops }));
    const session = 'abcdefghijklmnopqrstuvwxyz';
    const good = {
      host: 'localhost:3000',
      origin: 'http://localhost:3000',
      'content-type': 'application/json',
      cookie: `warren_dashboard_session=${session}`,
      'x-warren-csrf': guard.token(session),
    };
    guard.checkMutation(request('127.0.0.1', good));
    assert.throws(
      () => guard.checkMutation(request('127.0.0.1', { ...good, origin: 'http://evil.example' })),
      {
        status: 403,
      },
    );
    const { origin: _origin, ...noOrigin } = good;
    assert.throws(() => guard.checkMutation(request('127.0.0.1', noOrigin)), { status: 403 });
    assert.throws(() => guard.checkMutation(request('127.0.0.1', { ...good, 'x-warren-csrf': 'forged' })), {
      status: 403,
    });
    assert.throws(
      () => guard.checkMutation(request('127.0.0.1', { ...good, 'content-type': 'text/plain' })),
      { status: 415 },
    );
    const other = new RequestGuard(resolveDashboardOptions({ ops }));
    assert.throws(
      () => guard.checkMutation(request('127.0.0.1', { ...good, 'x-warren-csrf': other.token(session) })),
      {
        status: 403,
      },
    );
  });

  it('validates its options with messages naming the path, rule and value', () => {
    assert.throws(() => resolveDashboardOptions({ ops, refreshMs: 200 }), {
      name: 'ConfigurationError',
      message: 'dashboard.refreshMs must be an integer >= 1000 (got 200)',
    });
    assert.throws(
      () => resolveDashboardOptions({ ops, permissions: { purge: 'root' as 'admin' } }),
      (error: unknown) =>
        error instanceof ConfigurationError && /permissions\.purge must be one of/.test(error.message),
    );
    assert.equal(resolveDashboardOptions({ ops }).permissions.replay, 'operator');
    assert.equal(
      resolveDashboardOptions({ ops, permissions: { replay: 'viewer' } }).permissions.replay,
      'viewer',
    );
  });

  it('validates the host, loopback role and stream cap options, and checks the Host only when it should', () => {
    assert.throws(() => resolveDashboardOptions({ ops, allowedHosts: ['https://warren.example.com/'] }), {
      name: 'ConfigurationError',
      message:
        'dashboard.allowedHosts[0] must be a host name or name:port, without a scheme or path (got "https://warren.example.com/")',
    });
    assert.throws(() => resolveDashboardOptions({ ops, maxStreams: 0 }), {
      message: 'dashboard.maxStreams must be an integer >= 1 (got 0)',
    });
    assert.throws(() => resolveDashboardOptions({ ops, loopbackRole: 'root' as 'admin' }), {
      message: /dashboard\.loopbackRole must be one of viewer, operator, admin \(got root\)/,
    });
    assert.throws(
      () => resolveDashboardOptions({ ops, loopbackRole: 'operator', authorize: () => 'admin' }),
      {
        message: /dashboard\.loopbackRole must not be given with authorize/,
      },
    );
    assert.deepEqual(
      resolveDashboardOptions({ ops, allowedHosts: ['Warren.Example.com:8443'] }).allowedHosts,
      ['warren.example.com:8443'],
    );
    // Without authorize only loopback clients are answered: their Host is always checked.
    assert.deepEqual(resolveDashboardOptions({ ops }).allowedHosts, []);
    // With authorize and no allowedHosts, the app the dashboard is mounted in owns the Host.
    assert.equal(resolveDashboardOptions({ ops, authorize: () => 'viewer' }).allowedHosts, undefined);
  });

  it('takes the cookie path from where the dashboard is mounted', () => {
    const at = (url: string, originalUrl?: string) =>
      mountPath({ url, ...(originalUrl ? { originalUrl } : {}) } as unknown as IncomingMessage);
    assert.equal(at('/api/session'), '/');
    assert.equal(at('/api/session', '/admin/warren/api/session?x=1'), '/admin/warren');
    assert.equal(at('/', '/admin/warren/'), '/admin/warren');
    assert.equal(at('/api/session', '/a;b c/api/session'), '/a%3Bb%20c');
  });

  it('answers the Host of loopback names and of the local address on the local port, IPv6 too', () => {
    const guard = new RequestGuard(resolveDashboardOptions({ ops }));
    const at = (localAddress: string, localPort: number, host: string) =>
      ({
        socket: { remoteAddress: '::1', localAddress, localPort },
        headers: { host },
      }) as unknown as IncomingMessage;
    guard.checkHost(at('::1', 3000, '[::1]:3000'));
    guard.checkHost(at('::ffff:127.0.0.1', 3000, '127.0.0.1:3000'));
    guard.checkHost(at('10.0.0.5', 3000, '10.0.0.5:3000'));
    guard.checkHost(at('127.0.0.1', 80, 'localhost'));
    assert.throws(() => guard.checkHost(at('127.0.0.1', 3000, 'localhost')), { status: 421 });
    assert.throws(() => guard.checkHost(at('10.0.0.5', 3000, '10.0.0.6:3000')), { status: 421 });
    assert.throws(() => guard.checkHost(at('127.0.0.1', 3000, 'evil.test:3000')), { status: 421 });
    assert.throws(() => guard.checkHost(at('127.0.0.1', 3000, 'localhost:3000@evil.test')), { status: 421 });
  });
});
