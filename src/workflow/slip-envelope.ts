import type { SlipLogEntry, StandardSchemaIssue, StandardSchemaV1 } from '../core';

/**
 * The routing-slip envelope: part of warren's wire format (docs/guide/workflows.md).
 *
 * A slip step travels as an ordinary warren job named `<activity>.slip` whose payload (the JSON body,
 * never headers) is this envelope:
 *
 * ```
 * { "slip": 1,                       // envelope version
 *   "slipId": "…",                   // 1..200 characters, fixed for the slip's life
 *   "itinerary": [{ "activity": "stock.reserve", "args": {…} }, …],   // 1..SLIP_MAX_STEPS steps
 *   "cursor": 0,                     // the step this message runs (forward) or undoes (compensate)
 *   "mode": "forward" | "compensate",
 *   "log": [{ "activity": "stock.reserve", "step": 0, "result": …, "completedAt": 1700000000000 }, …],
 *   "variables": { … },              // merged under every step's args
 *   "fault": { "step": 2, "activity": "order.ship", "error": "…" },  // compensate mode only
 *   "branch": 1,                     // parallel steps only: the branch this message runs or undoes
 *   "branchLog": { … },              // undoing a completed branch of the faulted parallel step
 *   "proof": "1.…"                   // with a signing key: the seal of the envelope without it
 * }
 * ```
 *
 * A parallel step is `{ "activity": "*parallel", "args": null, "branches": [{ "activity", "args" }, …] }`
 * (2..SLIP_MAX_BRANCHES branches); its log entry's `result` is the array of its branches' log entries.
 *
 * Bounds: at most SLIP_MAX_STEPS steps; a result over SLIP_MAX_RESULT_BYTES is logged as
 * `{ "dropped": "too-large" }`; the whole encoded envelope is at most SLIP_MAX_BYTES.
 *
 * Trust: a slip message is validated like any payload. Every activity named must be one this process
 * declared (`activities`), the message's job must be the activity at the cursor, a forward step must
 * carry one log entry for each earlier step (in itinerary order), and a compensation walks the log down
 * from the step before the fault. A hand-made or truncated message therefore cannot run a step whose
 * predecessors did not run, nor start compensating somewhere else. What is trusted is whoever may
 * publish to the namespace's exchange: without a signing key the envelope is not signed, so a complete
 * and consistent forgery is indistinguishable from a real slip; with one, `proof` (see SlipSeal) must
 * verify.
 */
export interface SlipEnvelope {
  readonly slip: 1;
  readonly slipId: string;
  readonly itinerary: readonly SlipStep[];
  readonly cursor: number;
  readonly mode: 'forward' | 'compensate';
  readonly log: readonly SlipLogEntry[];
  readonly variables: Readonly<Record<string, unknown>>;
  readonly fault?: SlipFault;
  readonly branch?: number;
  readonly branchLog?: SlipLogEntry;
  /**
   * With a signing key: the proof (`1.<key id>.<writer>.<seq>.<mac>`, docs/reference/trust.md) of
   * the envelope's JSON without this field, in the namespace, role `slip`. Without a key: absent.
   */
  readonly proof?: string;
}

/**
 * Seals and checks slip envelopes. With a signing key every envelope warren publishes is sealed and a
 * worker refuses (as `invalid-payload`) one that is not: a forged compensate-mode slip cannot undo
 * someone else's step. Without a key `seal` returns the envelope and `isSealed` is always true.
 */
export interface SlipSeal {
  seal(envelope: SlipEnvelope): SlipEnvelope;
  isSealed(envelope: SlipEnvelope): boolean;
}

export const NO_SLIP_SEAL: SlipSeal = Object.freeze({
  seal: (envelope: SlipEnvelope) => envelope,
  isSealed: () => true,
});

/**
 * One step of an itinerary: the activity's job name and its arguments (its payload); or a parallel
 * step (`activity` PARALLEL_STEP) whose `branches` run at once.
 */
export interface SlipStep {
  readonly activity: string;
  readonly args: unknown;
  readonly branches?: readonly SlipStep[];
}

/** The `activity` of a parallel step: not a valid job name, so no activity can be called that. */
export const PARALLEL_STEP = '*parallel';
export const SLIP_MAX_BRANCHES = 20;

/** A slip log entry's type lives in core: the function form of a job (decorators) names it too. */
export type { SlipLogEntry };

/** The step whose attempts ran out (or that threw an UnrecoverableError). */
export interface SlipFault {
  readonly step: number;
  readonly activity: string;
  readonly error: string;
}

export const SLIP_MAX_STEPS = 50;
export const SLIP_MAX_RESULT_BYTES = 16 * 1024;
export const SLIP_MAX_BYTES = 1024 * 1024;
const MAX_SLIP_ID = 200;

/** The job name a step of `activity` travels under. */
export function slipJobName(activity: string): string {
  return `${activity}.slip`;
}

/** The stable id of a step's message (and the activity's idempotency key). */
export function slipStepId(slipId: string, step: number, mode: SlipEnvelope['mode']): string {
  return mode === 'forward' ? `${slipId}.${step}` : `${slipId}.${step}.undo`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isIndex(value: unknown, below: number): value is number {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) < below;
}

