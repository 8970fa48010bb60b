import { redactCredentials, type WarrenOps } from '../ops';
import { letterFilter } from './letter-query';
import { isAllowed, type DashboardAction, type ResolvedDashboardOptions } from './options';
import { type Caller, Refusal } from './request-guard';

export const ACTIONS: readonly DashboardAction[] = ['replay', 'pause', 'resume', 'purge', 'publish'];

type Body = Record<string, unknown>;

function queueOf(body: Body): string {
  if (typeof body.queue !== 'string' || body.queue === '') throw new Refusal(400, 'queue is required');
  return body.queue;
}

function filterOf(body: Body) {
  const raw = body.filter;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new Refusal(400, 'filter is required');
  return letterFilter(raw as Body);
}

/** Each action through the operations API; what it returns is the action's JSON answer. */
const RUN: Record<
  DashboardAction,
  (ops: WarrenOps, body: Body) => Promise<{ result: unknown; dryRun: boolean }>
> = {
  async replay(ops, body) {
    const dryRun = body.dryRun === true;
    const to = typeof body.to === 'string' && body.to !== '' ? body.to : undefined;
    const result = await ops.dead.replay(
      { ...filterOf(body), state: 'dead' },
      { dryRun, ...(to ? { to } : {}) },
    );
    return { result, dryRun };
  },
  async pause(ops, body) {
    return { result: await ops.pause(queueOf(body)), dryRun: false };
  },
  async resume(ops, body) {
    return { result: await ops.resume(queueOf(body)), dryRun: false };
  },
  async purge(ops, body) {
    const filter = filterOf(body);
    const dryRun = body.dryRun === true;
    if (filter.queue === undefined) throw new Refusal(400, 'purge needs filter.queue');
    if (!dryRun && body.confirm !== filter.queue)
      throw new Refusal(400, `type the queue's name (${filter.queue}) to confirm the purge`);
    return { result: await ops.dead.purge(filter, { dryRun }), dryRun };
  },
  async publish(ops, body) {
    if (typeof body.job !== 'string' || body.job === '') throw new Refusal(400, 'job is required');
    return { result: await ops.publish(body.job, body.data ?? {}), dryRun: false };
  },
};

/**
 * Runs an action for a caller if the caller's role allows it, and records it in the audit log whatever
 * happens (done, dry run, refused, failed) with who asked.
 */
export async function runAction(
  options: ResolvedDashboardOptions,
  caller: Caller,
  action: DashboardAction,
  body: Body,
): Promise<unknown> {
  const target = { ...body };
  delete target.confirm;
  const audit = (outcome: 'done' | 'dry-run' | 'refused' | 'failed', detail?: string) =>
    options.audit({
      at: new Date().toISOString(),
      who: caller.who,
      role: caller.role,
      action,
      target,
      outcome,
      ...(detail !== undefined ? { detail } : {}),
    });
  if (!isAllowed(options.permissions, caller.role, action)) {
    audit('refused', `needs ${options.permissions[action]}`);
    throw new Refusal(
      403,
      `${action} needs the ${options.permissions[action]} role (you are ${caller.role})`,
    );
  }
  try {
    const { result, dryRun } = await RUN[action](options.ops, body);
    audit(dryRun ? 'dry-run' : 'done');
    return result;
  } catch (error) {
    const reason = redactCredentials(error instanceof Error ? error.message : String(error));
    audit(error instanceof Refusal ? 'refused' : 'failed', error instanceof Refusal ? error.reason : reason);
    throw error;
  }
}
