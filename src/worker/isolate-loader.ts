/**
 * How an isolate finds its handler: it imports the processor module (ESM or CommonJS) and looks among its
 * exports for the job's defined job or @Job class by name, else a `handle` function or the default export.
 */

export type Handle = (data: unknown, ctx: unknown) => unknown;

const JOB_METADATA = Symbol.for('warren:job');

// A real dynamic import (tsc would turn `import()` into `require` for CommonJS): ESM and CommonJS alike.
const importModule = new Function('specifier', 'return import(specifier)') as (s: string) => Promise<unknown>;

/** The job's handler among the module's exports: its defined job or @Job class by name, else `handle`/default. */
function findHandler(mod: Record<string, unknown>, jobName: string): Handle | undefined {
  // its exports, the default export's, and one level inside them (a record of jobs)
  const exports: unknown[] = [];
  const add = (value: unknown, depth: number) => {
    exports.push(value);
    if (depth > 0 && value !== null && typeof value === 'object')
      for (const inner of Object.values(value)) add(inner, depth - 1);
  };
  add(mod, 3);
  for (const value of exports) {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) continue;
    const v = value as { name?: unknown; handle?: unknown; prototype?: { handle?: unknown } };
    if (typeof value === 'object' && v.name === jobName && typeof v.handle === 'function')
      return (v.handle as Handle).bind(value);
    if (typeof value === 'function' && typeof v.prototype?.handle === 'function') {
      const reflect = Reflect as unknown as { getMetadata?: (k: unknown, t: unknown) => { name?: string } };
      if (reflect.getMetadata?.(JOB_METADATA, value)?.name === jobName) {
        const instance = new (value as new () => { handle: Handle })();
        return (data, ctx) => instance.handle(data, ctx);
      }
    }
  }
  const fallback = mod.handle ?? (mod.default as { handle?: unknown } | undefined)?.handle ?? mod.default;
  return typeof fallback === 'function' ? (fallback as Handle) : undefined;
}

/** Imports the processor and finds the job's handler in it, or throws saying why. */
export async function loadHandler(settings: {
  readonly processor: string;
  readonly jobName: string;
}): Promise<Handle> {
  const mod = (await importModule(settings.processor)) as Record<string, unknown>;
  const handle = findHandler(mod, settings.jobName);
  if (handle === undefined)
    throw new Error(
      `the module exports no handler of job '${settings.jobName}': export the defined job, its @Job class, or a handle(data, ctx) function`,
    );
  return handle;
}

/** Runs a job the pool sent, and answers `done` (or `unserializable` when its result cannot cross). */
