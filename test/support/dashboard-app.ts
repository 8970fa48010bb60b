/**
 * The application the dashboard tests look at: a worker of the dead-letter log fixture on the test
 * broker, an operations API for it, and dashboard servers made on demand, all closed (and the log
 * stream deleted) by `close`.
 */
import type { Warren } from '../../src';
import { createOps, type WarrenOps } from '../../src/ops';
import { type DashboardServer, type DashboardServerOptions, startDashboardServer } from '../../src/ui';
import { Charge, ChargeSwitch, deadLogOptions, Refund, StalePing } from '../fixtures/dead-log-jobs';
import { cleanup, testWarren } from './test-broker';

export interface DashboardApp {
  readonly warren: Warren<object>;
  readonly ops: WarrenOps;
  readonly state: ChargeSwitch;
  /** A dashboard server on a free port over `ops` (unless given), with a silent audit log. */
  serve(options?: Partial<DashboardServerOptions>): Promise<DashboardServer>;
  close(): Promise<void>;
}

export async function startDashboardApp(namespace: string): Promise<DashboardApp> {
  const state = new ChargeSwitch();
  const warren = await testWarren({
    ...deadLogOptions(namespace),
    handlers: [new Charge(state), new Refund(), new StalePing()],
  });
  await warren.start();
  const ops = createOps({ ...deadLogOptions(namespace), replyTimeoutMs: 300 });
  const servers: DashboardServer[] = [];
  return {
    warren,
    ops,
    state,
    async serve(options = {}) {
      const server = await startDashboardServer({ ops, port: 0, audit: () => undefined, ...options });
      servers.push(server);
      return server;
    },
    async close() {
      for (const server of servers) await server.close();
      await ops.close();
      await cleanup();
    },
  };
}
