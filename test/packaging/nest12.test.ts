import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BROKER_URL } from '../support/test-broker';
import { nest12Fixture, nodeScript, npm, packWarren } from './packaging-steps';

/**
 * NestJS 12 (ESM-only), the major that is not the dev dependency (the integration suite runs Nest 11):
 * test/packaging/nest12 is an app with its own package.json and lockfile, installed with `npm ci`, then
 * given the packed tarball as a user's `npm install warren` would (no --legacy-peer-deps: a peer range
 * that left Nest 12 out fails here with ERESOLVE). It boots WarrenModule against the shared broker,
 * injects a service into a @Job provider, publishes through WarrenPublisher and waits for the job.
 */
describe('WarrenModule in a NestJS 12 application', () => {
  let work: string;

  before(() => {
    work = mkdtempSync(join(tmpdir(), 'warren-nest12-'));
  });

  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('installs from the tarball, boots, injects, publishes and runs a job', async () => {
    const tarball = await packWarren(work);
    await npm(nest12Fixture, ['ci', '--no-audit', '--no-fund']);
    await npm(nest12Fixture, ['install', '--no-audit', '--no-fund', '--no-save', tarball]);
    const tsc = join(nest12Fixture, 'node_modules', 'typescript', 'bin', 'tsc');
    await nodeScript(nest12Fixture, [tsc, '-p', 'tsconfig.json']);
    const printed = JSON.parse(
      await nodeScript(nest12Fixture, [join('dist', 'main.js')], { WARREN_TEST_URL: BROKER_URL }),
    ) as { nest: string; node: string; published: unknown; greeted: unknown };
    assert.match(printed.nest, /^12\./);
    assert.equal(printed.node, process.version);
    assert.deepEqual(printed.published, { jobId: 'greeting-1', name: 'greeting.send', queue: 'greetings' });
    assert.deepEqual(printed.greeted, [{ name: 'nest', jobId: 'greeting-1' }]);
  });
});
