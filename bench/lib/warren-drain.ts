import * as amqp from 'amqplib';
import type { Warren } from '../../src';
import type { TopologyPlan } from '../../src/ops';

/** What draining a prefilled queue measured: jobs per second and this process's CPU per job. */
export interface DrainFigures {
  readonly jobsPerSecond: number;
  readonly cpuUsPerJob: number;
}

/**
 * Starts `warren` on a queue prefilled with `jobs` jobs and measures until the last one completed: the
 * wall time and this process's CPU (user and system), per job.
 */
export async function drainMeasured(warren: Warren, jobs: number): Promise<DrainFigures> {
  let completed = 0;
  const done = new Promise<void>((resolve) => {
    warren.on('completed', () => {
      if (++completed === jobs) resolve();
    });
  });
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  await warren.start();
  await done;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const used = process.cpuUsage(cpu);
  return { jobsPerSecond: jobs / seconds, cpuUsPerJob: (used.user + used.system) / jobs };
}

/**
 * Deletes every queue and exchange of a plan over a fresh connection (the broker is shared: leave nothing
 * behind). Call it after the warren closed: deleting queues under live consumers would make them
 * re-declare the topology.
 */
export async function deletePlan(url: string, plan: TopologyPlan): Promise<void> {
  const connection = await amqp.connect(url);
  try {
    const channel = await connection.createChannel();
    for (const queue of plan.queues) await channel.deleteQueue(queue.name);
    for (const exchange of plan.exchanges) await channel.deleteExchange(exchange.name);
  } finally {
    await connection.close();
  }
}
