import * as amqp from 'amqplib';
import { createWarren, type Warren, type WarrenOptions } from '../../src';
import type { TopologyPlan } from '../../src/ops';
import { deleteNamespaceEntities, planNamespaceRemoval } from '../../src/topology';
import { planOf } from '../../src/warren';
import { testNamespace, testWarrenOptions } from '../../src/testing';

import { BROKER_URL, MANAGEMENT_URL, rabbitmqctl } from './broker-under-test';

/**
 * The broker under test and its management HTTP API (`broker-under-test.ts` says where they come from;
 * the plugin is on: .ci/run enables it on 3.10, the 4.3 suite node starts with it, docker-compose.yml has
 * it). Tests that read the API log in as a user of their own (test/support/broker-user.ts), never as guest.
 */
export { BROKER_URL, MANAGEMENT_URL };

/** A random namespace per test: every entity name carries it. The public helper, so there is one. */
export { testNamespace };

/**
 * The test profile: warren/testing's `testWarrenOptions` (throwaway namespace, classic delay levels of
 * 16 × 100 ms ≈ 109 min, `x-expires` as a safety net should a test die before its cleanup, short shutdown
 * grace) on the test broker, with a connection name that `closeConnectionsNamed` can find.
 */
export function testProfile(namespace: string): WarrenOptions {
  return {
    ...testWarrenOptions({ url: BROKER_URL, namespace }),
    connection: { connectionName: `warren-test ${namespace}`, connectTimeoutMs: 20_000 },
  };
}

const open: Warren<object>[] = [];

/** createWarren with the test profile; `cleanup()` closes it and deletes its entities. */
// biome-ignore lint/complexity/noBannedTypes: {} is Warren's own default job map
export async function testWarren<T extends object = {}>(
  options: WarrenOptions & { namespace?: string },
): Promise<Warren<T>> {
  const namespace = options.namespace ?? testNamespace();
  const base = testProfile(namespace);
  const warren = await createWarren<T>({
    ...base,
    ...options,
    namespace,
    queues: { ...base.queues, ...options.queues },
    worker: { ...base.worker, ...options.worker },
    connection: { ...base.connection, ...options.connection },
  });
  open.push(warren as unknown as Warren<object>);
  return warren;
}

/** Closes every warren made by testWarren and deletes what it declared. Call from `after`/`afterEach`. */
export async function cleanup(): Promise<void> {
  const warrens = open.splice(0);
  for (const warren of warrens) {
    const plan = planOf(warren);
    await warren.close({ graceMs: 500 }).catch(() => undefined);
    await deletePlanEntities(plan);
  }
}

/**
 * Deletes what removing the plan's namespace deletes (`planNamespaceRemoval`: its queues, streams, markers,
 * side streams, every delay level and exchange) over a fresh connection, as `removeNamespace` does but
 * without asking who else runs there (the warren may be closed already). Deleting what is absent succeeds;
 * should one deletion fail (another connection's exclusive queue closes the channel), the rest go one
 * channel each, so a test's cleanup always gets as far as it can.
 */
export async function deletePlanEntities(plan: TopologyPlan): Promise<void> {
  const removal = planNamespaceRemoval(plan);
  const connection = await rawConnection();
  const openChannel = () => connection.createChannel();
  try {
    await deleteNamespaceEntities(removal, openChannel).catch(async () => {
      for (const name of removal.queues) await deleteAlone(openChannel, (ch) => ch.deleteQueue(name));
      for (const name of removal.exchanges) await deleteAlone(openChannel, (ch) => ch.deleteExchange(name));
    });
  } finally {
    await connection.close().catch(() => undefined);
  }
}

async function deleteAlone(
  openChannel: () => Promise<amqp.Channel>,
  deletion: (channel: amqp.Channel) => Promise<unknown>,
): Promise<void> {
  const channel = await openChannel();
  channel.on('error', () => undefined);
  await deletion(channel).catch(() => undefined);
  await channel.close().catch(() => undefined);
}

/** A plain amqplib connection for tests that play a foreign publisher or inspect queues. */
export async function rawConnection(): Promise<amqp.ChannelModel> {
  const connection = await amqp.connect(BROKER_URL);
  connection.on('error', () => undefined);
  return connection;
}

/** Which of `names` the broker has, queues or streams (a passive declare each, on a channel of its own). */
export async function presentQueues(names: readonly string[]): Promise<string[]> {
  const connection = await rawConnection();
  try {
    const found = await Promise.all(
      names.map(async (name) => {
        const channel = await connection.createChannel();
        channel.on('error', () => undefined);
        const exists = await channel.checkQueue(name).then(
          () => true,
          () => false,
        );
        if (exists) await channel.close().catch(() => undefined);
        return exists ? name : undefined;
      }),
    );
    return found.filter((n): n is string => n !== undefined);
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** Messages ready in a queue, read over a fresh connection. */
export async function messageCount(queueName: string): Promise<number> {
  const connection = await rawConnection();
  try {
    const channel = await connection.createChannel();
    return (await channel.checkQueue(queueName)).messageCount;
  } finally {
    await connection.close();
  }
}

/**
 * Force-closes only this test's connections on the broker under test, found by the name warren gives
 * them (`connection.connectionName`), with one `rabbitmqctl eval`: each rabbitmqctl call starts an Erlang VM
 * (a core for 1-2 s, over 4 s at load 10), and listing then closing took two or more. (The management API
 * lists a new connection only at its next statistics tick, up to 5 s later.) Returns how many it closed.
 */
export async function closeConnectionsNamed(name: string): Promise<number> {
  const literal = name.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
  const expression = [
    `Name = <<"${literal}">>,`,
    'Named = [P || P <- rabbit_networking:connections(),',
    '  case catch rabbit_networking:connection_info(P, [client_properties]) of',
    '    [{client_properties, Props}] ->',
    '      case lists:keyfind(<<"connection_name">>, 1, Props) of',
    '        {_, longstr, N} -> binary:match(N, Name) =/= nomatch;',
    '        _ -> false',
    '      end;',
    '    _ -> false',
    '  end],',
    '[rabbit_networking:close_connection(P, "warren test: forced close") || P <- Named],',
    'length(Named).',
  ].join(' ');
  return Number((await rabbitmqctl('eval', expression)).trim());
}
