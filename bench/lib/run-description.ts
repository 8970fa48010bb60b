import { collectMachineInfo, type MachineInfo } from './machine-info';

export interface RunDescription {
  /** The command that repeats the run. */
  command: string;
  machine: MachineInfo;
}

/**
 * What a result file must name so that anyone can repeat its run: the command, the machine and the
 * versions (Node, RabbitMQ at `amqpUrl`, the libraries, the commit).
 */
export async function describeRun(suite: string, amqpUrl: string): Promise<RunDescription> {
  const args = process.argv.slice(2); // the suite's own arguments (bench/main.ts sets them)
  const machine = await collectMachineInfo(
    { amqpUrl, redisHost: '', redisPort: 0, redisPrefix: '' },
    { redis: false },
  );
  return { command: ['npm run bench --', suite, ...args].join(' '), machine };
}
