import { execFile } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

function findRoot(): string {
  let dir = __dirname;
  while (!statSync(join(dir, 'package.json'), { throwIfNoEntry: false })) dir = dirname(dir);
  return dir;
}

/** The repository: the compiled tests run from dist/test/packaging. */
export const repoRoot = findRoot();
export const consumerFixture = join(repoRoot, 'test', 'packaging', 'consumer');
export const nest12Fixture = join(repoRoot, 'test', 'packaging', 'nest12');

/**
 * Runs npm in `cwd`; npm is the one on PATH, run by the node on PATH (CI puts the Node under test
 * first). Output is kept for the failure message.
 */
export async function npm(cwd: string, args: readonly string[]): Promise<string> {
  return command(cwd, 'npm', args);
}

/** Runs a script with this process's node. */
export async function nodeScript(
  cwd: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
): Promise<string> {
  return command(cwd, process.execPath, args, env);
}

async function command(
  cwd: string,
  file: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
): Promise<string> {
  try {
    const { stdout } = await run(file, [...args], {
      cwd,
      env: { ...process.env, ...env },
      maxBuffer: 16 * 1024 * 1024,
      timeout: 240_000,
    });
    return stdout.trim();
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(
      `${file} ${args.join(' ')} failed in ${cwd}:\n${stdout ?? ''}\n${stderr ?? ''}`.slice(0, 8000),
      { cause: error },
    );
  }
}

/** `npm pack` of the built repository into `into`; returns the tarball's path. */
export async function packWarren(into: string): Promise<string> {
  await npm(repoRoot, ['pack', '--pack-destination', into]);
  const tarball = readdirSync(into).find((name) => /^warren-.*\.tgz$/.test(name));
  if (tarball === undefined) throw new Error(`npm pack left no warren-*.tgz in ${into}`);
  return join(into, tarball);
}
