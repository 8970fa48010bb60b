/**
 * Private RabbitMQ nodes for fault and resilience tests.
 *
 * Tests in `test/resilience/` stop, kill and restart brokers. They must never do that to the shared
 * broker on 127.0.0.1:5672 (other tests run against it), so they start their own nodes through
 * `test/support/rabbit-node.sh`:
 *
 * | node    | AMQP            | what for                                           |
 * | ------- | --------------- | -------------------------------------------------- |
 * | `wsolo` | 127.0.0.1:5690  | one standalone node: restart, crash, alarms        |
 * | `w1..3` | 127.0.0.1:5681-3| a 3-node cluster: node loss, quorum leader failover|
 * | `wmgmt` | 127.0.0.1:5696  | management plugin on (HTTP 127.0.0.1:15696): ops   |
 * | `wtls`  | 127.0.0.1:5694  | TLS listener on 5695, client certificates (issue 12)|
 * | `wsmall`| 127.0.0.1:5697  | a small `max_message_size` (issue 12)              |
 * | `wshort`| 127.0.0.1:5698  | a `consumer_timeout` of seconds                    |
 *
 * Every node runs the server `WARREN_TEST_SERVER` names (`broker-under-test.ts`): the machine's 3.10 by
 * default, RabbitMQ 4.3 from the chroot `rabbit-server.sh` builds with `WARREN_TEST_SERVER=4.3`. The 4.3
 * nodes are named `<node>43@<host>` and listen on the ports above plus 200 (wsolo43 on 5890), so the
 * fault suites of both servers can run at the same time, as CI runs them.
 *
 * Every function here is safe to call repeatedly (start on a running node returns at once, stop/kill
 * on a stopped node is a no-op) and concurrently from several test processes (the script serialises
 * state changes with a lock file). The clean functions never throw: they are meant for `after()`
 * hooks and log what went wrong instead.
 *
 * @example
 * ```ts
 * const node = await startSingleNode();          // fresh or existing data, AMQP accepted on return
 * const conn = await amqp.connect(node.url);
 * await rabbitCtl(node.name, 'close_all_connections', 'fault test');
 * await restartSingleNode();                     // graceful: durable queues + persistent messages survive
 * after(() => cleanSingleNode());                // stop and delete the data
 * ```
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { repositoryFile, TEST_SERVER } from './broker-under-test';
import { waitFor } from './wait-for';

/** One private RabbitMQ node as tests see it. */
export interface PrivateNode {
  /** Erlang node name, `wsolo@<short-host>` or `w1@<short-host>`; what {@link rabbitCtl} takes. */
  name: string;
  /** AMQP port on 127.0.0.1. */
  port: number;
  /** AMQP URL for amqplib, `amqp://guest:guest@127.0.0.1:<port>` (guest works over loopback). */
  url: string;
}

/** The management node: a private node with the management plugin's HTTP API on. */
export interface ManagementNode extends PrivateNode {
  /** Management HTTP API root, `http://127.0.0.1:15696` (guest/guest over loopback). */
  managementUrl: string;
}

/** Cluster node index: w1, w2 or w3. */
export type ClusterNodeIndex = 1 | 2 | 3;

const SINGLE_NODE = 'wsolo';
const SINGLE_PORT = 5690;
const CLUSTER_PORT_BASE = 5680;
const CLUSTER_INDEXES: readonly ClusterNodeIndex[] = [1, 2, 3];

/**
 * Upper bounds for one script call. Measured on a busy 2-vCPU VM: single start 4-8 s, restart
 * ~7 s, cluster start 15-25 s; each rabbitmqctl call ~1 s. The script's own boot timeout is 120 s.
 */
const TIMEOUT_MS = {
  start: 180_000,
  restart: 270_000,
  stop: 100_000,
  kill: 60_000,
  clean: 120_000,
  clusterStart: 400_000,
  ctl: 90_000,
} as const;

const SCRIPT_RELATIVE_PATH = path.join('test', 'support', 'rabbit-node.sh');

function shortHostname(): string {
  return os.hostname().split('.')[0] ?? os.hostname();
}

