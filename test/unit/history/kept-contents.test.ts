import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { HistoryWriter, keptPayload, keptResult, resolveHistoryOptions } from '../../../src/history';
import { isHistoryEvent, jobEvent, parseHistoryBatch } from '../../../src/history/history-batch';
import type { HistoryEvent } from '../../../src/history';
import type { RecordTrust } from '../../../src/records';

const batch = { p: 'p', h: 'h', pid: 1 };

describe('what the history keeps of a payload and a result', () => {
  it('keeps the body as its own text, whole when it fits', () => {
    const body = Buffer.from(JSON.stringify({ to: 'ada@example.org', n: 1 }));
    assert.deepEqual(keptPayload(body, 1024), { b: '{"to":"ada@example.org","n":1}' });
    assert.deepEqual(keptPayload(undefined, 1024), {});
  });

  it('cuts a long body at a character boundary and keeps its full size', () => {
    // 'é' is 2 bytes: a cut at an odd byte would split one
    const body = Buffer.from(`"${'é'.repeat(100)}"`);
    const kept = keptPayload(body, 10);
    assert.equal(kept.bn, body.length);
    assert.equal(kept.b, `"${'é'.repeat(4)}`);
    assert.ok(Buffer.byteLength(kept.b!) <= 10);
    assert.ok(!kept.b!.includes('\ufffd'));
  });

  it('keeps a result as JSON, cut like a payload, and nothing for undefined or what JSON refuses', () => {
    assert.deepEqual(keptResult({ sent: true }, 1024), { o: '{"sent":true}' });
    assert.deepEqual(keptResult(0, 1024), { o: '0' });
    assert.deepEqual(keptResult(undefined, 1024), {});
    assert.deepEqual(
      keptResult(() => 1, 1024),
      {},
    );
    assert.deepEqual(keptResult({ n: 10n }, 1024), {});
    const long = keptResult({ text: 'x'.repeat(100) }, 20);
    assert.deepEqual(long, { o: '{"text":"xxxxxxxxxxx', on: 111 });
    // near the cap, counted in bytes, not characters
    assert.deepEqual(keptResult('€'.repeat(10), 32), { o: `"${'€'.repeat(10)}"` });
    assert.deepEqual(keptResult('€'.repeat(10), 31), { o: `"${'€'.repeat(10)}`, on: 32 });
    assert.deepEqual(keptResult('€'.repeat(10), 30), { o: `"${'€'.repeat(9)}`, on: 32 });
  });

  it('shows kept contents on the event and skips an event whose contents are forged out of bounds', () => {
    const e: HistoryEvent = { j: 'j', n: 'n', q: 'q', k: 'completed', t: 1, b: '{"a":1}', o: '2', on: 9 };
    assert.ok(isHistoryEvent(e));
    const shown = jobEvent(e, { ...batch, e: [e] });
    assert.deepEqual(
      [shown.payload, shown.payloadBytes, shown.result, shown.resultBytes],
      ['{"a":1}', undefined, '2', 9],
    );
    assert.equal(isHistoryEvent({ ...e, b: 7 }), false);
    assert.equal(isHistoryEvent({ ...e, o: 'x'.repeat(70_000) }), false);
    assert.equal(isHistoryEvent({ ...e, bn: -1 }), false);
    assert.equal(isHistoryEvent({ ...e, on: 1.5 }), false);
  });

  it('resolves the options: payloads and results kept by default, 1 KiB each, checked', () => {
    const o = resolveHistoryOptions();
    assert.deepEqual([o.payloads, o.results, o.maxPayloadBytes, o.maxResultBytes], [true, true, 1024, 1024]);
    assert.equal(resolveHistoryOptions({ payloads: false }).payloads, false);
    assert.throws(
      () => resolveHistoryOptions({ payloads: 'no' as never }),
      /history.payloads must be a boolean/,
    );
    assert.throws(
      () => resolveHistoryOptions({ maxResultBytes: 70_000 }),
      /history.maxResultBytes must be an integer from 1 to 65536/,
    );
  });

  it('cuts batches by their kept values’ weight: below 128 KiB, and never one a reader refuses', async () => {
    const sent: Buffer[] = [];
    const channel = {
      on: () => channel,
      once: () => channel,
      off: () => channel,
      publish: (_exchange: string, _queue: string, content: Buffer) => sent.push(content) > 0,
      close: async () => undefined,
    };
    const trust = { proof: () => ({}) } as unknown as RecordTrust;
    const log = { warn: () => undefined } as never;
    const writer = new HistoryWriter('s', resolveHistoryOptions({ flushMs: 60_000 }), batch, log, trust);
    await writer.open(async () => channel as never);
    const event = (i: number, b: string): HistoryEvent => ({
      j: `7f1d0ee2-29cb-4e7e-bdde-${String(i).padStart(12, '0')}`,
      n: 'bench.noop',
      q: 'bench',
      k: 'completed',
      t: Date.now(),
      a: 1,
      d: 3,
      b,
      o: '{"ok":true,"n":1}',
    });
    // payloads of about 120 bytes (quotes escaped in the batch): batches of JSON below 128 KiB
    const payload = JSON.stringify({ n: 1, text: 'x'.repeat(100) });
    for (let i = 0; i < 3000; i++) writer.record(event(i, payload));
    writer.flush();
    assert.ok(sent.length >= 4, `${sent.length} batches`);
    for (const content of sent) assert.ok(content.length < 128 * 1024, `${content.length} bytes`);
    // the largest values, every character a control character (escaped 6-fold): a batch each, far below 16 MiB
    sent.length = 0;
    const big = '\u0001'.repeat(65_536);
    for (let i = 0; i < 5; i++) writer.record({ ...event(i, big), o: big });
    writer.flush();
    assert.equal(sent.length, 5);
    for (const content of sent) {
      assert.ok(content.length < 1024 ** 2, `${content.length} bytes`);
      assert.equal(parseHistoryBatch(content)?.e.length, 1);
    }
  });
});
