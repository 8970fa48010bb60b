import { randomUUID } from 'node:crypto';
import type { OutboxTransaction } from './options';

/**
 * The part of a Kysely transaction (`db.transaction().execute(async (trx) => …)`) the outbox uses.
 * Structural, so that warren does not depend on Kysely.
 */
export interface KyselyExecutor {
  executeQuery(query: {
    readonly sql: string;
    readonly parameters: readonly unknown[];
    readonly query: {
      readonly kind: 'RawNode';
      readonly sqlFragments: readonly string[];
      readonly parameters: readonly [];
    };
    readonly queryId: { readonly queryId: string };
  }): Promise<{ readonly rows: readonly unknown[]; readonly numAffectedRows?: bigint }>;
}

/**
 * Lets `outbox.publish` write through a Kysely transaction on a PostgreSQL dialect: the statement runs
 * as a raw compiled query (what Kysely's `CompiledQuery.raw` builds) on the transaction's connection.
 *
 * @example
 * await db.transaction().execute(async (trx) => {
 *   const order = await trx.insertInto('orders').values({ total: 42 }).returning('id').executeTakeFirstOrThrow();
 *   await warren.outbox.publish(kyselyTransaction(trx), SendReceipt, { orderId: order.id });
 * });
 */
export function kyselyTransaction(trx: KyselyExecutor): OutboxTransaction {
  return {
    async query(text, values = []) {
      const result = await trx.executeQuery({
        sql: text,
        parameters: values,
        query: { kind: 'RawNode', sqlFragments: [text], parameters: [] },
        queryId: { queryId: randomUUID() },
      });
      const rows = result.rows as Record<string, unknown>[];
      return {
        rows,
        rowCount: result.numAffectedRows !== undefined ? Number(result.numAffectedRows) : rows.length,
      };
    },
  };
}
