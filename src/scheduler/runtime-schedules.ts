import {
  ConfigurationError,
  summarizeIssues,
  validatePayload,
  UnknownJobError,
  UnknownScheduleError,
  validationMessage,
  type Logger,
  type MissedTickPolicy,
} from '../core';
import type { ResolvedSchedulerOptions } from './options';
import { resolveSchedule, type ScheduleInfo, type ScheduleSpec } from './schedule';
import { applyScheduleRecord, type ScheduleDefinition, type ScheduleRecord } from './schedule-record';
import type { Scheduler } from './scheduler';
import type { TopologyPlan } from '../topology';
import type { ScheduleRegistry } from './schedule-registry';
import { resolveRuntimeSchedule } from './schedule-data';
import { noSchedulerWarning, type AddedSchedule } from './scheduler-presence';

/** Options of `addSchedule(job, pattern, data, options)`: those of `schedule()`. */
export interface AddScheduleOptions {
  /** The schedule's id. Default: the job name. */
  readonly id?: string;
  /** IANA time zone the pattern is read in. Default: `scheduler.tz` of the process that fires it. */
  readonly tz?: string;
  readonly missedTicks?: MissedTickPolicy;
}

/** What `triggerSchedule` published. */
export interface TriggeredSchedule {
  readonly id: string;
  readonly job: string;
  /** `<schedule id>@manual-<ms since epoch>`. */
  readonly jobId: string;
}

export interface RuntimeSchedulesDeps {
  readonly scheduler: Scheduler;
  readonly registry: ScheduleRegistry;
  readonly defaults: ResolvedSchedulerOptions;
  readonly plan: TopologyPlan;
  /** Whether this process follows the registry (its scheduler is enabled). */
  readonly isFollowing: boolean;
  readonly loadTimeoutMs: number;
  readonly publish: (job: string, data: unknown, jobId: string) => Promise<unknown>;
  /** Whether some process takes part in the cron election now (see scheduler-presence.ts). */
  readonly isSchedulerRunning: () => Promise<boolean>;
  readonly log: Logger;
}

const MAX_ID_LENGTH = 200;

/**
 * The union of a process's code-declared schedules (`@Cron`, `schedule()`) and the broker's schedule
 * registry, kept in its scheduler. An id declared in code wins: a registry definition of the same id is
 * ignored there (with a warning), while pause and resume apply to code and registry schedules alike.
 */
export class RuntimeSchedules {
  private readonly local = new Map<string, ScheduleSpec>();
  /** Registry definitions now in the scheduler, by id (the very objects of the registry state). */
  private readonly applied = new Map<string, ScheduleDefinition>();
  private readonly warned = new Set<string>();

  constructor(private readonly deps: RuntimeSchedulesDeps) {}

  /** A schedule declared in code in this process. */
  addLocal(spec: ScheduleSpec): ScheduleInfo {
    this.local.set(spec.id, spec);
    this.applied.delete(spec.id);
    return this.deps.scheduler.add(spec, this.deps.registry.state.get(spec.id)?.paused ?? false);
  }

  removeLocal(id: string): boolean {
    if (!this.local.delete(id)) return false;
    this.deps.scheduler.remove(id);
    this.reconcile(id);
    return true;
  }

  /** Brings the scheduler in line with the registry state of one id (called after each record). */
  reconcile(id: string): void {
    const { scheduler, registry, log } = this.deps;
    const entry = registry.state.get(id);
    const paused = entry?.paused ?? false;
    const definition = entry?.definition;
    if (this.local.has(id)) {
      if (definition && !this.warned.has(id)) {
        this.warned.add(id);
        log.warn({ schedule: id }, 'the schedule registry defines an id declared in code; the code wins');
      }
      scheduler.setPaused(id, paused);
      return;
    }
    if (!definition) {
      if (this.applied.delete(id)) scheduler.remove(id);
      return;
    }
    if (this.applied.get(id) === definition) {
      scheduler.setPaused(id, paused);
      return;
    }
    let spec: ScheduleSpec;
    try {
      spec = this.resolve(id, definition);
    } catch (error) {
      this.refuse(id, error);
      return;
    }
    const schema = this.deps.plan.jobs.get(definition.job)?.schema;
    if (schema === undefined) {
      this.apply(id, definition, spec);
      return;
    }
    // Checked against the job's schema when read: a bad record is reported here, once, not at every tick.
    const checked = validatePayload(schema, spec.data);
    checked.then(
      (result) => {
        if (registry.state.get(id)?.definition !== definition) return;
        if (result.issues === undefined) this.apply(id, definition, spec);
        else
          this.refuse(
            id,
            new ConfigurationError(
              `schedule registry '${id}'.data does not match the schema of '${definition.job}': ${summarizeIssues(result.issues)}`,
            ),
          );
      },
      (error: unknown) => this.refuse(id, error),
    );
  }

