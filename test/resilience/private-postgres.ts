/**
 * A PostgreSQL 15 cluster of the fault tests' own on 127.0.0.1:5499 (5699 when the suite runs on RabbitMQ
 * 4.3, so both servers' fault suites run side by side; never the shared one on 5432): created in a fixed
 * temp folder, so that a run killed before its cleanup is cleaned by the next one.
 * As root, the binaries run as the `postgres` user (PostgreSQL refuses to run as root).
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { TEST_SERVER } from '../support/broker-under-test';

const run = promisify(execFile);
const BIN = process.env.WARREN_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';
export const PRIVATE_PG_PORT = TEST_SERVER === '4.3' ? 5699 : 5499;
const ROOT = `/tmp/warren-outbox-pg-${PRIVATE_PG_PORT}`;
const DATA = join(ROOT, 'data');

export const PRIVATE_PG_URL = `postgres://postgres@127.0.0.1:${PRIVATE_PG_PORT}/postgres`;

async function asPostgres(command: string, ...args: string[]): Promise<string> {
  const path = join(BIN, command);
  const { stdout } =
    userInfo().uid === 0
      ? await run('runuser', ['-u', 'postgres', '--', path, ...args], { timeout: 120_000 })
      : await run(path, args, { timeout: 120_000 });
  return stdout;
}

/** Creates and starts the cluster (any earlier one is removed first). */
export async function startPrivatePostgres(): Promise<string> {
  await cleanPrivatePostgres();
  mkdirSync(ROOT, { recursive: true });
  if (userInfo().uid === 0) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(ROOT, Number(stdout.trim()), Number(gid.trim()));
  }
  await asPostgres('initdb', '-D', DATA, '-A', 'trust', '-U', 'postgres', '--no-sync');
  await asPostgres(
    'pg_ctl',
    '-D',
    DATA,
    '-l',
    join(ROOT, 'log'),
    '-w',
    '-o',
    `-p ${PRIVATE_PG_PORT} -k ${ROOT} -c listen_addresses=127.0.0.1 -c fsync=off`,
    'start',
  );
  return PRIVATE_PG_URL;
}

/** Fast shutdown (open connections are terminated) and start again, as an operator's restart does. */
export async function restartPrivatePostgres(): Promise<void> {
  await asPostgres('pg_ctl', '-D', DATA, '-l', join(ROOT, 'log'), '-m', 'fast', '-w', 'restart');
}

/** Stops the cluster and deletes its files. Never throws: for `after` hooks. */
export async function cleanPrivatePostgres(): Promise<void> {
  if (existsSync(join(DATA, 'postmaster.pid')))
    await asPostgres('pg_ctl', '-D', DATA, '-m', 'immediate', '-w', 'stop').catch((error: unknown) =>
      console.error('stopping the private PostgreSQL failed:', error),
    );
  rmSync(ROOT, { recursive: true, force: true });
}
