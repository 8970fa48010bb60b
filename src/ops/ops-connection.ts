import { ConnectionManager } from '../connection';
import { createSilentLogger } from '../core';
import type { JobControl } from '../job-control';
import { JobEventSubscriber } from '../job-events';
import type { RecordTrust } from '../records';
import { resolvePublisherOptions, type JobPublisher } from '../publisher';
import type { TopologyPlan } from '../topology';
import {
  removeNamespace,
  resolveWarrenConnectionOptions,
  wirePublishing,
  type NamespaceRemovalResult,
  type PublishingParts,
  type RemoveNamespaceOptions,
} from '../warren';
import type { OpsOptions } from './options';

/** How long a read that lost its connection waits for the next one before it fails with its own error, ms. */
const READ_RECONNECT_WAIT_MS = 10_000;

/** {@link OpsConnection.read}, as the operations that read through it are given it. */
export type ReadAgain = <T>(run: () => Promise<T>) => Promise<T>;

/** An opened ops connection: the connection and the same publishing parts a warren wires. */
export interface OpenedOps extends PublishingParts {
  readonly manager: ConnectionManager;
}

/**
 * The operations API's connection, opened on first use and shared by every operation: a connection
 * named `warren ops <pid>` (unless the options name it) with warren's own publishing wiring (confirm
 * channel, job control, job publisher), without instrumentation, awaited results or deduplication.
 */
export class OpsConnection {
  private opening: Promise<OpenedOps> | undefined;
  /** `ops.events`: live job events on this connection, subscribed again after a reconnect. */
  readonly events: JobEventSubscriber;

  constructor(
    private readonly plan: TopologyPlan,
    private readonly input: OpsOptions,
    private readonly trust: RecordTrust,
  ) {
    this.events = new JobEventSubscriber({
      plan,
      openChannel: async () => (await this.manager()).openConfirmChannel(),
      trust,
      log: createSilentLogger(),
    });
  }

  /** The connection, opened now if it is not yet. */
  open(): Promise<OpenedOps> {
    this.opening ??= this.connect();
    return this.opening;
  }

  async manager(): Promise<ConnectionManager> {
    return (await this.open()).manager;
  }

  async publisher(): Promise<JobPublisher> {
    return (await this.open()).publisher;
  }

  async jobControl(): Promise<JobControl> {
    return (await this.open()).jobControl;
  }

  /**
   * Runs a read, and once more on the next connection when the connection was lost under it. On RabbitMQ
   * 3.10 a stream that another connection is still creating kills the connection of a consumer reading it
   * (541, docs/guide/topology.md): a lookup in a fresh process while a worker's first index round declares
   * the history's index streams. For reads: run twice, a lookup's index round appends what the next round
   * reads past.
   */
  async read<T>(run: (opened: OpenedOps) => Promise<T>): Promise<T> {
    const opened = await this.open();
    const { manager } = opened;
    const generation = manager.generation;
    try {
      return await run(opened);
    } catch (error) {
      if (manager.isConnected && manager.generation === generation) throw error;
      await manager.connected(READ_RECONNECT_WAIT_MS).catch(() => {
        throw error;
      });
      return run(opened);
    }
  }

  /** Stops the job control, closes the confirm channel and the connection (if one was opened). */
  async close(): Promise<void> {
    const opened = await this.opening?.catch(() => undefined);
    await this.events.close();
    await opened?.jobControl.stop();
    await opened?.confirms.close().catch(() => undefined);
    await opened?.manager.close();
  }

  private async connect(): Promise<OpenedOps> {
    const log = createSilentLogger();
    const manager = new ConnectionManager(
      resolveWarrenConnectionOptions(this.input, { connectionName: `warren ops ${process.pid}` }),
      log,
    );
    const publishing = wirePublishing(
      this.plan,
      manager,
      resolvePublisherOptions(this.input.publisher),
      log,
      { trust: this.trust },
    );
    manager.useReadySteps([
      { name: 'confirm channel', run: (_model, generation) => publishing.confirms.open(generation) },
      { name: 'job events', run: () => this.events.reopen() },
    ]);
    await manager.start();
    return { manager, ...publishing };
  }
}

/**
 * `ops.removeNamespace`: asks over the ops connection, closes the ops client (`close`), then deletes over
 * a connection of its own named like the ops one.
 */
export function removeOpsNamespace(
  input: OpsOptions,
  plan: TopologyPlan,
  trust: RecordTrust,
  manager: ConnectionManager,
  close: () => Promise<void>,
  options: RemoveNamespaceOptions,
): Promise<NamespaceRemovalResult> {
  return removeNamespace(
    {
      plan,
      openChannel: () => manager.openChannel(),
      trust,
      closeSelf: close,
      connection: resolveWarrenConnectionOptions(input, { connectionName: `warren ops ${process.pid}` }),
      log: createSilentLogger(),
    },
    options,
  );
}
