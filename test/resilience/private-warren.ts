/**
 * Warren instances on the private fault-test nodes (never the shared broker on 5672): the test
 * profile of test/support/test-broker.ts with `url` pointing at the private node(s). The nodes are
 * thrown away after each file, so closing the instances is all the cleanup they need.
 */
import { after, before } from 'node:test';
import { createWarren, type Warren, type WarrenOptions } from '../../src';
import {
  cleanSingleNode,
  privateNodesShared,
  reuseSingleNode,
  startSingleNode,
  type PrivateNode,
} from '../support/private-broker';
import { testProfile } from '../support/test-broker';

const open: Warren<object>[] = [];

/**
 * `createWarren` with the test profile, connected to `url` (one node, or a cluster's URL list).
 * Options given here replace the profile's, level by level.
 */
// biome-ignore lint/complexity/noBannedTypes: {} is Warren's own default job map
export async function privateWarren<T extends object = {}>(
  url: string | readonly string[],
  options: WarrenOptions & { namespace: string },
): Promise<Warren<T>> {
  const base = testProfile(options.namespace);
  const warren = await createWarren<T>({
    ...base,
    ...options,
    url,
    queues: { ...base.queues, ...options.queues },
    worker: { ...base.worker, ...options.worker },
    connection: { ...base.connection, ...options.connection },
  });
  open.push(warren as unknown as Warren<object>);
  return warren;
}

/**
 * Closes every instance made by {@link privateWarren}. Bounded: an instance whose broker is gone
 * cannot hold up the `after` hook.
 */
export async function closePrivateWarrens(): Promise<void> {
  const warrens = open.splice(0);
  await Promise.all(
    warrens.map((warren) =>
      Promise.race([
        warren.close({ graceMs: 500 }).catch(() => undefined),
        new Promise((resolve) => setTimeout(resolve, 10_000).unref()),
      ]),
    ),
  );
}

/**
 * Registers the suite's hooks for the private single node: a fresh node before (a run killed before
 * its after hook may have left one up, alarm and all), closed warrens and a cleaned node after. In the
 * fault tier (`privateNodesShared`) the node an earlier file left up is used again if it takes
 * connections, and the tier cleans it at its end.
 */
export function useSingleNode(): PrivateNode {
  let node: PrivateNode | undefined;
  before(async () => {
    if (privateNodesShared()) node = await reuseSingleNode();
    else {
      await cleanSingleNode();
      node = await startSingleNode();
    }
  });
  after(async () => {
    await closePrivateWarrens();
    if (!privateNodesShared()) await cleanSingleNode();
  });
  const current = (): PrivateNode => {
    if (!node) throw new Error('the private node is not started yet');
    return node;
  };
  return {
    get name() {
      return current().name;
    },
    get port() {
      return current().port;
    },
    get url() {
      return current().url;
    },
  };
}
