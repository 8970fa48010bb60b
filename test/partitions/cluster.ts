/**
 * The partition suite's handle on test/support/netsplit.sh (the cluster in network namespaces) and on the
 * workload processes it runs inside the client namespaces.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { grudgeSpec, homeNode, type Grudges } from './nemesis';
import type { ClientConfig } from './workload-config';

const root = join(__dirname, '..', '..', '..');
const SCRIPT = join(root, 'test', 'support', 'netsplit.sh');

export interface ScriptResult {
  readonly ok: boolean;
  readonly out: string;
}

/** Runs netsplit.sh with `args` (bounded in time), for the given server. */
export function netsplit(
  server: string,
  args: readonly string[],
  timeoutMs = 120_000,
): Promise<ScriptResult> {
  return new Promise((resolve) => {
    const child = spawn('bash', [SCRIPT, ...args], {
      env: { ...process.env, WARREN_TEST_SERVER: server },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ ok: code === 0, out });
    });
  });
}

/** Synchronous clean: for exit and signal handlers, where nothing asynchronous runs any more. */
export function cleanSync(): void {
  spawnSync('bash', [SCRIPT, 'clean'], { stdio: 'inherit', timeout: 120_000 });
}

/** A quorum queue's messages beyond its ready ones (Cluster.quorumHeld); -1 where its leader did not answer. */
export interface QuorumHeld {
  readonly queue: string;
  readonly ready: number;
  /** delivered to a consumer, not yet settled */
  readonly checkedOut: number;
  /** dead-lettered at-least-once, not yet taken by the queue's dead-letter worker */
  readonly deadLetterWaiting: number;
  /** dead-lettered at-least-once, taken by the dead-letter worker, not yet confirmed by the target */
  readonly deadLetterUnconfirmed: number;
}

export class Cluster {
  constructor(
    readonly server: string,
    readonly nodes: number,
  ) {}

  url(node: number): string {
    return `amqp://guest:guest@10.213.0.${10 + node}:5672`;
  }

  /** A client's URL list: its home node first, then the others in order. */
  urlsFor(client: string): string[] {
    const home = homeNode(client, this.nodes);
    const order = [home, ...Array.from({ length: this.nodes }, (_, i) => i + 1).filter((n) => n !== home)];
    return order.map((n) => this.url(n));
  }

  async up(): Promise<void> {
    await netsplit(this.server, ['clean']);
    const result = await netsplit(this.server, ['up', String(this.nodes)], 900_000);
    if (!result.ok) throw new Error(`the cluster did not come up:\n${result.out}`);
  }

  async clean(): Promise<void> {
    await netsplit(this.server, ['clean']);
  }

  async cut(grudges: Grudges): Promise<void> {
    await this.heal();
    const spec = grudgeSpec(grudges);
    if (spec) await this.must(['grudge', spec]);
  }

  async heal(): Promise<void> {
    await this.must(['heal']);
  }

  async signal(node: number, how: 'pause' | 'resume'): Promise<void> {
    await this.must([how, String(node)]);
  }

  async diskAlarm(node: number, on: boolean): Promise<boolean> {
    // a limit above any disk sets the alarm; 50 MB (the default) clears it
    return (
      await netsplit(this.server, [
        'ctl',
        String(node),
        'set_disk_free_limit',
        on ? '1000000000000000' : '50000000',
      ])
    ).ok;
  }

