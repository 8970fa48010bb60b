import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { statSync } from 'node:fs';

function packageRoot(): string {
  let dir = __dirname;
  while (!statSync(join(dir, 'package.json'), { throwIfNoEntry: false })) dir = dirname(dir);
  return dir;
}

export const ROOT = packageRoot();
const CLI = join(ROOT, 'dist', 'src', 'cli', 'main.js');

export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The run failed with exit code `code` and one line on stderr matching `pattern`. */
export function failsWith(run: CliRun, pattern: RegExp, code = 1): void {
  assert.equal(run.code, code, `exit code (stderr: ${run.stderr})`);
  assert.match(run.stderr, pattern);
  assert.equal(run.stderr.trim().split('\n').length, 1, 'one line');
}

/** Runs the compiled `warren` command as a subprocess (no TTY: stdin is closed). */
export function runCli(args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  return new Promise<CliRun>((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      { cwd: options.cwd ?? ROOT, env: { ...process.env, ...options.env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? ((error as { code?: unknown }).code as number) : 0;
        resolve({ code: typeof code === 'number' ? code : -1, stdout, stderr });
      },
    );
    child.stdin?.end();
  });
}

/**
 * A directory holding a `warren.config.js` for the ops fixture application (test/fixtures/ops-jobs) in
 * `namespace`, as a user's project would have one.
 */
export function configDir(namespace: string, extra: Record<string, unknown> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'warren-cli-'));
  const fixture = join(ROOT, 'dist', 'test', 'fixtures', 'ops-jobs.js');
  writeFileSync(
    join(dir, 'warren.config.js'),
    `const { opsAppOptions } = require(${JSON.stringify(fixture)});\n` +
      `module.exports = { ...opsAppOptions(${JSON.stringify(namespace)}), replyTimeoutMs: 700, ...${JSON.stringify(extra)} };\n`,
  );
  return dir;
}

/** A directory holding a `warren.config.js` for the dead-letter log fixture (test/fixtures/dead-log-jobs). */
export function deadLogConfigDir(namespace: string, extra: Record<string, unknown> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'warren-cli-'));
  const fixture = join(ROOT, 'dist', 'test', 'fixtures', 'dead-log-jobs.js');
  writeFileSync(
    join(dir, 'warren.config.js'),
    `module.exports = { ...require(${JSON.stringify(fixture)}).deadLogOptions(${JSON.stringify(namespace)}), ...${JSON.stringify(extra)} };\n`,
  );
  return dir;
}
