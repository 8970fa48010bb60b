import { ConfigurationError, type EmitEvent, type JobDefinition, type JobHandler } from '../core';
import { readJobDefinition } from '../decorators';
import { MemoryJoinStore, type JoinStore } from '../idempotency';
import { NO_SLIP_SEAL, slipJobName, slipSchema, type SlipSeal } from './slip-envelope';
import { SlipRouter } from './slip-router';
import { SlipStepHandler, type SlipActivity } from './slip-step-handler';

/** How much longer a slip job may run than its activity: time to publish the next message, confirmed. */
export const SLIP_TIMEOUT_MARGIN_MS = 10_000;

/** The jobs that carry routing slips, derived from the declared activities. */
export interface SlipJobs {
  /** Job names of the declared activities. */
  readonly activities: ReadonlySet<string>;
  /** One `<activity>.slip` job per activity, on the activity's queue with its attempts and backoff. */
  readonly definitions: readonly JobDefinition[];
  /** Handlers of the `<activity>.slip` jobs whose activity this process handles. */
  readonly handlers: ReadonlyMap<string, JobHandler>;
}

/**
 * Plans the slip jobs: `activities` are the jobs (classes, instances or defined jobs) that may be steps;
 * `handlers` the activity handlers of this process, by job name.
 */
export function planSlipJobs(
  activities: readonly object[],
  handlers: ReadonlyMap<string, JobHandler>,
  emit: EmitEvent,
  defaultTimeoutMs: number,
  /** Fan-in counters of parallel steps; default one in this process's memory. */
  joins: JoinStore = new MemoryJoinStore(),
  /** Seals what the router publishes and checks what the workers receive (a signing key), or nothing. */
  seal: SlipSeal = NO_SLIP_SEAL,
): SlipJobs {
  const router = new SlipRouter(joins, emit, seal);
  const definitions = activities.map((activity) => readJobDefinition(activity));
  const names = new Set(definitions.map((definition) => definition.name));
  if (names.size !== definitions.length) throw new ConfigurationError('activities lists the same job twice');
  const slipHandlers = new Map<string, JobHandler>();
  const slipDefinitions = definitions.map((definition) => {
    const name = slipJobName(definition.name);
    const handler = handlers.get(definition.name);
    const timeoutMs = definition.timeoutMs ?? defaultTimeoutMs;
    if (handler)
      slipHandlers.set(
        name,
        new SlipStepHandler(handler as SlipActivity, router, emit, timeoutMs, definition.schema),
      );
    const { limiter: _limiter, activity: _activity, ...rest } = definition;
    return Object.freeze({
      ...rest,
      name,
      schema: slipSchema(definition.name, names, seal),
      // Room after the activity's own timeout to publish the compensation before the worker gives up.
      timeoutMs: timeoutMs + SLIP_TIMEOUT_MARGIN_MS,
    });
  });
  return { activities: names, definitions: slipDefinitions, handlers: slipHandlers };
}
