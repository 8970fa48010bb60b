// Entry point of the forked worker (dist/bench/lib/worker-process.js): consumes in a process of its own,
// as a deployed worker would, and reports latency, CPU and memory to the parent over IPC.
import { createContender } from '../adapters';
import type { Consumer, Contender } from '../adapters/contender';
import { nowUs } from './job';
import type { MemoryReading, StartCommand, StopCommand, WorkerReport } from './worker-protocol';

let contender: Contender | undefined;
let consumer: Consumer | undefined;

function send(report: WorkerReport): void {
  process.send?.(report);
}

function readMemory(): MemoryReading {
  (globalThis as { gc?: () => void }).gc?.();
  const usage = process.memoryUsage();
  return { rssMb: usage.rss / 2 ** 20, heapUsedMb: usage.heapUsed / 2 ** 20 };
}

async function start(command: StartCommand): Promise<void> {
  contender = await createContender(command.contender, command.env);
  await contender.setup(command.queue, command.features);
  const latenciesUs = command.recordLatency ? new Float64Array(command.expect).fill(NaN) : undefined;
  let handled = 0;
  const sampleEvery = command.sampleMemory ? Math.floor(command.expect / 10) : 0;
  let cpuBefore: NodeJS.CpuUsage | undefined;
  const onJob = (job: { seq: number; sentAtUs: number }) => {
    if (latenciesUs && job.seq < latenciesUs.length) latenciesUs[job.seq] = nowUs() - job.sentAtUs;
    ++handled;
    if (sampleEvery > 0 && handled % sampleEvery === 0 && handled < command.expect) {
      const at = handled;
      // after the handler returns, so the reading does not hold up the job being handled
      setImmediate(() => send({ type: 'sample', handled: at, memory: readMemory() }));
    }
    if (handled !== command.expect) return;
    const doneAtUs = nowUs();
    const cpu = process.cpuUsage(cpuBefore);
    send({
      type: 'done',
      memory: readMemory(),
      maxRssMb: process.resourceUsage().maxRSS / 1024,
      cpuMs: (cpu.user + cpu.system) / 1000,
      doneAtUs,
      latenciesUs,
    });
  };
  const memory = readMemory();
  cpuBefore = process.cpuUsage();
  consumer = await contender.consume(command.concurrency, onJob);
  send({ type: 'ready', memory });
}

async function stop(): Promise<void> {
  try {
    await consumer?.stop();
    await contender?.teardown({ deleteQueue: false });
  } finally {
    process.exit(0);
  }
}

process.on('message', (command: StartCommand | StopCommand) => {
  const task = command.type === 'start' ? start(command) : stop();
  task.catch((err: unknown) => {
    send({ type: 'error', message: err instanceof Error ? err.message : String(err) });
    setTimeout(() => process.exit(1), 100);
  });
});
process.on('disconnect', () => process.exit(0));
