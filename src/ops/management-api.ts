import { ManagementApiError } from './ops-errors';
import type { ResolvedManagementOptions } from './options';
import { redactCredentials } from './redact-credentials';

/**
 * What the broker says it has, read through the RabbitMQ management HTTP API (AMQP cannot read a
 * queue's arguments or the bindings). Only the fields warren compares.
 */
export interface BrokerQueue {
  readonly name: string;
  readonly type: string;
  readonly durable: boolean;
  readonly autoDelete: boolean;
  readonly exclusive: boolean;
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly ready: number;
  readonly unacked: number;
  readonly consumers: number;
}

export interface BrokerExchange {
  readonly name: string;
  readonly type: string;
  readonly durable: boolean;
  readonly autoDelete: boolean;
  readonly internal: boolean;
  readonly arguments: Readonly<Record<string, unknown>>;
}

export interface BrokerBinding {
  readonly source: string;
  readonly destination: string;
  readonly destinationType: 'queue' | 'exchange';
  readonly pattern: string;
  readonly arguments: Readonly<Record<string, unknown>>;
}

export interface BrokerState {
  readonly queues: readonly BrokerQueue[];
  readonly exchanges: readonly BrokerExchange[];
  readonly bindings: readonly BrokerBinding[];
}

/** A small client of the management API over Node's fetch: the three listings of one vhost. */
export class ManagementApi {
  constructor(private readonly options: ResolvedManagementOptions) {}

  async state(): Promise<BrokerState> {
    const [queues, exchanges, bindings] = await Promise.all([
      this.get<RawQueue[]>('queues'),
      this.get<RawExchange[]>('exchanges'),
      this.get<RawBinding[]>('bindings'),
    ]);
    return {
      queues: queues.map((q) => ({
        name: q.name,
        type: q.type ?? 'classic',
        durable: q.durable,
        autoDelete: q.auto_delete,
        exclusive: q.exclusive ?? false,
        arguments: q.arguments ?? {},
        ready: q.messages_ready ?? 0,
        unacked: q.messages_unacknowledged ?? 0,
        consumers: q.consumers ?? 0,
      })),
      exchanges: exchanges.map((e) => ({
        name: e.name,
        type: e.type,
        durable: e.durable,
        autoDelete: e.auto_delete,
        internal: e.internal,
        arguments: e.arguments ?? {},
      })),
      bindings: bindings
        .filter((b) => b.source !== '')
        .map((b) => ({
          source: b.source,
          destination: b.destination,
          destinationType: b.destination_type,
          pattern: b.routing_key,
          arguments: b.arguments ?? {},
        })),
    };
  }

  /** How many queues are bound to an exchange: for the control exchange, the listening processes. */
  async bindingCount(exchange: string): Promise<number> {
    const rows = await this.get<unknown[]>('exchanges', `/${encodeURIComponent(exchange)}/bindings/source`);
    return rows.length;
  }

  private async get<T>(listing: string, suffix = ''): Promise<T> {
    const { url, username, password, vhost } = this.options;
    const address = `${url}/api/${listing}/${encodeURIComponent(vhost)}${suffix}`;
    const signal = AbortSignal.timeout(this.options.timeoutMs);
    let response: Response;
    for (let attempt = 1; ; attempt += 1) {
      try {
        response = await fetch(address, {
          headers: { authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}` },
          signal,
        });
      } catch (error) {
        throw new ManagementApiError(
          'MANAGEMENT_FAILED',
          redactCredentials(`cannot reach the management API at ${url}: ${reasonOf(error)}`),
          undefined,
          error,
        );
      }
      // RabbitMQ answers 500 to a listing that raced a queue's deletion; the same listing a moment
      // later is whole, so a few such answers are retried within the one timeout.
      if (response.status !== 500 || attempt === LISTING_ATTEMPTS) break;
      await response.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
    if (!response.ok)
      throw new ManagementApiError(
        'MANAGEMENT_FAILED',
        `the management API at ${url} answered ${response.status} ${response.statusText} for /api/${listing}`,
        response.status,
      );
    return (await response.json()) as T;
  }
}

const LISTING_ATTEMPTS = 3;

interface RawQueue {
  name: string;
  type?: string;
  durable: boolean;
  auto_delete: boolean;
  exclusive?: boolean;
  arguments?: Record<string, unknown>;
  messages_ready?: number;
  messages_unacknowledged?: number;
  consumers?: number;
}

interface RawExchange {
  name: string;
  type: string;
  durable: boolean;
  auto_delete: boolean;
  internal: boolean;
  arguments?: Record<string, unknown>;
}

interface RawBinding {
  source: string;
  destination: string;
  destination_type: 'queue' | 'exchange';
  routing_key: string;
  arguments?: Record<string, unknown>;
}

/** fetch's own message is only "fetch failed": the reason (ECONNREFUSED, a timeout) is its cause. */
function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = (error as { cause?: unknown })?.cause;
  const detail = cause instanceof Error ? ((cause as { code?: string }).code ?? cause.message) : undefined;
  return detail && !message.includes(detail) ? `${message} (${detail})` : message;
}
