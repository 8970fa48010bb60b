import type { OutboxTransaction, PgResult } from './options';

/**
 * The part of a Knex transaction (`knex.transaction(async (trx) => …)`) the outbox uses. Structural,
 * so that warren does not depend on Knex.
 */
export interface KnexExecutor {
  raw(sql: string, bindings: readonly unknown[]): PromiseLike<unknown>;
}

/**
 * Lets `outbox.publish` write through a Knex transaction on the `pg` client: the statement runs with
 * `trx.raw`, its `$n` placeholders turned into Knex's `?` (warren's statements contain no other `?`).
 *
 * @example
 * await knex.transaction(async (trx) => {
 *   const [order] = await trx('orders').insert({ total: 42 }).returning('id');
 *   await warren.outbox.publish(knexTransaction(trx), SendReceipt, { orderId: order.id });
 * });
 */
export function knexTransaction(trx: KnexExecutor): OutboxTransaction {
  return {
    async query(text, values = []) {
      const bindings: unknown[] = [];
      const sql = text.replace(/\$(\d+)/g, (_, n: string) => {
        bindings.push(values[Number(n) - 1]);
        return '?';
      });
      // With the pg client, raw() resolves to node-postgres's own result.
      const result = (await trx.raw(sql, bindings)) as PgResult;
      return { rows: result.rows, rowCount: result.rowCount };
    },
  };
}
