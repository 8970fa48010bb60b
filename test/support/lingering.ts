import { createHook } from 'node:async_hooks';
/**
 * What keeps a test file's process alive after its teardown: the runner waits for the process to exit, so a
 * handle left open (a socket, a child process, a timer) shows only as the whole file timing out. Call
 * `reportLingering()` as the last `after` hook starts (`what` names the teardown step it is at): if the process is
 * still alive `afterMs` later, the step and the open handles go to stderr (sockets with their ends, child processes with their command), where the runner's
 * output keeps them. The timer is unref'd, so it never keeps the process alive itself.
 */
export function reportLingering(what: () => string, afterMs = 20_000): void {
  setTimeout(() => {
    const timers = [...liveTimers.values()].filter((t) => t.timer.hasRef());
    const handles =
      (process as unknown as { _getActiveHandles?: () => unknown[] })._getActiveHandles?.() ?? [];
    const described = handles.map(describe).filter((d) => d !== undefined);
    process.stderr.write(
      `# lingering: ${what()}: still running ${afterMs} ms after its teardown began; resources ${JSON.stringify(
        process.getActiveResourcesInfo(),
      )}; handles:\n${described.map((d) => `#   ${d}`).join('\n')}\n${timers
        .map((t) => `#   a timer of ${t.ms} ms, made at\n${t.stack}`)
        .join('\n')}\n`,
    );
  }, afterMs).unref();
}

/** The timers made since `trackTimers()` that have not fired for the last time, with where each was made. */
const liveTimers = new Map<number, { timer: NodeJS.Timeout; ms: number; stack: string }>();

/**
 * Records every timer this process makes from now on with its creation stack, so that `reportLingering` can say
 * which ref'd timer keeps the process alive. For a file under investigation only: a stack per timer.
 */
export function trackTimers(): void {
  createHook({
    init(asyncId, type, _trigger, resource) {
      if (type !== 'Timeout') return;
      const timer = resource as NodeJS.Timeout & { _idleTimeout?: number };
      const stack = (new Error().stack ?? '').split('\n').slice(3, 14).join('\n');
      liveTimers.set(asyncId, { timer, ms: timer._idleTimeout ?? -1, stack });
    },
    destroy(asyncId) {
      liveTimers.delete(asyncId);
    },
  }).enable();
}

function describe(handle: unknown): string | undefined {
  const name = (handle as object)?.constructor?.name ?? typeof handle;
  const h = handle as Record<string, unknown>;
  if (name === 'Socket' || name === 'TLSSocket') {
    const s = handle as {
      localPort?: number;
      remoteAddress?: string;
      remotePort?: number;
      _type?: string;
      fd?: number;
    };
    if (s.remotePort === undefined && (h as { _handle?: { fd?: number } })._handle?.fd !== undefined)
      return `${name} fd ${(h as { _handle?: { fd?: number } })._handle?.fd} (a pipe or stdio)`;
    return `${name} ${s.localPort} -> ${s.remoteAddress}:${s.remotePort}`;
  }
  if (name === 'ChildProcess') {
    const c = handle as { pid?: number; spawnfile?: string; spawnargs?: string[] };
    return `ChildProcess ${c.pid} ${c.spawnfile} ${(c.spawnargs ?? []).slice(1, 4).join(' ')}`;
  }
  if (name === 'Server') {
    const address = (handle as { address?: () => unknown }).address?.();
    return `Server ${JSON.stringify(address)}`;
  }
  if (name === 'Timeout') {
    const t = handle as { _idleTimeout?: number; _onTimeout?: { name?: string; toString(): string } };
    if ((handle as { hasRef?: () => boolean }).hasRef?.() === false) return undefined;
    return `Timeout ${t._idleTimeout} ms: ${String(t._onTimeout).replace(/\s+/g, ' ').slice(0, 160)}`;
  }
  return name;
}
