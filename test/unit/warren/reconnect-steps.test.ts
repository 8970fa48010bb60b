import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type * as amqp from 'amqplib';
import { runReadySteps } from '../../../src/connection';
import { RECONNECT_STEPS, reconnectSteps, type ReconnectParts } from '../../../src/warren/reconnect-steps';

function findRoot(): string {
  let dir = __dirname;
  while (!statSync(join(dir, 'package.json'), { throwIfNoEntry: false })) dir = dirname(dir);
  return dir;
}

/** Parts whose one call each records the step that made it (and the generation it was given). */
function recordingParts(calls: string[], failing?: string): ReconnectParts {
  const call = (name: string) => async (generation?: number) => {
    calls.push(generation === undefined ? name : `${name}@${generation}`);
    if (name === failing) throw new Error(`${name} broke`);
  };
  return {
    reapplyTopology: call('topology'),
    history: { open: call('history stream') },
    aggregates: { open: call('aggregates streams') },
    controlListener: { open: call('control listener') },
    jobEvents: { open: call('job events') },
    confirms: { open: call('confirm channel') },
    worker: { open: call('consumers') },
    scheduling: { open: call('cron') },
    deadLetterLog: { follow: call('dead-letter log') },
  };
}

const model = {} as amqp.ChannelModel;

describe('the reconnect steps of a warren', () => {
  it('are in the order the connections page lists them', () => {
    const page = readFileSync(join(findRoot(), 'docs', 'guide', 'connections.md'), 'utf8');
    const list = page.slice(
      page.indexOf('<!-- reconnect-steps:begin -->'),
      page.indexOf('<!-- reconnect-steps:end -->'),
    );
    const documented = [...list.matchAll(/^\d+\. \*\*([^*]+)\*\*/gm)].map((m) => m[1]);
    assert.deepEqual(documented, [...RECONNECT_STEPS]);
    assert.deepEqual(
      reconnectSteps(recordingParts([])).map((step) => step.name),
      [...RECONNECT_STEPS],
    );
  });

  it('runs each part once, in that order, on the generation of the new connection', async () => {
    const calls: string[] = [];
    const ready = await runReadySteps(
      reconnectSteps(recordingParts(calls)),
      model,
      7,
      () => true,
      () => {},
    );
    assert.equal(ready, true);
    assert.deepEqual(calls, [
      'topology',
      'history stream',
      'aggregates streams',
      'control listener@7',
      'job events',
      'confirm channel@7',
      'consumers@7',
      'cron@7',
      'dead-letter log',
    ]);
  });

  it('skips the history and the dead-letter log when they are off', async () => {
    const calls: string[] = [];
    const parts = {
      ...recordingParts(calls),
      history: undefined,
      aggregates: undefined,
      deadLetterLog: undefined,
    };
    await runReadySteps(
      reconnectSteps(parts),
      model,
      1,
      () => true,
      () => {},
    );
    assert.deepEqual(calls, [
      'topology',
      'control listener@1',
      'job events',
      'confirm channel@1',
      'consumers@1',
      'cron@1',
    ]);
  });

  it('reports a failing step by name and rejects with its error, running no later step', async () => {
    const calls: string[] = [];
    const failed: { name: string; error: unknown }[] = [];
    await assert.rejects(
      runReadySteps(
        reconnectSteps(recordingParts(calls, 'consumers')),
        model,
        2,
        () => true,
        (step, error) => failed.push({ name: step.name, error }),
      ),
      /consumers broke/,
    );
    assert.deepEqual(
      failed.map((f) => f.name),
      ['consumers'],
    );
    assert.equal(calls.at(-1), 'consumers@2', 'cron and the dead-letter log did not run');
  });

  it('stops, running nothing more, once the connection was replaced', async () => {
    const calls: string[] = [];
    let current = true;
    const parts = recordingParts(calls);
    const steps = reconnectSteps({
      ...parts,
      controlListener: {
        open: async (generation) => {
          await parts.controlListener.open(generation);
          current = false; // the connection closed while this step ran
        },
      },
    });
    const ready = await runReadySteps(
      steps,
      model,
      3,
      () => current,
      () => {},
    );
    assert.equal(ready, false);
    assert.deepEqual(calls, ['topology', 'history stream', 'aggregates streams', 'control listener@3']);
  });
});
