import {
  checkInteger,
  checkKnownKeys,
  checkNumber,
  checkOneOf,
  ConfigurationError,
  validationMessage,
} from '../core';
import type { QueueType } from './define-topology';
import { isValidNamespace } from './naming';

export interface DelayOptions {
  /** Resolution of every delay: delays are rounded up to a multiple of it. Default 100 ms. */
  readonly unitMs?: number;
  /**
   * Number of binary levels; the longest single pass is (2^levels - 1) units. Default 29 (about 1.7 years at
   * 100 ms).
   */
  readonly levels?: number;
  /**
   * Default 'quorum' (replicated, at-least-once dead-lettering between levels). 'classic' is cheaper on one
   * node.
   */
  readonly queueType?: QueueType;
}

export interface TopologyOptions {
  /**
   * Prefix of every entity name (`<namespace>.<queue>`); lets applications and tests share a vhost. Default
   * ''.
   */
  readonly namespace?: string;
  readonly delay?: DelayOptions;
  /** Default quorum `x-delivery-limit` of job queues: the crash-loop backstop. Default 10. */
  readonly deliveryLimit?: number;
  /**
   * @deprecated Every queue is durable: RabbitMQ 4.3 refuses transient non-exclusive queues. `false` is
   * rejected.
   */
  readonly durable?: true;
  /**
   * `x-expires` on every queue: the broker deletes a queue unused for this long. A safety net for
   * throwaway namespaces in tests; leave unset in production.
   */
  readonly queueExpiresMs?: number;
}

export interface ResolvedTopologyOptions {
  readonly namespace: string;
  readonly delay: { readonly unitMs: number; readonly levels: number; readonly queueType: QueueType };
  readonly deliveryLimit: number;
  readonly queueExpiresMs: number | undefined;
}

/** The most delay levels a plan may have: namespace removal deletes every level up to it. */
export const MAX_DELAY_LEVELS = 40;

export const TOPOLOGY_DEFAULTS = Object.freeze({
  namespace: '',
  delay: Object.freeze({ unitMs: 100, levels: 29, queueType: 'quorum' as QueueType }),
  deliveryLimit: 10,
});

const KNOWN_DELAY = { unitMs: true, levels: true, queueType: true } as const satisfies Record<
  keyof DelayOptions,
  true
>;

export function resolveTopologyOptions(input: TopologyOptions = {}): ResolvedTopologyOptions {
  checkKnownKeys('delay', input.delay, KNOWN_DELAY);
  const namespace = input.namespace ?? TOPOLOGY_DEFAULTS.namespace;
  if (typeof namespace !== 'string' || !isValidNamespace(namespace)) {
    throw new ConfigurationError(
      validationMessage(
        'namespace',
        'must contain only letters, digits, and . _ : - and not start with amq.',
        namespace,
      ),
    );
  }
  if ((input as { durable?: unknown }).durable === false)
    throw new ConfigurationError(
      validationMessage(
        'queues.durable',
        'must be true: RabbitMQ 4.3 refuses transient non-exclusive queues',
        false,
      ),
    );
  const delay = input.delay ?? {};
  return Object.freeze({
    namespace,
    delay: Object.freeze({
      unitMs: checkInteger('delay.unitMs', delay.unitMs ?? TOPOLOGY_DEFAULTS.delay.unitMs, 1),
      levels: checkInteger(
        'delay.levels',
        delay.levels ?? TOPOLOGY_DEFAULTS.delay.levels,
        1,
        MAX_DELAY_LEVELS,
      ),
      queueType: checkOneOf('delay.queueType', delay.queueType ?? TOPOLOGY_DEFAULTS.delay.queueType, [
        'quorum',
        'classic',
      ]),
    }),
    deliveryLimit: checkInteger('deliveryLimit', input.deliveryLimit ?? TOPOLOGY_DEFAULTS.deliveryLimit, 1),
    queueExpiresMs:
      input.queueExpiresMs === undefined
        ? undefined
        : checkNumber('queueExpiresMs', input.queueExpiresMs, 1000),
  });
}
