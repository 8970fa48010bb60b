import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkSlipEnvelope, type SlipEnvelope } from '../../../src/workflow';

const known = new Set(['a.one', 'a.two', 'a.three']);
const itinerary = [...known].map((activity) => ({ activity, args: {} }));
const entry = (step: number) => ({
  activity: itinerary[step].activity,
  step,
  args: {},
  result: null,
  completedAt: 1,
});
const valid: SlipEnvelope = {
  slip: 1,
  slipId: 's1',
  itinerary,
  cursor: 2,
  mode: 'forward',
  log: [entry(0), entry(1)],
  variables: {},
};
const messages = (value: unknown, activity = 'a.three') =>
  checkSlipEnvelope(value, activity, known).map((issue) => issue.message);

describe('the slip envelope check', () => {
  it('accepts a consistent forward step', () => {
    assert.deepEqual(messages(valid), []);
  });

  it('refuses a forward step whose log misses an earlier step', () => {
    assert.match(messages({ ...valid, log: [entry(0)] })[0], /needs 2 log entries/);
  });

  it('refuses a log entry out of itinerary order', () => {
    assert.match(messages({ ...valid, log: [entry(1), entry(0)] })[0], /must record step 0/);
  });

  it('refuses a message whose cursor names another activity than its job', () => {
    assert.match(messages(valid, 'a.two')[0], /not this job's a.two/);
  });

  it('refuses an activity this process did not declare', () => {
    const foreign = { ...valid, itinerary: [...itinerary.slice(0, 2), { activity: 'x.evil', args: {} }] };
    assert.match(messages(foreign)[0], /must name an activity/);
  });

  it('refuses a compensation that does not start below the fault', () => {
    const fault = { step: 2, activity: 'a.three', error: 'e' };
    const undo = { ...valid, mode: 'compensate', cursor: 1, fault };
    assert.deepEqual(messages(undo, 'a.two'), []);
    assert.match(
      messages({ ...undo, fault: { ...fault, step: 1 } }, 'a.two')[0],
      /step after the last logged/,
    );
    assert.match(messages({ ...undo, fault: undefined }, 'a.two')[0], /step after the last logged/);
    assert.match(messages({ ...undo, cursor: 2 })[0], /must be a logged step/);
  });

  it('refuses a forward step carrying a fault, and a wrong version', () => {
    assert.match(messages({ ...valid, fault: { step: 2, activity: 'a.three', error: 'e' } })[0], /no fault/);
    assert.match(messages({ ...valid, slip: 2 })[0], /envelope version/);
  });

  it('checks a parallel step: the branch names the job, the joined log holds every branch', () => {
    const parallel = { activity: '*parallel', args: null, branches: [itinerary[1], itinerary[2]] };
    const steps = [itinerary[0], parallel, itinerary[0]];
    const fork = { ...valid, itinerary: steps, cursor: 1, log: [entry(0)], branch: 1 };
    assert.deepEqual(messages(fork), []);
    assert.match(messages({ ...fork, branch: undefined })[0], /parallel step only/);
    assert.match(messages({ ...fork, branch: 0 })[0], /not this job's a.three/);
    const joined = { activity: '*parallel', step: 1, args: null, result: [], completedAt: 1 };
    const after = { ...valid, itinerary: steps, cursor: 2, log: [entry(0), joined] };
    assert.match(messages(after, 'a.one')[0], /one log entry per branch/);
    const branchEntries = [
      { ...entry(1), step: 1 },
      { ...entry(2), step: 1 },
    ];
    assert.deepEqual(
      messages({ ...after, log: [entry(0), { ...joined, result: branchEntries }] }, 'a.one'),
      [],
    );
  });

  it('refuses an undo of a faulted parallel branch without that branch log', () => {
    const parallel = { activity: '*parallel', args: null, branches: [itinerary[1], itinerary[2]] };
    const steps = [itinerary[0], parallel];
    const fault = { step: 1, activity: '*parallel', error: 'e' };
    const undo = {
      ...valid,
      itinerary: steps,
      mode: 'compensate',
      cursor: 1,
      log: [entry(0)],
      branch: 0,
      fault,
    };
    assert.match(messages(undo, 'a.two')[0], /log of this branch/);
    const branchLog = { ...entry(1), step: 1 };
    assert.deepEqual(messages({ ...undo, branchLog }, 'a.two'), []);
  });
});
