import { existsSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import type { OpsOptions } from '../ops';
import { CliError } from './cli-error';

/** Looked for in the working directory, in this order, when --config is not given. */
export const CONFIG_NAMES = [
  'warren.config.js',
  'warren.config.cjs',
  'warren.config.mjs',
  'warren.config.ts',
];

/**
 * Loads the application's config module: its default export (or module.exports) is the options object
 * warren/ops takes (topology, jobs, namespace, ... as given to createWarren), or a function returning
 * it. `.js`, `.cjs` and `.mjs` load on every supported Node; `.ts` only where Node strips types itself
 * (22.6+ with --experimental-strip-types, 23.6+ by default), and type stripping cannot run decorators:
 * a .ts config imports its @Job classes from compiled code, or point --config at the compiled .js.
 */
export async function loadConfig(path: string | undefined, cwd = process.cwd()): Promise<OpsOptions> {
  const file =
    path !== undefined ? resolve(cwd, path) : CONFIG_NAMES.map((n) => resolve(cwd, n)).find(existsSync);
  if (file === undefined)
    throw new CliError(
      `no config: give --config <file> or create ${CONFIG_NAMES.slice(0, 1)} in ${cwd}`,
      'CLI_CONFIG',
    );
  if (!existsSync(file)) throw new CliError(`config ${file} does not exist`, 'CLI_CONFIG');
  if (extname(file) === '.ts' && !(process.features as { typescript?: unknown }).typescript)
    throw new CliError(
      `cannot load ${file}: this Node (${process.version}) does not strip TypeScript types; compile it to .js`,
      'CLI_CONFIG',
    );
  let loaded: unknown;
  try {
    // require() loads CommonJS, and ES modules too on Node 20.19+ and 22.12+.
    loaded = require(file);
  } catch (error) {
    throw new CliError(`cannot load config ${file}: ${firstLine(error)}`, 'CLI_CONFIG');
  }
  let config = (loaded as { default?: unknown })?.default ?? loaded;
  if (typeof config === 'function') config = await (config as () => unknown)();
  if (config === null || typeof config !== 'object')
    throw new CliError(
      `config ${file} must export an options object (or a function returning one)`,
      'CLI_CONFIG',
    );
  return config as OpsOptions;
}

export function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0]!.trim();
}
