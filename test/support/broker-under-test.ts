/**
 * The broker under test, from one place: every test and helper takes the AMQP URL, the `rabbitmqctl`
 * command, the management URL and the server its private nodes run from here, never on its own.
 *
 * | what | environment | default |
 * | --- | --- | --- |
 * | server of the suite and of private nodes | `WARREN_TEST_SERVER` (`3.10` or `4.3`) | `3.10`: the machine's own |
 * | AMQP URL | `WARREN_TEST_URL`, else `AMQP_URL` | 3.10: `amqp://guest:guest@127.0.0.1:5672`; 4.3: the `wsuite` node on 5673 |
 * | rabbitmqctl | `WARREN_TEST_RABBITMQCTL` (a command line, split on spaces) | 3.10: `rabbitmqctl`; 4.3: `rabbit-node.sh ctl wsuite` |
 * | management API | `WARREN_TEST_MANAGEMENT_URL` | 3.10: `http://127.0.0.1:15672`; 4.3: `http://127.0.0.1:15673` |
 *
 * With `WARREN_TEST_SERVER=4.3` and nothing else set, the suite runs on the `wsuite` node that
 * `bash test/support/rabbit-node.sh suite start` starts from the RabbitMQ 4.3 chroot (what CI does).
 * Version-specific tests ask {@link brokerUnderTest} for the version the broker itself reports, so they
 * assert what that version does instead of being skipped.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import * as amqp from 'amqplib';

/** The servers CI runs: the machine's RabbitMQ 3.10 and RabbitMQ 4.3 from the chroot. */
export type TestServer = '3.10' | '4.3';

function testServer(): TestServer {
  const value = process.env.WARREN_TEST_SERVER ?? '3.10';
  if (value !== '3.10' && value !== '4.3') {
    throw new Error(`WARREN_TEST_SERVER must be 3.10 or 4.3 (got '${value}')`);
  }
  return value;
}

/** The server the suite and its private nodes run on (`WARREN_TEST_SERVER`). */
export const TEST_SERVER: TestServer = testServer();

/** AMQP URL of the broker every integration test uses. */
export const BROKER_URL =
  process.env.WARREN_TEST_URL ??
  process.env.AMQP_URL ??
  (TEST_SERVER === '4.3' ? 'amqp://guest:guest@127.0.0.1:5673' : 'amqp://guest:guest@127.0.0.1:5672');

/** Root of that broker's management HTTP API (no trailing `/api`). */
export const MANAGEMENT_URL =
  process.env.WARREN_TEST_MANAGEMENT_URL ??
  (TEST_SERVER === '4.3' ? 'http://127.0.0.1:15673' : 'http://127.0.0.1:15672');

/** Finds a file of the repository from this file, compiled (`dist/test/support`) or not. */
export function repositoryFile(relative: string): string {
  let dir = __dirname;
  for (;;) {
    const candidate = path.join(dir, relative);
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(candidate)) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`broker-under-test: cannot find ${relative} above ${__dirname}`);
    dir = parent;
  }
}

function rabbitmqctlCommand(): string[] {
  const configured = process.env.WARREN_TEST_RABBITMQCTL;
  if (configured) return configured.split(' ').filter(Boolean);
  if (TEST_SERVER === '4.3') return ['bash', repositoryFile('test/support/rabbit-node.sh'), 'ctl', 'wsuite'];
  return ['rabbitmqctl'];
}

const run = promisify(execFile);

/** Runs `rabbitmqctl args...` against the broker under test and resolves with its stdout. */
export async function rabbitmqctl(...args: string[]): Promise<string> {
  const [command, ...prefix] = rabbitmqctlCommand();
  const { stdout } = await run(command!, [...prefix, ...args], {
    timeout: 90_000,
    env: { ...process.env, WARREN_TEST_SERVER: TEST_SERVER },
  });
  return stdout;
}

/** What the broker under test says it is, read from its connection's server properties. */
export interface BrokerUnderTest {
  readonly product: string;
  /** As the broker spells it: `3.10.8`, `4.3.6`. */
  readonly version: string;
  readonly major: number;
  readonly minor: number;
  /** RabbitMQ 4.0 or later: quorum priorities, consumer timeouts on quorum queues, no transient queues. */
  readonly isV4: boolean;
}

let identity: Promise<BrokerUnderTest> | undefined;

/** The broker's product and version, asked once per process. */
export function brokerUnderTest(url = BROKER_URL): Promise<BrokerUnderTest> {
  if (url !== BROKER_URL) return readIdentity(url);
  identity ??= readIdentity(url);
  return identity;
}

async function readIdentity(url: string): Promise<BrokerUnderTest> {
  const connection = await amqp.connect(url);
  try {
    const properties = (connection.connection as unknown as { serverProperties: Record<string, unknown> })
      .serverProperties;
    const version = String(properties.version ?? '0.0');
    const [major = 0, minor = 0] = version.split('.').map(Number);
    return { product: String(properties.product ?? 'unknown'), version, major, minor, isV4: major >= 4 };
  } finally {
    await connection.close().catch(() => undefined);
  }
}
