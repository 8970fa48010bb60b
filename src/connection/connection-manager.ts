import { EventEmitter } from 'node:events';
import * as amqp from 'amqplib';
import { ConnectionError, jitteredBackoff, WarrenError, type Logger } from '../core';
import { type BrokerVersion, describeFeatures, readBrokerVersion } from './broker-version';
import { maskPasswords, redactUrl, type ResolvedConnectionOptions } from './options';
import { runReadySteps, type ReadyStep } from './ready-steps';
import { corkMuxWrites } from './corked-writes';

export interface ConnectionEvents {
  connected: [{ url: string; generation: number }];
  disconnected: [{ error: Error | undefined }];
  blocked: [{ reason: string }];
  unblocked: [];
}

/**
 * One AMQP connection that heals itself: tries the URL list in turn with backoff and jitter, re-runs
 * its ready steps (topology, channels, consumers: one ordered list, see `useReadySteps`) after every
 * reconnect, and keeps the reason of the
 * last close so later errors can carry it as `cause`. Detects loss on `close` (a broker-forced close,
 * 320, emits no `error`).
 */
export class ConnectionManager extends EventEmitter<ConnectionEvents> {
  private model: amqp.ChannelModel | undefined;
  private steps: readonly ReadyStep[] | undefined;
  private urlIndex = 0;
  private attempt = 0;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private closing = false;
  private blockedReason: string | undefined;
  /** Incremented on every successful connect; channels remember the generation they belong to. */
  generation = 0;
  /** Product and version of the broker of the current (or last) connection, read at connect. */
  broker: BrokerVersion | undefined;
  /**
   * The broker user of the current (or last) connection, as its URL names it (amqplib's default `guest`
   * when it names none); undefined with EXTERNAL authentication, where the broker takes the user from the
   * client certificate.
   */
  username: string | undefined;
  lastError: Error | undefined;
  /** The callers of `connected` waiting for a reconnect: called with nothing when it comes, with why not on close. */
  private readonly waiting = new Set<(error?: Error) => void>();

  constructor(
    private readonly options: ResolvedConnectionOptions,
    private readonly log: Logger,
  ) {
    super();
  }

  /** The broker's `consumer_timeout` as configured (`connection.consumerTimeoutMs`), ms. */
  get consumerTimeoutMs(): number {
    return this.options.consumerTimeoutMs;
  }

  get isConnected(): boolean {
    return this.model !== undefined;
  }

  get isBlocked(): boolean {
    return this.blockedReason !== undefined;
  }

  get current(): amqp.ChannelModel | undefined {
    return this.model;
  }

  /**
   * The steps run, in this order, after every (re)connect and before `connected` is emitted. Given once,
   * before `start()`: the whole order is then in the caller's one list, not spread over registrations.
   */
  useReadySteps(steps: readonly ReadyStep[]): void {
    if (this.steps !== undefined) throw new Error('the ready steps of a connection are given once');
    this.steps = steps;
  }

  /**
   * Resolves once the connection is up (at once when it is), or fails with CONNECTION_LOST after
   * `timeoutMs` or when the manager closes meanwhile.
   */
  async connected(timeoutMs: number): Promise<void> {
    if (this.model !== undefined) return;
    if (this.closing) throw new ConnectionError('CONNECTION_LOST', 'the connection is closed');
    await new Promise<void>((resolve, reject) => {
      const done = (error?: Error) => {
        clearTimeout(timer);
        this.waiting.delete(done);
        if (error) reject(error);
        else resolve();
      };
      const timer = setTimeout(
        () =>
          done(
            new ConnectionError('CONNECTION_LOST', `not connected to RabbitMQ again within ${timeoutMs} ms`, {
              cause: this.lastError,
            }),
          ),
        timeoutMs,
      );
      this.waiting.add(done);
    });
  }

  /** First connection: keeps trying every URL until `connectTimeoutMs`, then fails with CONNECTION_FAILED. */
  async start(): Promise<void> {
    const deadline = Date.now() + this.options.connectTimeoutMs;
    for (;;) {
      try {
        await this.connectOnce();
        return;
      } catch (error) {
        this.lastError = error as Error;
        // A ready step's own failure (a topology conflict, say) will not heal by retrying.
        if (this.closing || error instanceof WarrenError) throw error;
        const delay = this.nextDelay();
        if (Date.now() + delay > deadline) {
          const tried = this.options.urls.map(redactUrl).join(', ');
          const reason = maskPasswords((error as Error).message, this.options.urls);
          throw new ConnectionError('CONNECTION_FAILED', `cannot reach RabbitMQ at ${tried}: ${reason}`, {
            urls: this.options.urls.map(redactUrl),
            cause: error,
          });
        }
        await sleep(delay);
      }
    }
  }

