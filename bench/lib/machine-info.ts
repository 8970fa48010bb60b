import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './paths';
import { connectAmqp } from '../adapters/amqplib';
import type { ContenderEnv } from '../adapters/contender';

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memoryGb: number;
  kernel: string;
  node: string;
  rabbitmq: string;
  redis: string;
  packages: Record<string, string>;
  gitCommit: string;
}

const PACKAGES = ['amqplib', 'rascal', 'bullmq', 'ioredis', 'typescript'];

/** `redis: false` for suites that never touch Redis (it is then reported as not used). */
export async function collectMachineInfo(
  env: ContenderEnv,
  opts: { redis?: boolean } = {},
): Promise<MachineInfo> {
  return {
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    cores: os.cpus().length,
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    kernel: os.release(),
    node: process.version,
    rabbitmq: await rabbitmqVersion(env).catch((err: Error) => `unknown (${err.message})`),
    redis:
      opts.redis === false
        ? 'not used'
        : await redisVersion(env).catch((err: Error) => `unknown (${err.message})`),
    packages: Object.fromEntries(PACKAGES.map((name) => [name, packageVersion(name)])),
    gitCommit: gitCommit(),
  };
}

/** The version the broker at `amqpUrl` reports. */
export async function rabbitmqVersion(env: Pick<ContenderEnv, 'amqpUrl'>): Promise<string> {
  const connection = await connectAmqp(env.amqpUrl);
  try {
    return String(connection.connection.serverProperties.version);
  } finally {
    await connection.close();
  }
}

async function redisVersion(env: ContenderEnv): Promise<string> {
  const { Queue } = await import('bullmq');
  // any queue name will do: only the connection is used, and nothing is written
  const queue = new Queue('version', {
    connection: { host: env.redisHost, port: env.redisPort },
    prefix: env.redisPrefix,
  });
  try {
    const info = await (await queue.getBackend().client).info();
    return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
  } finally {
    await queue.close();
  }
}

function packageVersion(name: string): string {
  try {
    return JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return 'not installed';
  }
}

function gitCommit(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    }).trim();
    // a run of uncommitted code cannot be repeated from its commit alone
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    });
    return dirty.trim() === '' ? commit : `${commit} with uncommitted changes`;
  } catch {
    return 'unknown';
  }
}
