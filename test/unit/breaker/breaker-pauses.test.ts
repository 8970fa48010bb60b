import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BreakerPauses } from '../../../src/breaker';
import { createSilentLogger } from '../../../src/core';

function pausesWithLog() {
  const calls: string[] = [];
  const pauses = new BreakerPauses(
    {
      pause: async (queue) => void calls.push(`pause ${queue}`),
      resume: async (queue) => void calls.push(`resume ${queue}`),
    },
    createSilentLogger(),
  );
  return { pauses, calls };
}

describe('BreakerPauses with an operator', () => {
  it('runs a queue only when neither the operator, code nor an open breaker holds it', async () => {
    const { pauses, calls } = pausesWithLog();
    pauses.use('mailer', 'email');
    await pauses.hold('operator', 'email', true);
    pauses.stateChanged('mailer', 'open');
    await pauses.hold('operator', 'email', false);
    assert.deepEqual(pauses.holdersOf('email'), ['mailer']);
    pauses.stateChanged('mailer', 'halfOpen');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(pauses.holdersOf('email'), []);
    assert.equal(calls.at(-1), 'resume email');
    assert.deepEqual(calls.slice(0, 3), ['pause email', 'pause email', 'pause email']);
  });

  it('keeps the operator and code holds apart', async () => {
    const { pauses } = pausesWithLog();
    await pauses.pauseByUser('email');
    await pauses.hold('operator', 'email', true);
    await pauses.resumeByUser('email');
    assert.deepEqual(pauses.holdersOf('email'), ['operator']);
  });
});