/** What the server under test adds to the nodes' names and ports (as rabbit-node.sh does). */
const NODE_SUFFIX = TEST_SERVER === '4.3' ? '43' : '';
const PORT_OFFSET = TEST_SERVER === '4.3' ? 200 : 0;

function nodeInfo(shortName: string, basePort: number): PrivateNode {
  const port = basePort + PORT_OFFSET;
  return {
    name: `${shortName}${NODE_SUFFIX}@${shortHostname()}`,
    port,
    url: `amqp://guest:guest@127.0.0.1:${port}`,
  };
}

/** The single node's coordinates (whether or not it runs). */
export function singleNode(): PrivateNode {
  return nodeInfo(SINGLE_NODE, SINGLE_PORT);
}

/** Cluster node `i`'s coordinates (whether or not it runs). */
export function clusterNode(i: ClusterNodeIndex): PrivateNode {
  return nodeInfo(`w${i}`, CLUSTER_PORT_BASE + i);
}

function scriptPath(): string {
  return repositoryFile(SCRIPT_RELATIVE_PATH);
}

/** Raised when the script fails or times out; carries its output for the test report. */
export class PrivateBrokerError extends Error {
  constructor(
    message: string,
    readonly args: readonly string[],
    readonly exitCode: number | null,
    readonly stdout: string,
    readonly stderr: string,
  ) {
    super(message);
    this.name = 'PrivateBrokerError';
  }
}

/**
 * Runs the script and resolves with its stdout. The script runs in its own process group so a
 * timeout kills it together with the rabbitmqctl/runuser processes it started; the broker VMs are
 * not in that group (rabbitmq-server -detached puts them in a session of their own).
 */
function runScript(
  args: readonly string[],
  timeoutMs: number,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  // the server the nodes run from comes from broker-under-test, like everything else about the broker
  env = { ...env, WARREN_TEST_SERVER: TEST_SERVER };
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [scriptPath(), ...args], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
    }, timeoutMs);
    const text = (chunks: Buffer[]): string => Buffer.concat(chunks).toString('utf8');
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(
        new PrivateBrokerError(
          `rabbit-node.sh ${args.join(' ')}: ${err.message}`,
          args,
          null,
          text(stdout),
          text(stderr),
        ),
      );
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const out = text(stdout);
      const err = text(stderr);
      if (code === 0 && !timedOut) {
        resolve(out);
        return;
      }
      const why = timedOut
        ? `timed out after ${timeoutMs} ms`
        : signal
          ? `killed by ${signal}`
          : `exited with ${code}`;
      const detail = (err.trim() || out.trim()).split('\n').slice(-15).join('\n');
      reject(
        new PrivateBrokerError(`rabbit-node.sh ${args.join(' ')} ${why}\n${detail}`, args, code, out, err),
      );
    });
  });
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

async function cleanup(what: string, args: readonly string[]): Promise<void> {
  try {
    await runScript(args, TIMEOUT_MS.clean);
  } catch (err) {
    console.warn(`private-broker: ${what} failed (ignored): ${(err as Error).message}`);
  }
}

/** Starts the standalone node (keeping any data it has) and resolves once it accepts AMQP. */
export async function startSingleNode(): Promise<PrivateNode> {
  await runScript(['single', 'start'], TIMEOUT_MS.start);
  return singleNode();
}

/**
 * The fault tier runs its files one after another on one standalone node (scripts/node-test.mjs sets
 * `WARREN_SHARED_NODES=1` and cleans the node when the tier ends, also when it fails): a fresh node per
 * file cost a stop, a wipe and a boot each time (CI's fault stage went from 484 s to 419 s without them).
 * Every test has a namespace of its own, so what an earlier file left behind is not in its way.
 */
export function privateNodesShared(): boolean {
  return process.env.WARREN_SHARED_NODES === '1';
}

/**
 * The standalone node an earlier file of the tier left up, if it still takes an AMQP connection within
 * 5 s (a file that failed may have left it stopped or frozen: then a fresh one). The memory-alarm file,
 * whose alarm would outlive it, wipes the node before and after itself.
 */
