import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deadLogConfigDir, ROOT } from '../support/run-cli';
import { BROKER_URL, testNamespace } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

/** `warren ui` with these arguments, in a project whose config is the dead-letter log fixture. */
function spawnUi(args: readonly string[]) {
  const cwd = deadLogConfigDir(testNamespace('uicli'));
  const cli = join(ROOT, 'dist', 'src', 'cli', 'main.js');
  const child = spawn(process.execPath, [cli, 'ui', ...args], {
    cwd,
    env: { ...process.env, WARREN_URL: BROKER_URL },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  return { child, stdout: () => stdout };
}

/** The status of GET /api/session on 127.0.0.1:port naming `host` (fetch cannot set Host). */
function sessionStatus(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/api/session', headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the dashboard example', () => {
  it('prints its URL, serves the page and the failed report’s dead letter, and stops on SIGINT', async () => {
    const child = spawn(process.execPath, ['dist/examples/dashboard/main.js'], {
      cwd: ROOT,
      env: { ...process.env, AMQP_URL: BROKER_URL, DASHBOARD_PORT: '0' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    try {
      const url = await waitFor(() => /warren dashboard: (http:\S+)/.exec(stdout)?.[1], {
        what: 'the dashboard URL on stdout',
        timeoutMs: 30_000,
      });
      assert.match(await (await fetch(url)).text(), /<title>warren<\/title>/);
      // The example makes every local client an operator: its page says so.
      const session = (await (await fetch(`${url}api/session`)).json()) as { role: string; notice?: string };
      assert.equal(session.role, 'operator');
      assert.match(session.notice ?? '', /Every loopback client is an operator here/);
      await waitFor(
        async () => {
          const found = (await (await fetch(`${url}api/dead?name=report.monthly`)).json()) as {
            total: number;
          };
          return found.total >= 1 || undefined;
        },
        { what: 'the monthly report in the dead-letter log', timeoutMs: 20_000, intervalMs: 200 },
      );
    } finally {
      child.kill('SIGINT');
    }
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
    assert.match(stdout, /dashboard example stopped/);
  });

  it('warren ui serves the dashboard read-only on loopback until SIGINT', async () => {
    const { child, stdout } = spawnUi(['--port', '0', '--timeout', '200']);
    try {
      const url = await waitFor(
        () => /warren dashboard: (http:\/\/127\.0\.0\.1:\d+\/) \(viewer/.exec(stdout())?.[1],
        {
          what: 'the URL on stdout',
          timeoutMs: 30_000,
        },
      );
      const session = (await (await fetch(`${url}api/session`)).json()) as { role: string };
      assert.equal(session.role, 'viewer');
    } finally {
      child.kill('SIGINT');
    }
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
  });

  it('warren ui --role operator says so, refuses proxied requests and foreign Hosts, and keeps its password out of ps', async () => {
    const secrets = ['--management-url', 'http://127.0.0.1:9', '--management-password', 'S3cretPw'];
    const hosts = ['--allowed-host', 'warren.test'];
    const { child, stdout } = spawnUi([
      '--port',
      '0',
      '--role',
      'operator',
      '--timeout',
      '200',
      ...hosts,
      ...secrets,
    ]);
    try {
      const url = await waitFor(() => /warren dashboard: (http:\S+) \(operator/.exec(stdout())?.[1], {
        what: 'the URL on stdout',
        timeoutMs: 30_000,
      });
      assert.match(stdout(), /every user and process on this machine is operator/);
      const commandLine = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8');
      assert.doesNotMatch(commandLine, /S3cretPw/, 'ps shows no password');
      assert.match(commandLine.replaceAll('\0', ' '), /--management-password \*\*\*/);
      const session = (await (await fetch(`${url}api/session`)).json()) as { role: string; notice?: string };
      assert.equal(session.role, 'operator');
      assert.match(session.notice ?? '', /Every loopback client is an operator here/);
      // Through a proxy on this machine every client is loopback: refused, not made an operator.
      const proxied = await fetch(`${url}api/session`, { headers: { 'x-forwarded-for': '192.0.2.2' } });
      assert.equal(proxied.status, 403);
      const port = Number(new URL(url).port);
      assert.equal(await sessionStatus(port, 'warren.test'), 200, '--allowed-host names it');
      assert.equal(await sessionStatus(port, `evil.test:${port}`), 421);
      const snapshot = await (await fetch(`${url}api/snapshot`)).text();
      assert.doesNotMatch(snapshot, /S3cretPw/);
    } finally {
      child.kill('SIGINT');
    }
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
  });

  it('warren/ui loads by its name without express or fastify installed', async () => {
    const script =
      "const M = require('module'); const load = M._load; M._load = function (r, ...a) { if (/^(express|fastify)$/.test(r)) throw new Error('loaded ' + r); return load.call(this, r, ...a); }; const ui = require('warren/ui'); console.log(typeof ui.createDashboard, typeof ui.expressDashboard, typeof ui.fastifyDashboard);";
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], { cwd: ROOT });
    assert.equal(stdout.trim(), 'function function function');
  });
});
