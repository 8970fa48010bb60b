import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { ConfigurationError, defineTopology, Job, PayloadValidationError, type JobHandler } from '../../src';
import { cleanup, rawConnection, testWarren } from '../support/test-broker';
import { nextEvent, waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';

const topology = defineTopology({ queues: { billing: {} } });
const Invoice = z.object({ invoiceId: z.string().min(1), cents: z.number().int().positive() });

@Job('billing.invoice', { queue: 'billing', schema: Invoice })
class InvoiceJob implements JobHandler<z.infer<typeof Invoice>> {
  readonly seen: z.infer<typeof Invoice>[] = [];
  async handle(data: z.infer<typeof Invoice>) {
    this.seen.push(data);
  }
}

describe('payload validation with a Standard Schema (zod)', () => {
  afterEach(cleanup);

  it('rejects a bad payload on publish, before it reaches the broker', async () => {
    const warren = await testWarren({ topology, jobs: [InvoiceJob] });
    await assert.rejects(warren.publish(InvoiceJob, { invoiceId: '', cents: -1 }), (error: unknown) => {
      assert.ok(error instanceof PayloadValidationError);
      assert.equal(error.code, 'PAYLOAD_INVALID');
      assert.deepEqual(
        error.issues.map((i) => i.path),
        ['invoiceId', 'cents'],
      );
      return true;
    });
    const connection = await rawConnection();
    const channel = await connection.createChannel();
    assert.equal(
      (await channel.checkQueue(planOf(warren).jobs.get('billing.invoice')!.queueName)).messageCount,
      0,
    );
    await connection.close();
  });

  it('dead-letters a bad payload from a foreign publisher at once, with the reason', async () => {
    const handler = new InvoiceJob();
    const warren = await testWarren({ topology, handlers: [handler] });
    await warren.start();
    const dead = nextEvent<{ reason: string; jobId: string }>(warren, 'deadLettered');
    const connection = await rawConnection();
    const channel = await connection.createConfirmChannel();
    channel.sendToQueue(
      planOf(warren).jobs.get('billing.invoice')!.queueName,
      Buffer.from('{"invoiceId":42}'),
      {
        type: 'billing.invoice',
        messageId: 'inv-bad',
        contentType: 'application/json',
      },
    );
    await channel.waitForConfirms();
    await connection.close();
    const event = await dead;
    assert.equal(event.reason, 'invalid-payload');
    assert.equal(event.jobId, 'inv-bad');
    const [letter] = await warren.deadLetters.list('billing');
    assert.match(letter!.lastError!, /invoiceId/);
    await warren.publish(InvoiceJob, { invoiceId: 'ok', cents: 100 });
    await waitFor(() => handler.seen.length === 1);
    assert.equal(handler.seen[0]!.invoiceId, 'ok');
  });

  it('rejects invalid publish options with a message naming the option', async () => {
    const warren = await testWarren({ topology, jobs: [InvoiceJob] });
    await assert.rejects(
      warren.publish(InvoiceJob, { invoiceId: 'x', cents: 1 }, { delayMs: -5 }),
      (e: unknown) =>
        e instanceof ConfigurationError && /delayMs must be a finite number >= 0 \(got -5\)/.test(e.message),
    );
    await assert.rejects(
      warren.publish(InvoiceJob, { invoiceId: 'x', cents: 1 }, { priority: 3 }),
      /has none/,
    );
    await assert.rejects(
      warren.publish(InvoiceJob, { invoiceId: 'x', cents: 1 }, { headers: { 'x-death': 'no' } }),
      /reserved/,
    );
  });
});
