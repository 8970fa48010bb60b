import type { Contender, ContenderEnv } from './contender';

export const CONTENDER_NAMES = [
  'amqplib',
  'amqplib-nodelay',
  'amqplib-control',
  'amqplib-at-least-once',
  'rascal',
  'bullmq',
  'warren',
  'warren-classic-levels',
  'warren-in-place',
  'warren-cqv2',
  'warren-ahead',
  'warren-nagle',
  'amqplib-warren-wire',
  'amqplib-warren-topology',
] as const;
export type ContenderName = (typeof CONTENDER_NAMES)[number];
/**
 * What a `contenders` run without `--contenders` measures. `warren-classic-levels` (warren with
 * `delay.queueType: 'classic'`) only matters to the delay scenarios, `warren-in-place` (its quorum queue
 * retrying in place, RabbitMQ 4.3) to the throughput suite's retries with a backoff, `warren-cqv2` (its classic
 * job queue declared as classic queue version 2, an opt-in on RabbitMQ 3.10-3.12) to classic queues, `warren-ahead` (warren
 * with `worker.prefetchAhead` at the concurrency, prefetch = twice the concurrency) to the consume scenarios, and `amqplib-warren-wire` (raw
 * amqplib publishing, consuming and retrying warren's messages) to the throughput suite's publish, consume and
 * retry scenarios, `warren-nagle` (warren with Nagle's algorithm on, amqplib's default) and
 * `amqplib-warren-topology` (raw amqplib's messages through warren's queue and hold) to the retry rows, and
 * `amqplib-control` (raw amqplib a second time in each round: its ratio to `amqplib` is the run's noise floor)
 * to any row, and `amqplib-at-least-once` (raw amqplib whose quorum TTL queue dead-letters at-least-once, as
 * warren's holds) to the quorum retries with a backoff, so they are asked for by name.
 */
export const DEFAULT_CONTENDERS: readonly ContenderName[] = CONTENDER_NAMES.filter(
  (name) =>
    name !== 'amqplib-control' &&
    name !== 'amqplib-at-least-once' &&
    name !== 'warren-classic-levels' &&
    name !== 'warren-in-place' &&
    name !== 'warren-cqv2' &&
    name !== 'warren-ahead' &&
    name !== 'warren-nagle' &&
    name !== 'amqplib-warren-wire' &&
    name !== 'amqplib-warren-topology',
);
export type BrokerKind = 'rabbitmq' | 'redis';

export const BROKER_OF: Record<ContenderName, BrokerKind> = {
  amqplib: 'rabbitmq',
  'amqplib-nodelay': 'rabbitmq',
  'amqplib-control': 'rabbitmq',
  'amqplib-at-least-once': 'rabbitmq',
  rascal: 'rabbitmq',
  bullmq: 'redis',
  warren: 'rabbitmq',
  'warren-classic-levels': 'rabbitmq',
  'warren-in-place': 'rabbitmq',
  'warren-cqv2': 'rabbitmq',
  'warren-ahead': 'rabbitmq',
  'warren-nagle': 'rabbitmq',
  'amqplib-warren-wire': 'rabbitmq',
  'amqplib-warren-topology': 'rabbitmq',
};

/** The baseline every ratio is computed against. */
export const BASELINE: ContenderName = 'amqplib';

/** Loads only the named adapter's libraries, so a worker process's memory is that contender's alone. */
export async function createContender(name: ContenderName, env: ContenderEnv): Promise<Contender> {
  switch (name) {
    case 'amqplib':
      return new (await import('./amqplib')).AmqplibContender(env);
    case 'amqplib-nodelay':
      return new (await import('./amqplib')).AmqplibContender(env, true);
    case 'amqplib-control':
      return new (await import('./amqplib')).AmqplibContender(env, false, name);
    case 'amqplib-at-least-once':
      return new (await import('./amqplib')).AmqplibContender(env, false, name, true);
    case 'rascal':
      return new (await import('./rascal')).RascalContender(env);
    case 'bullmq':
      return new (await import('./bullmq')).BullmqContender(env);
    case 'warren':
      return new (await import('./warren')).WarrenContender(env);
    case 'warren-classic-levels':
      return new (await import('./warren')).WarrenContender(env, { delay: { queueType: 'classic' } }, name);
    case 'warren-in-place':
      return new (await import('./warren')).WarrenContender(env, {}, name, { inPlaceRetries: true });
    case 'warren-cqv2':
      return new (await import('./warren')).WarrenContender(env, {}, name, { classicQueueVersion: 2 });
    case 'warren-ahead':
      return new (await import('./warren')).WarrenContender(
        env,
        // capped at each queue's concurrency: as many held as run
        { worker: { prefetchAhead: 1_000 } },
        name,
      );
    case 'warren-nagle':
      // Nagle's algorithm on, as amqplib's own default: what warren's noDelay costs where nothing waits
      return new (await import('./warren')).WarrenContender(
        env,
        { connection: { socket: { noDelay: false } } },
        name,
      );
    case 'amqplib-warren-wire':
      return new (await import('./warren-wire')).WarrenWireContender(env);
    case 'amqplib-warren-topology':
      return new (await import('./warren-wire')).WarrenWireContender(env, true);
  }
}

export function isNotImplemented(err: unknown): boolean {
  return err instanceof Error && /adapter not implemented yet/.test(err.message);
}
