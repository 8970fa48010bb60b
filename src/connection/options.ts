import {
  checkInteger,
  checkNonEmptyString,
  checkNumber,
  ConfigurationError,
  validationMessage,
} from '../core';

export interface ReconnectOptions {
  /** First delay after a lost connection. Default 100 ms. */
  readonly initialDelayMs?: number;
  /** Longest delay between attempts. Default 10 000 ms. */
  readonly maxDelayMs?: number;
  /**
   * Fraction (0..1) of each delay drawn at random, so a fleet does not reconnect in lockstep. Default 0.3.
   */
  readonly jitter?: number;
}

export interface ConnectionOptions {
  /**
   * Broker URL, or a list of cluster nodes tried in turn. Default: `WARREN_URL`, then `AMQP_URL`
   * from the environment, then `amqp://guest:guest@127.0.0.1:5672`.
   */
  readonly url?: string | readonly string[];
  /** AMQP heartbeat in seconds; a dead peer is noticed after about two of them. Default 5. */
  readonly heartbeatSeconds?: number;
  /** Shown in the management UI and `rabbitmqctl list_connections`. Default `warren <pid>`. */
  readonly connectionName?: string;
  /** How long `createWarren` keeps trying before it gives up with CONNECTION_FAILED. Default 10 000 ms. */
  readonly connectTimeoutMs?: number;
  readonly reconnect?: ReconnectOptions;
}

export interface ResolvedConnectionOptions {
  readonly urls: readonly string[];
  readonly heartbeatSeconds: number;
  readonly connectionName: string;
  readonly connectTimeoutMs: number;
  readonly reconnect: Required<ReconnectOptions>;
}

export const CONNECTION_DEFAULTS = Object.freeze({
  url: 'amqp://guest:guest@127.0.0.1:5672',
  heartbeatSeconds: 5,
  connectTimeoutMs: 10_000,
  reconnect: Object.freeze({ initialDelayMs: 100, maxDelayMs: 10_000, jitter: 0.3 }),
});

export function resolveConnectionOptions(
  input: ConnectionOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): ResolvedConnectionOptions {
  const raw = input.url ?? env.WARREN_URL ?? env.AMQP_URL ?? CONNECTION_DEFAULTS.url;
  const urls = (typeof raw === 'string' ? raw.split(',') : raw)
    .map((u) => u.trim())
    .filter((u) => u.length > 0);
  if (urls.length === 0)
    throw new ConfigurationError(
      validationMessage('connection.url', 'must name at least one broker URL', raw),
    );
  for (const [i, url] of urls.entries()) {
    if (!/^amqps?:\/\//.test(url))
      throw new ConfigurationError(
        validationMessage(`connection.url[${i}]`, 'must start with amqp:// or amqps://', redactUrl(url)),
      );
  }
  const reconnect = input.reconnect ?? {};
  return Object.freeze({
    urls: Object.freeze(urls),
    heartbeatSeconds: checkInteger(
      'connection.heartbeatSeconds',
      input.heartbeatSeconds ?? CONNECTION_DEFAULTS.heartbeatSeconds,
      0,
      600,
    ),
    connectionName: checkNonEmptyString(
      'connection.connectionName',
      input.connectionName ?? `warren ${process.pid}`,
    ),
    connectTimeoutMs: checkInteger(
      'connection.connectTimeoutMs',
      input.connectTimeoutMs ?? CONNECTION_DEFAULTS.connectTimeoutMs,
      0,
    ),
    reconnect: Object.freeze({
      initialDelayMs: checkInteger(
        'connection.reconnect.initialDelayMs',
        reconnect.initialDelayMs ?? CONNECTION_DEFAULTS.reconnect.initialDelayMs,
        1,
      ),
      maxDelayMs: checkInteger(
        'connection.reconnect.maxDelayMs',
        reconnect.maxDelayMs ?? CONNECTION_DEFAULTS.reconnect.maxDelayMs,
        1,
      ),
      jitter: checkNumber(
        'connection.reconnect.jitter',
        reconnect.jitter ?? CONNECTION_DEFAULTS.reconnect.jitter,
        0,
        1,
      ),
    }),
  });
}

/** A URL fit for logs and error messages: the password replaced. */
export function redactUrl(url: string): string {
  return url.replace(/^(amqps?:\/\/[^:@/]+):[^@/]*@/, '$1:***@');
}
