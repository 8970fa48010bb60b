import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createRecordingLogger } from '../../src/testing';
import { FaultWork, faultTopology } from '../fixtures/fault-jobs';
import {
  cleanCluster,
  clusterNode,
  killClusterNode,
  quorumLeader,
  rabbitCtl,
  runningClusterNodes,
  startCluster,
  startClusterNode,
  type ClusterNodeIndex,
} from '../support/private-broker';
import { testNamespace } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { FaultLedger } from './fault-ledger';
import { closePrivateWarrens, privateWarren } from './private-warren';
import { PublishLoad } from './publish-load';

/**
 * A hang fails the test (and the after hook still cleans up) instead of stalling the suite. A scenario
 * takes 25-60 s alone on 3.10 and longer on 4.3, whose killed node takes longer to rejoin; with the other
 * server's fault suite beside it (as CI runs them) 4.3's took over 60 s. Four tests and the cluster start
 * stay within the fault suite's 600 s per file.
 */
const TEST_TIMEOUT_MS = 120_000;

/** On a cluster everything warren declares is replicated: quorum job queues and quorum delay levels. */
const CLUSTER_DELAY = { queueType: 'quorum', levels: 8, unitMs: 100 } as const;

/**
 * This URL list puts w2 first, so the client is not on w1, where the declaring client put the queue leader.
 */
const AWAY_FROM_LEADER = [clusterNode(2).url, clusterNode(3).url, clusterNode(1).url];
/** This one puts the client on w1, with the queue leader. */
const WITH_LEADER = [clusterNode(1).url, clusterNode(2).url, clusterNode(3).url];

