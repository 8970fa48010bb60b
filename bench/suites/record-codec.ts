/**
 * What the record codec costs: CPU µs per record to sign and to verify (with the reader's replay guard)
 * records of the sizes warren writes: a job-control cancel (~60 B), a schedule upsert (~200 B) and a
 * history batch (~40 kB, a thousand events: its cost is per batch, so per event it is a thousandth).
 *
 *   npm run bench -- record-codec [--records 200000]
 */
import { createHmac } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createSilentLogger } from '../../src/core';
import { RecordTrust, resolveRecordSigning } from '../../src/records';

const { values } = parseArgs({ options: { records: { type: 'string', default: '200000' } } });
const N = Number(values.records);
const trust = new RecordTrust('bench', resolveRecordSigning('k'.repeat(32)), createSilentLogger());

function cpuUs(run: () => void): number {
  const start = process.cpuUsage();
  run();
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export async function run(): Promise<void> {
  for (const [label, size, count] of [
    ['job-control record (60 B)', 60, N],
    ['schedule record (200 B)', 200, N],
    ['history batch (40 kB)', 40_000, Math.max(1, Math.floor(N / 100))],
  ] as const) {
    const body = Buffer.alloc(size, 'x');
    const proofs: Record<string, string>[] = [];
    // warm up
    for (let i = 0; i < 1000; i++) trust.proof('job-control', body);
    const signUs = cpuUs(() => {
      for (let i = 0; i < count; i++) proofs.push(trust.proof('job-control', body));
    });
    const reader = trust.reader('job-control');
    let accepted = 0;
    const verifyUs = cpuUs(() => {
      for (const headers of proofs) if (reader.accept(body, headers)) accepted += 1;
    });
    if (accepted !== count) throw new Error(`accepted ${accepted} of ${count}`);
    // the primitive alone, for scale: what any HMAC-SHA256 of this body costs on this machine
    const secret = Buffer.alloc(32, 'k');
    const rawUs = cpuUs(() => {
      for (let i = 0; i < count; i++) createHmac('sha256', secret).update(body).digest();
    });
    console.log(
      `${label.padEnd(28)} sign ${(signUs / count).toFixed(2)} µs  verify+guard ${(verifyUs / count).toFixed(2)} µs  ` +
        `(bare createHmac ${(rawUs / count).toFixed(2)} µs; ${count} records)`,
    );
  }
}
