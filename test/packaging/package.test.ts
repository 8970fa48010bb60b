import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { consumerFixture, nodeScript, npm, packWarren, repoRoot } from './packaging-steps';

/**
 * warren as users install it: `npm pack`, the tarball installed into throwaway ESM and CommonJS apps
 * (test/packaging/consumer, copied to a temporary folder), every entry point of package.json `exports`
 * loaded both ways, the user's code type-checked by TypeScript 5.9 and 7 (declarations included:
 * skipLibCheck is off), `@Job`/`@Cron` as standard decorators in the ESM app and as legacy
 * (experimentalDecorators) ones in the CommonJS app, compiled and run.
 */
describe('the packed tarball in ESM and CommonJS apps', () => {
  let work: string;
  let app: string;
  let tarball: string;

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'warren-package-'));
    tarball = await packWarren(work);
    app = join(work, 'consumer');
    cpSync(consumerFixture, app, { recursive: true });
    for (const kind of ['esm', 'cjs']) copyFileSync(join(app, 'app.ts'), join(app, kind, 'app.ts'));
    // npm refuses the install (ERESOLVE) if a peer range does not fit the app's Nest
    await npm(app, ['install', '--no-audit', '--no-fund', '--no-save', tarball]);
  });

  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('loads every entry point of package.json exports with import and with require', async () => {
    const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
      exports: Record<string, unknown>;
    };
    const entries = Object.keys(manifest.exports);
    for (const script of ['entries.mjs', 'entries.cjs']) {
      const loaded = JSON.parse(await nodeScript(app, [script])) as Record<string, string[]>;
      assert.deepEqual(Object.keys(loaded), entries, script);
      // what a CommonJS module carries besides its names: __esModule, and from Node 24's import() module.exports
      const named = (entry: string) =>
        loaded[entry]!.filter((name) => name !== '__esModule' && name !== 'module.exports');
      for (const entry of entries.filter((e) => !e.endsWith('.json')))
        assert.ok(named(entry).length > 0, `${script}: ${entry} exports ${loaded[entry]}`);
      assert.deepEqual(named('./errors'), ['LimitError', 'PartitionLostError'], script);
      assert.ok(loaded['.']!.includes('createWarren') && loaded['.']!.includes('Job'), script);
      assert.ok(loaded['./nest']!.includes('WarrenModule'), script);
      assert.ok(loaded['./testing']!.includes('runJob'), script);
    }
  });

  it('runs a job of defineJob from plain JavaScript, with import and with require, no compiler', async () => {
    for (const script of ['define-job.mjs', 'define-job.cjs'])
      assert.deepEqual(JSON.parse(await nodeScript(app, [script])), {
        status: 'completed',
        result: 'daily#1',
        definition: { name: 'report.send', queue: 'reports', attempts: 3 },
      });
  });

  const compilers = [
    ['TypeScript 5.9', 'typescript', /^Version 5\.9\./],
    ['TypeScript 7', 'typescript-7', /^Version 7\./],
  ] as const;
  for (const [label, folder, version] of compilers) {
    it(`type-checks the ESM and CommonJS apps with ${label}`, async () => {
      const tsc = join(app, 'node_modules', folder, 'bin', 'tsc');
      assert.match(await nodeScript(app, [tsc, '--version']), version);
      for (const kind of ['esm', 'cjs'])
        await nodeScript(app, [tsc, '-p', join(kind, 'tsconfig.json'), '--noEmit']);
    });
  }

  it('installs the warren command, which answers --help and fails with a one-line reason', async () => {
    const help = await npm(app, ['exec', '--offline', '--', 'warren', '--help']);
    assert.match(help, /^usage: warren <command>/m);
    await assert.rejects(npm(app, ['exec', '--offline', '--', 'warren', 'no-such-command']), (error: Error) =>
      /unknown command 'no-such-command'/.test(error.message),
    );
  });

  it('resolves the subpath entries under the older node10 resolution, through typesVersions', async () => {
    const tsc = join(app, 'node_modules', 'typescript', 'bin', 'tsc');
    await nodeScript(app, [tsc, '-p', join('cjs', 'tsconfig.node10.json'), '--noEmit']);
  });

  for (const [kind, decorators] of [
    ['esm', 'standard (TC39)'],
    ['cjs', 'legacy (experimentalDecorators)'],
  ] as const) {
    it(`runs a @Job with @Cron declared by ${decorators} decorators in the ${kind} app`, async () => {
      const tsc = join(app, 'node_modules', 'typescript', 'bin', 'tsc');
      await nodeScript(app, [tsc, '-p', join(kind, 'tsconfig.json')]);
      const emitted = readFileSync(join(app, kind, 'dist', 'app.js'), 'utf8');
      assert.equal(emitted.includes('__esDecorate'), kind === 'esm', 'the decorator model compiled in');
      const printed = JSON.parse(await nodeScript(app, [join(kind, 'dist', 'main.js')]));
      assert.deepEqual(printed, {
        status: 'completed',
        result: 'DAILY',
        sent: ['daily#1'],
        definition: { name: 'report.send', queue: 'reports', attempts: 3 },
        kinds: ['function', 'function', 'function', 'function'],
      });
    });
  }
});