  private apply(id: string, definition: ScheduleDefinition, spec: ScheduleSpec): void {
    this.applied.set(id, definition);
    this.deps.scheduler.add(spec, this.deps.registry.state.get(id)?.paused ?? false);
  }

  private refuse(id: string, error: unknown): void {
    this.deps.log.warn({ err: error, schedule: id }, 'ignored an invalid schedule of the schedule registry');
    if (this.applied.delete(id)) this.deps.scheduler.remove(id);
  }

  /**
   * Validates, then appends an upsert; every process (and the next leader) schedules it. The result says
   * whether a process fires it: this one (its scheduler is enabled), or one that takes part in the cron
   * election now.
   */
  async add(
    job: string,
    pattern: string,
    data: unknown,
    options: AddScheduleOptions = {},
  ): Promise<AddedSchedule> {
    const at = `addSchedule('${options.id ?? job}')`;
    const spec = await resolveRuntimeSchedule(at, this.deps.plan, this.deps.defaults, {
      job,
      pattern,
      data,
      options,
      source: 'registry',
    });
    this.refuseLocal(at, spec.id);
    await this.write({
      v: 1,
      id: spec.id,
      action: 'upsert',
      at: Date.now(),
      job,
      pattern: spec.cron.pattern,
      tz: spec.cron.tz,
      data: spec.data,
      missedTicks: spec.missedTicks,
    });
    const isFired = this.deps.isFollowing ? true : await this.askSchedulerRunning(spec.id);
    const warning = isFired === false ? noSchedulerWarning(spec.id) : undefined;
    return { id: spec.id, job, isFired, warning };
  }

  private async askSchedulerRunning(id: string): Promise<boolean | undefined> {
    try {
      return await this.deps.isSchedulerRunning();
    } catch (error) {
      this.deps.log.debug({ err: error, scheduleId: id }, 'could not check for a running scheduler');
      return undefined;
    }
  }

  async remove(id: string): Promise<void> {
    this.refuseLocal(`removeSchedule('${id}')`, checkId('removeSchedule', id));
    await this.write({ v: 1, id, action: 'remove', at: Date.now() });
  }

  async setPaused(id: string, paused: boolean): Promise<void> {
    checkId(paused ? 'pauseSchedule' : 'resumeSchedule', id);
    await this.write({ v: 1, id, action: paused ? 'pause' : 'resume', at: Date.now() });
  }

  /** Publishes one firing now, through this process, with the id `<schedule id>@manual-<ms>`. */
  async trigger(id: string): Promise<TriggeredSchedule> {
    checkId('triggerSchedule', id);
    const { registry } = this.deps;
    if (!this.deps.isFollowing && !this.local.has(id)) {
      await registry.load(this.deps.loadTimeoutMs);
      await registry.close();
    }
    const definition = registry.state.get(id)?.definition;
    const spec = this.local.get(id) ?? (definition ? this.resolve(id, definition) : undefined);
    if (!spec) {
      const known = [...new Set([...this.local.keys(), ...registry.state.keys()])].sort();
      throw new UnknownScheduleError(id, known);
    }
    const jobId = `${id}@manual-${Date.now()}`;
    await this.deps.publish(spec.job, spec.data, jobId);
    return { id, job: spec.job, jobId };
  }

  private resolve(id: string, definition: ScheduleDefinition): ScheduleSpec {
    if (!this.deps.plan.jobs.has(definition.job))
      throw new UnknownJobError(definition.job, { known: [...this.deps.plan.jobs.keys()] });
    return resolveSchedule(
      `schedule registry '${id}'`,
      { ...definition, data: definition.data, id, source: 'registry' },
      this.deps.defaults,
    );
  }

  private refuseLocal(at: string, id: string): void {
    if (this.local.has(id))
      throw new ConfigurationError(
        `${at}: '${id}' is declared in code in this process (@Cron or schedule()); ` +
          'code schedules cannot be replaced or removed at run time (pause them instead)',
      );
  }

  /** Appends, then applies at once here too (the follower applies it again in stream order: same result). */
  private async write(record: ScheduleRecord): Promise<void> {
    await this.deps.registry.append(record);
    if (record.action === 'sync') return;
    applyScheduleRecord(this.deps.registry.state, record);
    if (this.deps.isFollowing) this.reconcile(record.id);
  }
}

function checkId(at: string, id: string): string {
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH)
    throw new ConfigurationError(
      validationMessage(`${at}.id`, `must be a string of 1 to ${MAX_ID_LENGTH} characters`, id),
    );
  return id;
}
