import { randomUUID } from 'node:crypto';
import {
  ConfigurationError,
  PayloadValidationError,
  validatePayload,
  type PublishedJob,
  type PublishOptions,
  type StandardSchemaV1,
} from '../core';
import { readJobDefinition, type JobRef, type JobData } from '../decorators';
import {
  PARALLEL_STEP,
  SLIP_MAX_BRANCHES,
  SLIP_MAX_BYTES,
  SLIP_MAX_STEPS,
  slipJobName,
  slipStepId,
  type SlipEnvelope,
  type SlipStep,
} from './slip-envelope';
import { mergeArgs } from './slip-step-handler';

/** How a slip builder publishes its first step (the instance's confirmed publish). */
export type PublishSlipStep = (
  name: string,
  data: SlipEnvelope,
  options: PublishOptions,
) => Promise<PublishedJob>;

/** One branch of a parallel step: `branch(ChargeCard, { cents: 500 })`. */
export interface SlipBranch {
  readonly activity: JobRef;
  readonly args: unknown;
}

/** A typed branch of a parallel step. */
export function branch<C extends JobRef>(activity: C, args: JobData<C>): SlipBranch {
  return { activity, args };
}

/** What `run()` started. */
export interface StartedSlip {
  readonly slipId: string;
  readonly steps: number;
}

/**
 * Builds a routing slip: activities run one after another, each in its own job; when one fails for
 * good the completed ones are compensated in reverse order. Immutable: every call returns a new builder.
 *
 * @example
 * await warren.slip().step(ReserveStock, { sku, qty }).step(ChargeCard, { amount }).step(Ship, { address }).run();
 */
export class SlipBuilder {
  constructor(
    private readonly publish: PublishSlipStep,
    private readonly known: ReadonlySet<string>,
    private readonly steps: readonly SlipStep[] = [],
    private readonly vars: Readonly<Record<string, unknown>> = {},
    /** The schemas of the activities in the steps: every step's arguments are checked at `run()`. */
    private readonly schemas: ReadonlyMap<string, StandardSchemaV1 | undefined> = new Map(),
  ) {}

  /**
   * Appends a step: `activity` must be listed in the `activities` option. (Named `then` before 0.2: that
   * made a builder a thenable, so an `await` on it called the step method; there is no `then` any more.)
   */
  step<C extends JobRef>(activity: C, args: JobData<C>): SlipBuilder {
    const step = { activity: this.activityName(activity), args };
    return new SlipBuilder(this.publish, this.known, [...this.steps, step], this.vars, this.schemas);
  }

  private activityName(activity: JobRef): string {
    const { name, schema } = readJobDefinition(activity);
    if (!this.known.has(name))
      throw new ConfigurationError(
        `slip step '${name}' is not an activity: list its class in the activities option`,
      );
    (this.schemas as Map<string, StandardSchemaV1 | undefined>).set(name, schema);
    return name;
  }

  /** Every step's arguments (variables merged) against its activity's schema, as a plain publish checks. */
  private async checkArgs(): Promise<void> {
    for (const step of this.steps)
      for (const unit of step.branches ?? [step]) {
        const schema = this.schemas.get(unit.activity);
        if (schema === undefined) continue;
        const checked = await validatePayload(schema, mergeArgs(this.vars, unit.args));
        if (checked.issues) throw new PayloadValidationError(unit.activity, checked.issues);
      }
  }

  /**
   * Appends a parallel step: its branches run at once; the slip goes on when all completed, and when
   * one fails for good the completed ones (and every earlier step) are compensated. The fan-in is
   * counted in the `joins` store.
   *
   * @example
   * warren.slip().step(ReserveStock, order).parallel(branch(ChargeCard, order), branch(Notify, order))
   */
  parallel(...branches: readonly SlipBranch[]): SlipBuilder {
    if (branches.length < 2 || branches.length > SLIP_MAX_BRANCHES)
      throw new ConfigurationError(
        `a parallel step has 2 to ${SLIP_MAX_BRANCHES} branches (got ${branches.length})`,
      );
    const units = branches.map(({ activity, args }) => ({ activity: this.activityName(activity), args }));
    const step: SlipStep = { activity: PARALLEL_STEP, args: null, branches: units };
    return new SlipBuilder(this.publish, this.known, [...this.steps, step], this.vars, this.schemas);
  }

  /** Values merged under every step's args (a step's own args win). */
  variables(values: Readonly<Record<string, unknown>>): SlipBuilder {
    return new SlipBuilder(this.publish, this.known, this.steps, { ...this.vars, ...values }, this.schemas);
  }

  /** Publishes the first step (confirmed). `slipId` defaults to a random UUID; reuse one to dedupe. */
  async run(options: { readonly slipId?: string } = {}): Promise<StartedSlip> {
    if (this.steps.length === 0 || this.steps.length > SLIP_MAX_STEPS)
      throw new ConfigurationError(`a slip has 1 to ${SLIP_MAX_STEPS} steps (got ${this.steps.length})`);
    await this.checkArgs();
    const slipId = options.slipId ?? randomUUID();
    const envelope: SlipEnvelope = {
      slip: 1,
      slipId,
      itinerary: this.steps,
      cursor: 0,
      mode: 'forward',
      log: [],
      variables: this.vars,
    };
    // Half the bound, so that the log of results has room to grow.
    if (Buffer.byteLength(JSON.stringify(envelope)) > SLIP_MAX_BYTES / 2)
      throw new ConfigurationError(
        `a slip's itinerary and variables are at most ${SLIP_MAX_BYTES / 2} bytes`,
      );
    const first = this.steps[0];
    const id = slipStepId(slipId, 0, 'forward');
    if (first.branches === undefined)
      await this.publish(slipJobName(first.activity), envelope, { jobId: id });
    else
      await Promise.all(
        first.branches.map((unit, branch) =>
          this.publish(slipJobName(unit.activity), { ...envelope, branch }, { jobId: `${id}.${branch}` }),
        ),
      );
    return { slipId, steps: this.steps.length };
  }
}