describe('losing a node of a 3-node cluster (quorum queues)', () => {
  before(async () => {
    // A run killed before its after hook (a file timeout) may have left nodes up: start from scratch.
    await cleanCluster();
    await startCluster();
  });

  after(async () => {
    await closePrivateWarrens();
    await cleanCluster();
  });

  it('fails over through the URL list when the node the client is connected to dies, loses no confirmed job, and the node rejoins', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const run = await runScenario(
      '4a. cluster: SIGKILL the node the client is connected to',
      2,
      AWAY_FROM_LEADER,
    );
    assert.ok(
      run.reconnectedTo.includes(`:${clusterNode(3).port}`),
      `reconnected to the next URL in the list (w3), got ${run.reconnectedTo}`,
    );
    assert.equal(run.leaderAfter, run.leaderBefore, 'the queue leader (on w1) did not move');
  });

  it("keeps publishing and consuming through the election when the queue leader's node dies, losing no confirmed job", {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const run = await runScenario("4b. cluster: SIGKILL the queue leader's node", 1, AWAY_FROM_LEADER);
    assert.equal(run.reconnectedTo, '', 'the client, on w2, kept its connection');
    assert.notEqual(run.leaderAfter, run.leaderBefore, 'a new leader was elected');
  });

  it('reconnects to the next node and gets its publishes through the leader election when the node dies that holds both the client and the queue leader', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const run = await runScenario(
      '4c. cluster: SIGKILL the node holding both the client and the queue leader',
      1,
      WITH_LEADER,
    );
    assert.ok(
      run.reconnectedTo.includes(`:${clusterNode(2).port}`),
      `reconnected to the next URL in the list (w2), got ${run.reconnectedTo}`,
    );
    assert.notEqual(run.leaderAfter, run.leaderBefore, 'a new leader was elected');
  });

  it('fails publishes at their deadline while the queue has no majority, and resumes by itself once a majority is back', {
    timeout: TEST_TIMEOUT_MS,
  }, async () => {
    const namespace = testNamespace('cluster');
    const ledger = new FaultLedger(
      '4d. cluster: majority lost (w3, then w1 with client and leader SIGKILLed), then w3 back',
    );
    await privateWarren(clusterNode(1).url, {
      namespace,
      topology: faultTopology,
      jobs: [FaultWork],
      delay: CLUSTER_DELAY,
    });
    const queue = `${namespace}.work`;
    assert.match(
      await waitFor(() => quorumLeader('w1', queue), { timeoutMs: 30_000, what: 'the queue leader' }),
      new RegExp(`^${clusterNode(1).name}$`),
    );
    const { logger, entries } = createRecordingLogger('debug');
    const publisher = await privateWarren(WITH_LEADER, {
      namespace,
      topology: faultTopology,
      jobs: [FaultWork],
      delay: CLUSTER_DELAY,
      logger,
      publisher: { timeoutMs: 3_000 },
    });
    const worker = await privateWarren(WITH_LEADER, {
      namespace,
      topology: faultTopology,
      delay: CLUSTER_DELAY,
      handlers: [new FaultWork((event) => event.event === 'done' && ledger.ran(event.id))],
    });
    await worker.start();
    const load = new PublishLoad(
      ledger,
      (id) => publisher.publish(FaultWork, { id, ms: 10 }, { jobId: id }),
      { lanes: 10, pauseMs: 20, prefix: 'majority' },
    );
    load.start();
    await waitFor(() => ledger.confirmed >= 300, {
      timeoutMs: 30_000,
      what: '300 confirmed publishes before the kills',
    });

    // w3 first: the queue keeps its majority (w1, w2) until w1 dies, and the clients reconnect to w2
    // while the queue has no leader. Their new channels are the ones RabbitMQ 3.10 keeps nacking.
    await killClusterNode(3);
    await killClusterNode(1);
    // Without a majority the queue takes nothing: publishers fail at their deadline, with a typed error.
    await waitFor(() => Object.values(ledger.failedByCode).reduce((a, b) => a + b, 0) >= 10, {
      timeoutMs: 30_000,
      what: 'publishes failing at their deadline',
    });

    await startClusterNode(3);
    const leaderAfter = await waitFor(() => quorumLeader('w2', queue), {
      timeoutMs: 60_000,
      intervalMs: 250,
      what: 'a leader once w3 is back',
    });
    const majorityAt = Date.now();
    await waitFor(
      () =>
        ledger.firstConfirmAfter(majorityAt) !== undefined && ledger.firstRunAfter(majorityAt) !== undefined,
      {
        timeoutMs: 30_000,
        what: 'a confirmed publish and a completed job with the majority back (w1 still down)',
      },
    );
    const recoveredAt = Math.max(ledger.firstConfirmAfter(majorityAt)!, ledger.firstRunAfter(majorityAt)!);
    const confirmedAtMajority = ledger.confirmed;
    await waitFor(() => ledger.confirmed >= confirmedAtMajority + 300, {
      timeoutMs: 30_000,
      what: '300 more confirmed publishes',
    });
    await startClusterNode(1);
    await waitFor(async () => (await runningClusterNodes(2)).length === 3, {
      timeoutMs: 60_000,
      intervalMs: 500,
      what: 'w1 to rejoin',
    });
    await load.stop();
    await waitFor(() => ledger.allConfirmedRan(), { timeoutMs: 60_000, what: 'every confirmed job to run' });

    const row = ledger.report(
      recoveredAt - majorityAt,
      'new leader elected (majority back) until the first confirmed publish and completed job',
      {
        nacksRetried: entries.filter((entry) => entry.level === 'debug' && typeof entry.nacks === 'number')
          .length,
        channelsRenewed: entries.filter((entry) => entry.level === 'warn' && typeof entry.nacks === 'number')
          .length,
        leaderAfter,
      },
    );
    assert.equal(row.lost, 0);
    assert.deepEqual(ledger.strangers(), []);
    const codes = Object.keys(ledger.failedByCode);
    assert.ok(
      codes.every((code) => code === 'PUBLISH_NACKED' || code === 'PUBLISH_TIMEOUT'),
      `publishes failed only with typed errors at their deadline (${codes.join(', ')})`,
    );
  });
});

interface ScenarioRun {
  readonly reconnectedTo: string;
  readonly leaderBefore: string;
  readonly leaderAfter: string;
  /** Publishes the broker nacked and the publisher sent again. */
  readonly nacksRetried: number;
}

/**
 * Publishes and consumes through `clientUrls` (the queue leader is on w1), SIGKILLs node `victim`
 * under load, checks both keep going, brings the node back and checks it rejoined.
 */