export async function reuseSingleNode(): Promise<PrivateNode> {
  const node = await startSingleNode();
  if (await acceptsConnection(node.port, 5_000)) return node;
  await cleanSingleNode();
  return startSingleNode();
}

/** True when the port answers the AMQP protocol header with a connection.start frame in time. */
function acceptsConnection(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write(Buffer.from('AMQP\x00\x00\x09\x01', 'latin1')));
    // a method frame (type 1) on channel 0: connection.start
    socket.once('data', (data) => done(data[0] === 1));
  });
}

/** Stops the standalone node gracefully (`rabbitmqctl stop`); its data stays for the next start. */
export async function stopSingleNode(): Promise<void> {
  await runScript(['single', 'stop'], TIMEOUT_MS.stop);
}

/** Graceful stop, then start on the same data; resolves once the node accepts AMQP again. */
export async function restartSingleNode(): Promise<void> {
  await runScript(['single', 'restart'], TIMEOUT_MS.restart);
}

/** Crashes the standalone node with SIGKILL (no shutdown work); resolves once it is gone. */
export async function killSingleNode(): Promise<void> {
  await runScript(['single', 'kill'], TIMEOUT_MS.kill);
}

/** Stops the standalone node (killing it if it will not stop) and deletes its data. Never throws. */
export async function cleanSingleNode(): Promise<void> {
  await cleanup('cleanSingleNode', ['single', 'clean']);
}

/** The management node's coordinates (whether or not it runs). */
export function managementNode(): ManagementNode {
  return { ...nodeInfo('wmgmt', 5696), managementUrl: `http://127.0.0.1:${15696 + PORT_OFFSET}` };
}

/** Starts the node with the management plugin (keeping its data); resolves once it accepts AMQP. */
export async function startManagementNode(): Promise<ManagementNode> {
  await runScript(['mgmt', 'start'], TIMEOUT_MS.start);
  return managementNode();
}

/** Stops the management node (killing it if it will not stop) and deletes its data. Never throws. */
export async function cleanManagementNode(): Promise<void> {
  await cleanup('cleanManagementNode', ['mgmt', 'clean']);
}

/**
 * Starts the 3-node cluster (w1..w3) or makes sure the running one is complete, and resolves once all
 * three accept AMQP and are cluster members.
 */
export async function startCluster(): Promise<PrivateNode[]> {
  await runScript(['cluster', 'start'], TIMEOUT_MS.clusterStart);
  return CLUSTER_INDEXES.map(clusterNode);
}

/** Crashes cluster node `i` with SIGKILL; its data stays, so {@link startClusterNode} rejoins it. */
export async function killClusterNode(i: ClusterNodeIndex): Promise<void> {
  await runScript(['cluster', 'kill-node', String(checkIndex(i))], TIMEOUT_MS.kill);
}

/** Starts cluster node `i` from its data dir (it rejoins the cluster); resolves once it accepts AMQP. */
export async function startClusterNode(i: ClusterNodeIndex): Promise<void> {
  await runScript(['cluster', 'start-node', String(checkIndex(i))], TIMEOUT_MS.start);
}

/** Stops all cluster nodes (killing any that will not stop) and deletes their data. Never throws. */
export async function cleanCluster(): Promise<void> {
  await cleanup('cleanCluster', ['cluster', 'clean']);
}

/** Running members of the cluster as w1 reports them (w1 must be up), e.g. `['w1@vm', 'w2@vm']`. */
export async function runningClusterNodes(via: ClusterNodeIndex = 1): Promise<string[]> {
  const out = await rabbitCtl(`w${checkIndex(via)}`, 'cluster_status', '--formatter', 'json');
  const status = JSON.parse(jsonPart(out)) as { running_nodes?: string[] };
  return [...(status.running_nodes ?? [])].sort();
}

/**
 * Runs `rabbitmqctl -n <node> args...` against one of the private nodes (`wsolo`, `w1`..`w3`, with or
 * without `@host`; the script refuses any other node) and resolves with its stdout.
 *
 * @example rabbitCtl('wsolo', 'set_vm_memory_high_watermark', '0.0001')
 */
