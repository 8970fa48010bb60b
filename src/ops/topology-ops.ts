import type { ConnectionManager } from '../connection';
import { applyTopology, type TopologyPlan } from '../topology';
import { describePlan } from './describe-plan';
import type { ManagementApi } from './management-api';
import type { ApplyResult, PlanEntry } from './ops-results';
import { diffTopology, type TopologyDiff } from './topology-diff';
import { verifyTopology, type VerifyReport } from './topology-verify';

/** Topology as code against the broker: plan (offline), diff and verify (management API), apply. */
export interface TopologyOps {
  /** Every entity warren declares for this configuration. No broker needed. */
  plan(): PlanEntry[];
  /** What is missing, extra or different on the broker. Needs the management API. */
  diff(): Promise<TopologyDiff>;
  /** Checks queue types, delivery limits, dead-letter wiring and bindings. Needs the management API. */
  verify(): Promise<VerifyReport>;
  /**
   * Declares the plan; creates what is missing, never deletes. An entity of the same name with other
   * settings fails with TopologyConflictError (it is never re-created to fit).
   */
  apply(): Promise<ApplyResult>;
}

/**
 * The `ops.topology` operations on `plan`. `management` throws MANAGEMENT_NOT_CONFIGURED when the
 * management API is not given; `hasManagement` tells apply whether to diff first.
 */
export function topologyOps(
  plan: TopologyPlan,
  management: () => ManagementApi,
  hasManagement: boolean,
  connect: () => Promise<ConnectionManager>,
): TopologyOps {
  return {
    plan: () => describePlan(plan),
    diff: async () => diffTopology(plan, await management().state()),
    verify: async () => verifyTopology(plan, await management().state()),
    apply: async () => {
      const before = hasManagement ? diffTopology(plan, await management().state()) : undefined;
      const manager = await connect();
      await applyTopology(plan, () => manager.openChannel());
      return {
        created: before?.drift.filter((d) => d.kind === 'missing').map((d) => `${d.entity} ${d.name}`),
      };
    },
  };
}