async function runScenario(
  scenario: string,
  victim: ClusterNodeIndex,
  clientUrls: readonly string[],
): Promise<ScenarioRun> {
  const namespace = testNamespace('cluster');
  const ledger = new FaultLedger(scenario);
  // Declared through w1: quorum queues put their leader on the declaring client's node.
  await privateWarren(clusterNode(1).url, {
    namespace,
    topology: faultTopology,
    jobs: [FaultWork],
    delay: CLUSTER_DELAY,
  });
  const queue = `${namespace}.work`;
  const leaderBefore = await waitFor(() => quorumLeader('w1', queue), {
    timeoutMs: 30_000,
    what: 'the queue leader',
  });
  assert.match(leaderBefore, new RegExp(`^${clusterNode(1).name}$`));

  // The publisher logs each nacked publish it retries (at debug level, with the nack count).
  const { logger, entries } = createRecordingLogger('debug');
  const publisher = await privateWarren(clientUrls, {
    namespace,
    topology: faultTopology,
    jobs: [FaultWork],
    delay: CLUSTER_DELAY,
    logger,
  });
  const worker = await privateWarren(clientUrls, {
    namespace,
    topology: faultTopology,
    delay: CLUSTER_DELAY,
    handlers: [new FaultWork((event) => event.event === 'done' && ledger.ran(event.id))],
  });
  await worker.start();
  let reconnectedTo = '';
  publisher.on('connected', ({ url }) => (reconnectedTo = url));
  const load = new PublishLoad(ledger, (id) => publisher.publish(FaultWork, { id, ms: 10 }, { jobId: id }), {
    lanes: 10,
    pauseMs: 20,
    prefix: `lose-w${victim}`,
  });
  load.start();
  await waitFor(() => ledger.confirmed >= 300, {
    timeoutMs: 30_000,
    what: '300 confirmed publishes before the kill',
  });

  await killClusterNode(victim);
  const killedAt = Date.now();
  await waitFor(
    () => ledger.firstConfirmAfter(killedAt) !== undefined && ledger.firstRunAfter(killedAt) !== undefined,
    {
      timeoutMs: 60_000,
      what: 'a confirmed publish and a completed job after the kill',
    },
  );
  const consumerResumedMs = ledger.firstRunAfter(killedAt)! - killedAt;
  const confirmedAfterKill = ledger.confirmed;
  await waitFor(() => ledger.confirmed >= confirmedAfterKill + 300, {
    timeoutMs: 30_000,
    what: '300 more confirmed publishes with the node down',
  });
  const publishStallMs = ledger.longestConfirmGap(killedAt, Date.now());
  const nacksRetried = entries.filter(
    (entry) => entry.level === 'debug' && typeof entry.nacks === 'number',
  ).length;
  const survivor = victim === 1 ? 'w2' : 'w1';
  const leaderAfter = await waitFor(() => quorumLeader(survivor, queue), {
    timeoutMs: 30_000,
    what: 'the queue leader after the kill',
  });

  const restartedAt = Date.now();
  await startClusterNode(victim);
  const members = await waitFor(
    async () => {
      const running = await runningClusterNodes(victim === 1 ? 2 : 1);
      return running.length === 3 ? running : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 500, what: `w${victim} to rejoin the cluster` },
  );
  await waitFor(() => queueMemberOnline(victim, queue), {
    timeoutMs: 60_000,
    intervalMs: 500,
    what: `w${victim} to be an online member of the queue again`,
  });
  const rejoinMs = Date.now() - restartedAt;
  const confirmedAfterRejoin = ledger.confirmed;
  await waitFor(() => ledger.confirmed >= confirmedAfterRejoin + 100, {
    timeoutMs: 30_000,
    what: '100 more confirmed publishes after the rejoin',
  });
  await load.stop();
  await waitFor(() => ledger.allConfirmedRan(), { timeoutMs: 60_000, what: 'every confirmed job to run' });

  const row = ledger.report(publishStallMs, 'longest gap between two confirms after the SIGKILL', {
    nacksRetried,
    consumerResumedMs,
    leaderBefore,
    leaderAfter,
    reconnectedTo: reconnectedTo || '(kept its connection)',
    rejoinMs,
  });
  assert.equal(members.length, 3);
  assert.equal(row.lost, 0);
  assert.deepEqual(ledger.strangers(), []);
  assert.deepEqual(
    ledger.failedByCode,
    {},
    'every publish confirmed: nacks during the election were retried',
  );
  return { reconnectedTo, leaderBefore, leaderAfter, nacksRetried };
}

/** Whether cluster node `i` is an online member of quorum queue `queue` (asked through another node). */
async function queueMemberOnline(i: ClusterNodeIndex, queue: string): Promise<boolean> {
  const via = i === 1 ? 'w2' : 'w1';
  const out = await rabbitCtl(via, 'list_queues', '--quiet', '--no-table-headers', 'name', 'online').catch(
    () => '',
  );
  const line = out.split('\n').find((l) => l.split('\t')[0] === queue);
  return line?.includes(clusterNode(i).name) === true;
}
