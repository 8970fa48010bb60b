import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { BrokerPids } from './broker-processes';

const CLOCK_TICKS_PER_SEC = readClockTicks();

function readClockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/** utime + stime of another process, in ms (10 ms resolution at the usual 100 ticks/s). */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // fields after the parenthesised command name, which may itself contain spaces
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SEC;
  } catch {
    return undefined;
  }
}

export interface CpuTimes {
  /** This (publishing or consuming) node process. */
  nodeMs: number;
  /** The forked worker process, when the scenario has one (reported by itself). */
  workerMs?: number;
  rabbitmqMs?: number;
  redisMs?: number;
}

export interface CpuSample {
  stop(): CpuTimes;
}

export function startCpuSample(brokers: BrokerPids): CpuSample {
  const self = process.cpuUsage();
  const rabbitmq = processCpuMs(brokers.rabbitmq);
  const redis = processCpuMs(brokers.redis);
  return {
    stop() {
      const used = process.cpuUsage(self);
      return {
        nodeMs: (used.user + used.system) / 1000,
        rabbitmqMs: difference(processCpuMs(brokers.rabbitmq), rabbitmq),
        redisMs: difference(processCpuMs(brokers.redis), redis),
      };
    },
  };
}

function difference(after: number | undefined, before: number | undefined): number | undefined {
  return after === undefined || before === undefined ? undefined : after - before;
}
