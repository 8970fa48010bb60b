import {
  ConnectionManager,
  withThrowawayChannel,
  type OpenChannel,
  type ResolvedConnectionOptions,
} from '../connection';
import { checkInteger, NamespaceInUseError, type Logger, type NamespaceProcess } from '../core';
import { ControlClient, type ProcessStatus } from '../process-control';
import type { RecordTrust } from '../records';
import {
  deleteNamespaceEntities,
  pauseMarkerAssertion,
  planNamespaceRemoval,
  type TopologyPlan,
} from '../topology';

/** How a namespace is removed (`warren.removeNamespace`, `ops.removeNamespace`). */
export interface RemoveNamespaceOptions {
  /**
   * Ask the other processes of the namespace to stop (each closes its warren) and wait for them to go.
   * Default false: refuse with NAMESPACE_IN_USE while any of them answers on the control exchange.
   */
  readonly force?: boolean;
  /** How long `force` waits for the other processes to stop, ms. Default 30 000. */
  readonly timeoutMs?: number;
  /**
   * How long one round of asking the processes gathers answers, ms. Default 1500 (warren/ops: its own
   * `replyTimeoutMs`). A process slower than this to answer is not seen: give more on a loaded broker.
   */
  readonly replyTimeoutMs?: number;
}

/** What a namespace removal did. */
export interface NamespaceRemovalResult {
  readonly namespace: string;
  /** The other processes asked to stop (with `force`), which closed before anything was deleted. */
  readonly stopped: readonly NamespaceProcess[];
  /** Every queue name deleted, streams and markers included (a name the broker did not have is a no-op). */
  readonly queues: readonly string[];
  readonly exchanges: readonly string[];
}

export const REMOVE_NAMESPACE_DEFAULTS = Object.freeze({
  force: false,
  timeoutMs: 30_000,
  replyTimeoutMs: 1500,
});

/** What a removal needs from the warren or ops client that runs it. */
export interface NamespaceRemover {
  readonly plan: TopologyPlan;
  /** A channel on the caller's live connection: asks the other processes. */
  readonly openChannel: OpenChannel;
  readonly trust: RecordTrust;
  /** The caller's own process id, when it answers on the control exchange too (a Warren). */
  readonly selfId?: string;
  /** Closes every part of the caller that could declare anything again (a Warren closes). */
  readonly closeSelf: () => Promise<void>;
  /** The deletion runs over a fresh connection with these options and no reconnect steps. */
  readonly connection: ResolvedConnectionOptions;
  readonly log: Logger;
}

/**
 * Removes a namespace: asks who else runs in it (refusing, or with `force` marking the removal on the
 * broker and asking them to stop, then waiting until none answers), closes the caller, then deletes every
 * entity planNamespaceRemoval names over a connection of its own, which re-declares nothing when it
 * reconnects. Deleting what is absent succeeds, so a removal that failed half-way can be run again.
 */
export async function removeNamespace(
  remover: NamespaceRemover,
  options: RemoveNamespaceOptions = {},
): Promise<NamespaceRemovalResult> {
  const force = options.force ?? REMOVE_NAMESPACE_DEFAULTS.force;
  const timeoutMs = checkInteger(
    'removeNamespace.timeoutMs',
    options.timeoutMs ?? REMOVE_NAMESPACE_DEFAULTS.timeoutMs,
    1,
  );
  const replyTimeoutMs = checkInteger(
    'removeNamespace.replyTimeoutMs',
    options.replyTimeoutMs ?? REMOVE_NAMESPACE_DEFAULTS.replyTimeoutMs,
    1,
    600_000,
  );
  const { plan, selfId } = remover;
  const namespace = plan.naming.namespace;
  const client = new ControlClient(plan.naming, remover.openChannel, remover.trust);
  const others = (replies: readonly { process: ProcessStatus }[]) =>
    replies.map((r) => r.process).filter((p) => p.id !== selfId);
  const running = async () => others(await client.ask({ command: 'status' }, replyTimeoutMs));

  const found = await running();
  if (found.length > 0 && !force) throw new NamespaceInUseError(namespace, found.map(label), false);
  if (found.length > 0) await stopOthers(remover, client, found, { timeoutMs, replyTimeoutMs }, running);
  await remover.closeSelf();

  const removal = planNamespaceRemoval(plan);
  const manager = new ConnectionManager(
    { ...remover.connection, connectionName: `${remover.connection.connectionName} (removing)` },
    remover.log,
  );
  await manager.start();
  try {
    await deleteNamespaceEntities(removal, () => manager.openChannel());
  } finally {
    await manager.close();
  }
  remover.log.info(
    { namespace, queues: removal.queues.length, exchanges: removal.exchanges.length },
    'namespace removed',
  );
  return { namespace, stopped: found.map(label), queues: removal.queues, exchanges: removal.exchanges };
}

/**
 * Marks the removal on the broker (a queue that expires by itself should the remover die), asks every
 * process to stop and asks again until none answers; past the deadline the marker goes and the removal
 * fails with the processes still answering.
 */
async function stopOthers(
  remover: NamespaceRemover,
  client: ControlClient,
  found: readonly ProcessStatus[],
  { timeoutMs, replyTimeoutMs }: { timeoutMs: number; replyTimeoutMs: number },
  running: () => Promise<ProcessStatus[]>,
): Promise<void> {
  const marker = remover.plan.naming.removalMarker();
  const deadline = Date.now() + timeoutMs;
  await withThrowawayChannel(remover.openChannel, (ch) =>
    ch.assertQueue(marker, pauseMarkerAssertion(timeoutMs + 60_000)),
  );
  remover.log.warn(
    { namespace: remover.plan.naming.namespace, processes: found.map(label) },
    'asking the processes of the namespace to stop for its removal',
  );
  let still: readonly ProcessStatus[] = found;
  for (;;) {
    await client.ask({ command: 'sync-remove' }, replyTimeoutMs, still.length);
    still = await running();
    if (still.length === 0) return;
    if (Date.now() >= deadline) {
      await withThrowawayChannel(remover.openChannel, (ch) => ch.deleteQueue(marker)).catch(() => undefined);
      throw new NamespaceInUseError(remover.plan.naming.namespace, still.map(label), true);
    }
  }
}

function label(p: ProcessStatus): NamespaceProcess {
  return { id: p.id, host: p.host, pid: p.pid };
}
