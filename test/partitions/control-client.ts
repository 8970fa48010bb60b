/**
 * A raw amqplib control's client (control.ts, control-delays.ts): the control's own script run again inside a
 * client namespace with a role, its JSON lines collected, told to stop by a line on its stdin.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface ControlEvent {
  readonly e: string;
  readonly id?: string;
  readonly t: number;
  /** control-delays: when a published message is due out of its delay */
  readonly due?: number;
}

export interface ControlClient {
  readonly events: ControlEvent[];
  stop(): void;
  readonly exited: Promise<unknown>;
}

/** Runs `script` with `args` in client namespace `client` (netsplit.sh exec), against `server`'s cluster. */
export function startControlClient(
  server: string,
  client: string,
  script: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
): ControlClient {
  const netsplit = join(__dirname, '..', '..', '..', 'test', 'support', 'netsplit.sh');
  const child = spawn('bash', [netsplit, 'exec', client, process.execPath, script, ...args], {
    env: { ...process.env, ...env, WARREN_TEST_SERVER: server },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const events: ControlEvent[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.startsWith('{')) events.push(JSON.parse(line) as ControlEvent);
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return { events, stop: () => child.stdin!.write('stop\n'), exited };
}

/**
 * Ends a control's process when `main` (its role or its orchestration) settles: a role's stdin, its stop line,
 * stays open, so the process would not end when its event loop empties.
 */
export function exitWhenSettled(main: Promise<unknown>): void {
  main.then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