export async function rabbitCtl(node: string, ...args: string[]): Promise<string> {
  return runScript(['ctl', node, ...args], TIMEOUT_MS.ctl);
}

/**
 * The node currently leading quorum queue `queue`, asked through `node` (`rabbitmq-queues
 * quorum_status`). `undefined` while there is no leader (election in progress), when the queue
 * does not exist, or when `node` cannot answer; poll it with a deadline after killing a node.
 */
export async function quorumLeader(node: string, queue: string, vhost = '/'): Promise<string | undefined> {
  let out: string;
  try {
    out = await runScript(
      ['queues', node, 'quorum_status', queue, '--vhost', vhost, '--formatter', 'json'],
      TIMEOUT_MS.ctl,
    );
  } catch {
    return undefined;
  }
  try {
    const members = JSON.parse(jsonPart(out)) as Array<Record<string, unknown>>;
    const leader = members.find((m) => m['Raft State'] === 'leader');
    return typeof leader?.['Node Name'] === 'string' ? leader['Node Name'] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Spreads the leaders of the cluster's quorum queues whose names match `queuePattern` (a regular
 * expression) over its running nodes (`rabbitmq-queues rebalance quorum`, asked through `via`): a client
 * that declares every queue through one node gets them all led there (client-local placement).
 */
export async function rebalanceQuorumLeaders(
  queuePattern: string,
  via: ClusterNodeIndex = 1,
): Promise<string> {
  return runScript(
    ['queues', `w${checkIndex(via)}`, 'rebalance', 'quorum', '--queue-pattern', queuePattern],
    TIMEOUT_MS.ctl,
  );
}

/** Resolves once something accepts TCP connections on 127.0.0.1:`port`; rejects after `timeoutMs`. */
export async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  await waitFor(() => canConnect(port, Math.max(100, Math.min(1000, deadline - Date.now()))), {
    timeoutMs,
    intervalMs: 100,
    what: `waitForPort: something to accept connections on 127.0.0.1:${port}`,
  });
}

function canConnect(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const done = (ok: boolean): void => {
      socket.removeAllListeners();
      socket.on('error', () => undefined);
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function checkIndex(i: number): ClusterNodeIndex {
  if (i !== 1 && i !== 2 && i !== 3) throw new RangeError(`cluster node index must be 1, 2 or 3 (got ${i})`);
  return i;
}

/** rabbitmqctl prints banner lines unless -q; keep from the first JSON bracket on. */
function jsonPart(out: string): string {
  const start = out.search(/[[{]/);
  return start < 0 ? out : out.slice(start);
}

/** Nodes a test configures itself: its own rabbitmq.conf and plugins. */
export type ConfiguredNodeName = 'wtls' | 'wsmall' | 'wshort';

const CONFIGURED_PORTS: Readonly<Record<ConfiguredNodeName, number>> = {
  wtls: 5694,
  wsmall: 5697,
  wshort: 5698,
};

/** A configured node's coordinates (whether or not it runs). */
export function configuredNode(name: ConfiguredNodeName): PrivateNode {
  return nodeInfo(name, CONFIGURED_PORTS[name]);
}

/**
 * Starts `wtls` or `wsmall` with `config` as its rabbitmq.conf (the text; the script copies it next
 * to the node's data) and `plugins` enabled, and resolves once it accepts AMQP. A node already running
 * keeps the configuration it started with: clean it first to change it.
 */
export async function startConfiguredNode(
  name: ConfiguredNodeName,
  config: string,
  plugins: readonly string[] = [],
): Promise<PrivateNode> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `warren-${name}-conf-`));
  const file = path.join(dir, 'rabbitmq.conf');
  fs.writeFileSync(file, config);
  try {
    await runScript(['node', name, 'start'], TIMEOUT_MS.start, {
      ...process.env,
      WARREN_NODE_CONF: file,
      WARREN_NODE_PLUGINS: plugins.join(','),
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return configuredNode(name);
}

/** Stops a configured node (killing it if it will not stop) and deletes its data. Never throws. */
export async function cleanConfiguredNode(name: ConfiguredNodeName): Promise<void> {
  await cleanup(`clean ${name}`, ['node', name, 'clean']);
}
