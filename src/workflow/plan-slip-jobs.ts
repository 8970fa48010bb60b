import { ConfigurationError, type EmitEvent, type JobDefinition, type JobHandler } from '../core';
import { readJobDefinition, type JobClass } from '../decorators';
import { slipJobName, slipSchema } from './slip-envelope';
import { SlipStepHandler, type SlipActivity } from './slip-step-handler';

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
 * Plans the slip jobs: `activities` are the classes that may be steps; `handlers` the activity handler
 * instances of this process, by job name.
 */
export function planSlipJobs(
  activities: readonly JobClass[],
  handlers: ReadonlyMap<string, JobHandler>,
  emit: EmitEvent,
): SlipJobs {
  const definitions = activities.map((activity) => readJobDefinition(activity));
  const names = new Set(definitions.map((definition) => definition.name));
  if (names.size !== definitions.length) throw new ConfigurationError('activities lists the same job twice');
  const slipHandlers = new Map<string, JobHandler>();
  const slipDefinitions = definitions.map((definition) => {
    const name = slipJobName(definition.name);
    const handler = handlers.get(definition.name);
    if (handler) slipHandlers.set(name, new SlipStepHandler(handler as SlipActivity, emit));
    const { limiter: _limiter, ...rest } = definition;
    return Object.freeze({ ...rest, name, schema: slipSchema(definition.name, names) });
  });
  return { activities: names, definitions: slipDefinitions, handlers: slipHandlers };
}