  async openChannel(): Promise<amqp.Channel> {
    const model = this.requireModel();
    return model.createChannel();
  }

  async openConfirmChannel(): Promise<amqp.ConfirmChannel> {
    const model = this.requireModel();
    return model.createConfirmChannel();
  }

  async close(): Promise<void> {
    this.closing = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    for (const done of [...this.waiting])
      done(new ConnectionError('CONNECTION_LOST', 'the connection is closed'));
    const model = this.model;
    this.model = undefined;
    if (model) await model.close().catch(() => undefined);
  }

  private requireModel(): amqp.ChannelModel {
    if (!this.model)
      throw new ConnectionError('CONNECTION_LOST', 'not connected to RabbitMQ', { cause: this.lastError });
    return this.model;
  }

  private nextDelay(): number {
    this.attempt += 1;
    const { initialDelayMs, maxDelayMs, jitter } = this.options.reconnect;
    return jitteredBackoff(this.attempt, initialDelayMs, maxDelayMs, jitter);
  }

  private async connectOnce(): Promise<void> {
    const url = this.options.urls[this.urlIndex % this.options.urls.length]!;
    this.urlIndex += 1;
    const model = await amqp.connect(withHeartbeat(url, this.options.heartbeatSeconds), {
      ...this.options.socket,
      ...(this.options.auth === 'external' ? { credentials: amqp.credentials.external() } : {}),
      clientProperties: { connection_name: this.options.connectionName },
      timeout: 5000,
    });
    this.username = this.options.auth === 'external' ? undefined : userOf(url);
    model.on('error', (error: Error) => {
      this.lastError = error;
      this.log.warn({ err: error }, 'connection error');
    });
    model.on('close', (error?: Error) => this.handleClose(model, error));
    model.on('blocked', (reason: string) => {
      this.blockedReason = reason;
      this.log.warn({ reason }, 'connection blocked by the broker');
      this.emit('blocked', { reason });
    });
    model.on('unblocked', () => {
      this.blockedReason = undefined;
      this.log.info('connection unblocked');
      this.emit('unblocked');
    });
    if (!corkMuxWrites(model.connection))
      this.log.debug('amqplib internals are not as expected: frames are written one socket write each');
    this.model = model;
    this.blockedReason = undefined;
    this.broker = readBrokerVersion((model.connection as { serverProperties?: unknown }).serverProperties);
    this.generation += 1;
    const generation = this.generation;
    try {
      const ready = await runReadySteps(
        this.steps ?? [],
        model,
        generation,
        () => this.model === model,
        (step, error) => this.log.warn({ err: error, step: step.name, generation }, 'a ready step failed'),
      );
      if (!ready) return;
    } catch (error) {
      if (this.model === model) {
        this.model = undefined;
        await model.close().catch(() => undefined);
      }
      throw error;
    }
    this.attempt = 0;
    const broker = this.broker ? `${this.broker.product} ${this.broker.version}` : 'unknown';
    const features = this.broker ? describeFeatures(this.broker.features) : 'unknown';
    this.log.info({ url: redactUrl(url), generation, broker, features }, 'connected');
    this.emit('connected', { url: redactUrl(url), generation });
    for (const done of [...this.waiting]) done();
  }

  private handleClose(model: amqp.ChannelModel, error: Error | undefined): void {
    if (this.model !== model) return;
    this.model = undefined;
    this.blockedReason = undefined;
    if (error) this.lastError = error;
    if (this.closing) return;
    this.log.warn({ err: error }, 'connection lost; reconnecting');
    this.emit('disconnected', { error });
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closing || this.reconnectTimer) return;
    const delay = this.nextDelay();
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.closing || this.model) return;
      this.connectOnce().catch((error: Error) => {
        this.lastError = error;
        this.log.warn({ err: error, attempt: this.attempt }, 'reconnect failed');
        this.scheduleReconnect();
      });
    }, delay);
  }
}

function withHeartbeat(url: string, seconds: number): string {
  if (/[?&]heartbeat=/.test(url)) return url;
  return `${url}${url.includes('?') ? '&' : '?'}heartbeat=${seconds}`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function userOf(url: string): string {
  const name = new URL(url).username;
  return name === '' ? 'guest' : decodeURIComponent(name);
}