  /** The nodes node K sees running (its own view), or undefined when it does not answer. */
  async runningNodes(node = 1): Promise<number | undefined> {
    const result = await netsplit(
      this.server,
      ['ctl', String(node), 'cluster_status', '--formatter', 'json'],
      60_000,
    );
    const running = /"running_nodes":\[([^\]]*)\]/.exec(result.out)?.[1];
    return result.ok && running !== undefined
      ? running.split(',').filter((n) => n.includes('@')).length
      : undefined;
  }

  /**
   * The messages each queue holds, read over AMQP from client namespace c1 (queue-depths.ts; `rabbitmqctl
   * list_queues` timed out on an idle 4.3 cluster in these namespaces). Undefined when it could not be read.
   */
  async queues(queues: readonly string[]): Promise<{ name: string; messages: number }[] | undefined> {
    const script = join(__dirname, 'queue-depths.js');
    const result = await netsplit(
      this.server,
      ['exec', 'c1', process.execPath, script, this.url(1), ...queues],
      60_000,
    );
    if (!result.ok) return undefined;
    return result.out
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { queue: string; messages: number })
      .filter((row) => row.messages >= 0)
      .map((row) => ({ name: row.queue, messages: row.messages }));
  }

  /**
   * What each quorum queue whose name starts with `prefix` holds beyond its ready messages, read from its
   * leader's state (rabbit_fifo's overview, through `rabbitmqctl eval` on the first node that answers):
   * deliveries checked out to a consumer, and messages dead-lettered at-least-once that the queue's
   * dead-letter worker has not handed on yet. Neither counts in the message count a queue declaration
   * reports, so a job held there after the drain looked lost rather than stuck (issue 40's 3.10 losses).
   * Undefined when no node answered.
   */
  async quorumHeld(prefix: string): Promise<QuorumHeld[] | undefined> {
    const out = await this.evalOnEachQuorumQueue(
      prefix,
      '{RN, Nd} = amqqueue:get_pid(Q), Name = element(4, amqqueue:get_name(Q)), ' +
        'case catch rpc:call(Nd, ra, local_query, [{RN, Nd}, fun rabbit_fifo:overview/1], 10000) of ' +
        '{ok, {_, O}, _} when is_map(O) -> io:format("qq-held ~s ~b ~b ~b ~b~n", [Name, ' +
        'maps:get(num_ready_messages, O, -1), maps:get(num_checked_out, O, -1), ' +
        'maps:get(num_discarded, O, -1), maps:get(num_discard_checked_out, O, -1)]); ' +
        '_ -> io:format("qq-held ~s -1 -1 -1 -1~n", [Name]) end',
    );
    return out
      ?.split('\n')
      .filter((line) => line.startsWith('qq-held '))
      .map((line) => {
        const [, queue, ready, checkedOut, discarded, discardCheckedOut] = line.trim().split(' ');
        return {
          queue: queue!,
          ready: Number(ready),
          checkedOut: Number(checkedOut),
          deadLetterWaiting: Number(discarded),
          deadLetterUnconfirmed: Number(discardCheckedOut),
        };
      });
  }

  /**
   * How many of the quorum queues whose name starts with `prefix` each node leads now, as the cluster's metadata
   * says: node number -> queues led. Undefined when no node answered.
   */
  async quorumLeaders(prefix: string): Promise<Map<number, number> | undefined> {
    const out = await this.evalOnEachQuorumQueue(
      prefix,
      '{_, Nd} = amqqueue:get_pid(Q), io:format("qq-leader ~s~n", [Nd])',
    );
    if (out === undefined) return undefined;
    const led = new Map<number, number>();
    for (const match of out.matchAll(/^qq-leader wsplit(\d+)@/gm)) {
      const leader = Number(match[1]);
      led.set(leader, (led.get(leader) ?? 0) + 1);
    }
    return led;
  }

  /**
   * Runs the Erlang `body` (with `Q` bound) for each quorum queue whose name starts with `prefix`, through
   * `rabbitmqctl eval` on the first node that answers; its output, or undefined when no node answered.
   */
  private async evalOnEachQuorumQueue(prefix: string, body: string): Promise<string | undefined> {
    const expression =
      `lists:foreach(fun(Q) -> ${body} end, ` +
      `[Q || Q <- rabbit_amqqueue:list(<<"/">>), amqqueue:get_type(Q) =:= rabbit_quorum_queue, ` +
      `binary:longest_common_prefix([element(4, amqqueue:get_name(Q)), <<"${prefix}">>]) =:= ${Buffer.byteLength(prefix)}]).`;
    for (let node = 1; node <= this.nodes; node++) {
      const result = await netsplit(this.server, ['ctl', String(node), 'eval', expression], 60_000);
      if (result.ok) return result.out;
    }
    return undefined;
  }

  /** Copies every node's log folder to `folder`/nK (before a clean removes them). */
  async keepLogs(folder: string): Promise<void> {
    await netsplit(this.server, ['logs', folder]);
  }

  private async must(args: readonly string[]): Promise<void> {
    const result = await netsplit(this.server, args);
    if (!result.ok) throw new Error(`netsplit.sh ${args.join(' ')} failed:\n${result.out}`);
  }
}

/** A workload process (client.ts) inside its client namespace: its lines go to `onEvent`. */
export class ClientProcess {
  private readonly child: ChildProcess;
  private readonly waiting = new Map<string, () => void>();
  readonly exited: Promise<void>;
  crashed: string | undefined;

  constructor(
    readonly name: string,
    config: ClientConfig,
    server: string,
    onEvent: (event: Record<string, unknown>) => void,
  ) {
    const script = join(__dirname, 'client.js');
    this.child = spawn('bash', [SCRIPT, 'exec', name, process.execPath, script], {
      env: { ...process.env, WARREN_TEST_SERVER: server, PARTITION_CLIENT: JSON.stringify(config) },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      let event: Record<string, unknown>;
      try {
        event = JSON.parse(line) as Record<string, unknown>;
      } catch {
        process.stderr.write(`[${name}] ${line}\n`);
        return;
      }
      const e = String(event.e);
      if (e === 'crashed') this.crashed = String(event.error);
      const resolve = this.waiting.get(e);
      if (resolve) {
        this.waiting.delete(e);
        resolve();
      }
      if (!['ready', 'quiet', 'inventory-done', 'crashed'].includes(e)) onEvent(event);
    });
  }

  /** Resolves on the process's next `e` line; false after `timeoutMs` or when the process exits first. */
  next(e: string, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.waiting.set(e, () => {
        clearTimeout(timer);
        resolve(true);
      });
      void this.exited.then(() => {
        clearTimeout(timer);
        resolve(false);
      });
    });
  }

  send(command: Record<string, unknown>): void {
    if (this.child.stdin?.writable) this.child.stdin.write(`${JSON.stringify(command)}\n`);
  }

  /** Graceful close within `timeoutMs`, else SIGKILL (of the bash that execs it: the same process). */
  async close(timeoutMs = 20_000): Promise<void> {
    this.send({ cmd: 'close' });
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }
}