/** Everything wrong with `value` as a slip message of job `<activity>.slip`; empty when it is valid. */
export function checkSlipEnvelope(
  value: unknown,
  activity: string,
  known: ReadonlySet<string>,
): StandardSchemaIssue[] {
  const issue = (message: string, ...path: PropertyKey[]) => [{ message, path }];
  if (!isRecord(value)) return issue('a slip envelope must be an object');
  if (value.slip !== 1) return issue('must be 1 (the envelope version)', 'slip');
  const { slipId, itinerary, cursor, mode, log, variables, fault } = value;
  if (typeof slipId !== 'string' || slipId.length === 0 || slipId.length > MAX_SLIP_ID)
    return issue(`must be a string of 1 to ${MAX_SLIP_ID} characters`, 'slipId');
  if (!Array.isArray(itinerary) || itinerary.length === 0 || itinerary.length > SLIP_MAX_STEPS)
    return issue(`must be an array of 1 to ${SLIP_MAX_STEPS} steps`, 'itinerary');
  for (const [i, step] of itinerary.entries()) {
    const problem = checkStep(step, known);
    if (problem) return issue(problem, 'itinerary', i);
  }
  if (!isRecord(variables)) return issue('must be an object', 'variables');
  if (mode !== 'forward' && mode !== 'compensate') return issue("must be 'forward' or 'compensate'", 'mode');
  if (!isIndex(cursor, itinerary.length)) return issue('must be a step of the itinerary', 'cursor');
  const here = unitAt(itinerary[cursor], value.branch);
  if (here === undefined)
    return issue('must be given for a parallel step only, as one of its branches', 'branch');
  if (here.activity !== activity)
    return issue(`names step ${cursor} as ${here.activity}, not this job's ${activity}`, 'cursor');
  if (!Array.isArray(log) || log.length > itinerary.length) return issue('must be an array', 'log');
  for (const [i, entry] of log.entries())
    if (!isRecord(entry) || entry.step !== i || entry.activity !== itinerary[i].activity)
      return issue(`must record step ${i} (${itinerary[i].activity})`, 'log', i);
    else if (!isJoinedLog(entry, itinerary[i]))
      return issue(`must hold one log entry per branch of step ${i}`, 'log', i, 'result');
  if (mode === 'forward') {
    if (log.length !== cursor) return issue(`a forward step ${cursor} needs ${cursor} log entries`, 'log');
    if (fault !== undefined) return issue('a forward step carries no fault', 'fault');
  } else {
    if (!isRecord(fault) || fault.step !== log.length || fault.activity !== itinerary[log.length]?.activity)
      return issue('must name the step after the last logged one', 'fault');
    if (cursor === log.length && itinerary[cursor].branches !== undefined) {
      const entry = value.branchLog;
      if (!isRecord(entry) || entry.step !== cursor || entry.activity !== activity)
        return issue('must be the log of this branch of the faulted parallel step', 'branchLog');
    } else if (cursor >= log.length) return issue('must be a logged step', 'cursor');
  }
  return [];
}

/** A parallel step's log entry holds its branches' entries, in branch order. */
function isJoinedLog(entry: Record<string, unknown>, step: SlipStep): boolean {
  if (step.branches === undefined) return true;
  const { result } = entry;
  return (
    Array.isArray(result) &&
    result.length === step.branches.length &&
    result.every((b, i) => isRecord(b) && b.activity === step.branches![i].activity && b.step === entry.step)
  );
}

function checkStep(step: unknown, known: ReadonlySet<string>): string | undefined {
  if (!isRecord(step)) return 'must be an object';
  if (step.activity !== PARALLEL_STEP)
    return typeof step.activity === 'string' && known.has(step.activity) && step.branches === undefined
      ? undefined
      : 'must name an activity this process declared';
  const { branches } = step;
  if (!Array.isArray(branches) || branches.length < 2 || branches.length > SLIP_MAX_BRANCHES)
    return `a parallel step has 2 to ${SLIP_MAX_BRANCHES} branches`;
  for (const branch of branches)
    if (!isRecord(branch) || typeof branch.activity !== 'string' || !known.has(branch.activity))
      return 'a branch must name an activity this process declared';
  return undefined;
}

/** The activity a message at this step runs: the step's, or its branch's; undefined if they disagree. */
export function unitAt(step: SlipStep, branch: unknown): SlipStep | undefined {
  if (step.branches === undefined) return branch === undefined ? step : undefined;
  return isIndex(branch, step.branches.length) ? step.branches[branch] : undefined;
}

/** The Standard Schema of job `<activity>.slip`: the worker dead-letters what it refuses (invalid-payload). */
export function slipSchema(
  activity: string,
  known: ReadonlySet<string>,
  seal: SlipSeal = NO_SLIP_SEAL,
): StandardSchemaV1<SlipEnvelope> {
  return {
    '~standard': {
      version: 1,
      vendor: 'warren.slip',
      validate(value) {
        const issues = checkSlipEnvelope(value, activity, known);
        if (issues.length > 0) return { issues };
        if (Buffer.byteLength(JSON.stringify(value)) > SLIP_MAX_BYTES)
          return { issues: [{ message: `a slip envelope is at most ${SLIP_MAX_BYTES} bytes` }] };
        if (!seal.isSealed(value as SlipEnvelope))
          return {
            issues: [{ message: 'the slip envelope is not sealed with the signing key', path: ['proof'] }],
          };
        return { value: value as SlipEnvelope };
      },
    },
  };
}
