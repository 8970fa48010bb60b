import type { WarrenOps } from '../ops';
import { CliError } from './cli-error';
import { confirm } from './confirm';

/** The options `namespace remove` reads. */
export interface NamespaceValues {
  readonly force?: boolean;
  readonly wait?: string;
}

interface NamespaceContext {
  readonly ops: WarrenOps;
  readonly yes: boolean;
  readonly values: NamespaceValues;
}

interface Result {
  readonly json: unknown;
  readonly text: string;
  readonly exitCode: number;
}

function waitMs(values: NamespaceValues): number | undefined {
  if (values.wait === undefined) return undefined;
  const ms = Number(values.wait);
  if (!Number.isInteger(ms) || ms < 1)
    throw new CliError(`--wait must be a whole number of milliseconds >= 1 (got ${values.wait})`);
  return ms;
}

/** `warren namespace remove`: the operations API's removeNamespace, asking first. */
export const NAMESPACE_COMMANDS: Readonly<Record<string, (ctx: NamespaceContext) => Promise<Result>>> = {
  async 'namespace remove'({ ops, yes, values }) {
    const timeoutMs = waitMs(values);
    const namespace = ops.plan.naming.namespace;
    await confirm(
      `Remove namespace '${namespace}' from the broker: every queue, exchange and stream of it, messages and records included${values.force ? ', after stopping its processes' : ''}?`,
      yes,
      `remove namespace ${namespace}`,
    );
    const result = await ops.removeNamespace({
      force: values.force ?? false,
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    });
    const stopped = result.stopped.length
      ? `stopped ${result.stopped.length} process(es): ${result.stopped.map((p) => `${p.host}:${p.pid}`).join(', ')}\n`
      : '';
    return {
      json: result,
      text: `${stopped}removed namespace '${namespace}': deleted ${result.queues.length} queue and ${result.exchanges.length} exchange names (absent ones included)`,
      exitCode: 0,
    };
  },
};
