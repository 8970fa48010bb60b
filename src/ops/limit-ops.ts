import {
  checkLimitTarget,
  limitId,
  limitRecordOf,
  LimitsStream,
  type LimitOverrideInput,
  type LimitRecord,
} from '../limit-overrides';
import type { RecordTrust } from '../records';
import { plannedStream, planStream, type TopologyPlan } from '../topology';
import type { OpsConnection } from './ops-connection';

/**
 * `ops.limits` (docs/guide/per-key-limits.md#changing-limits-at-run-time): per-key overrides of the planned
 * per-key limits, on the namespace's limits stream. Every process that owns keys with limits follows the stream
 * and applies a change as it reads it. Each call reads the stream anew (a change is a few hundred bytes).
 */
export interface LimitOps {
  /** Every override in force, oldest change first. */
  list(): Promise<LimitRecord[]>;
  /** The override of one key of a job (`concurrency`) or of a per-key rate limit (`max`), if any. */
  get(target: string, key: string): Promise<LimitRecord | undefined>;
  /**
   * Sets a key's override (a field left out keeps its override, `null` removes it), signed with a key, confirmed
   * by the broker. A bad value is a `LIMIT_INVALID` error. Returns the record written.
   */
  set(input: LimitOverrideInput): Promise<LimitRecord>;
}

export function limitOps(plan: TopologyPlan, connection: OpsConnection, trust: RecordTrust): LimitOps {
  const open = async () => {
    const { manager, confirms } = await connection.open();
    const stream = plannedStream(plan, 'limits') ?? planStream('limits', undefined, plan.naming);
    return new LimitsStream({
      stream: stream.name,
      assertion: stream.assertion,
      openChannel: () => manager.openChannel(),
      confirms,
      trust,
    });
  };
  // the stream read whole, once more on the next connection when RabbitMQ 3.10 killed this one under the read
  // (OpsConnection.read)
  const readLimits = () =>
    connection.read(async () => {
      const stream = await open();
      return { stream, overrides: await stream.read() };
    });
  return {
    list: async () => [...(await readLimits()).overrides.values()].sort((a, b) => a.at - b.at),
    get: async (target, key) => (await readLimits()).overrides.get(limitId(target, key)),
    set: async (input) => {
      checkLimitTarget(plan.jobs.values(), input);
      const { stream, overrides } = await readLimits();
      const current = overrides.get(limitId(input?.target, input?.key));
      const record = limitRecordOf(input, current, Date.now());
      await stream.append(record);
      return record;
    },
  };
}
