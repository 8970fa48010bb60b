import { randomBytes } from 'node:crypto';
import type { WarrenOptions } from '../index';

/** A fresh namespace for one test (`test-warren-1a2b3c4d`): every queue and exchange name carries it. */
export function testNamespace(label = 'test-warren'): string {
  return `${label}-${randomBytes(4).toString('hex')}`;
}

/**
 * createWarren options for a throwaway test instance: a random namespace, classic delay
 * levels (16 × 100 ms, delays up to 109 min), an `x-expires` of 30 min on every queue as a safety net
 * should the test die before its cleanup, and a 2 s shutdown grace. Spread your own options over it.
 *
 * @example
 * WarrenModule.forRoot({ ...testWarrenOptions({ url: process.env.AMQP_URL }), topology })
 */
export function testWarrenOptions(
  options: { url?: string | readonly string[]; namespace?: string } = {},
): WarrenOptions {
  return {
    ...(options.url !== undefined ? { url: options.url } : {}),
    namespace: options.namespace ?? testNamespace(),
    delay: { queueType: 'classic', levels: 16, unitMs: 100 },
    queues: { expiresMs: 30 * 60_000 },
    worker: { shutdownGraceMs: 2_000 },
  };
}
