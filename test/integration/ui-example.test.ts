import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ROOT } from '../support/run-cli';
import { BROKER_URL } from '../support/test-broker';
import { waitFor } from '../support/wait-for';

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
});
