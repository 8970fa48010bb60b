import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigurationError, createSilentLogger } from '../../../src/core';
import {
  ReplayGuard,
  RecordTrust,
  resolveRecordSigning,
  signRecord,
  verifyRecord,
} from '../../../src/records';

const KEY = 'k'.repeat(32);
const OTHER = 'o'.repeat(40);
const body = Buffer.from('{"j":"job-1","a":"cancel","t":1}');

describe('the record codec', () => {
  it('refuses a key shorter than 32 characters, an empty list and a key that is not a string', () => {
    assert.throws(() => resolveRecordSigning('short'), ConfigurationError);
    assert.throws(() => resolveRecordSigning([]), ConfigurationError);
    assert.throws(() => resolveRecordSigning([KEY, 7 as unknown as string]), /signingKey\[1\]/);
    assert.throws(() => resolveRecordSigning('x'.repeat(31)), /at least 32 characters \(got 31\)/);
  });

  it('never puts the key in a configuration error', () => {
    const secret = 'secret-but-short';
    assert.throws(
      () => resolveRecordSigning(secret),
      (error: Error) => !error.message.includes(secret),
    );
  });

  it('verifies what it signed, with the writer and sequence it signed', () => {
    const signing = resolveRecordSigning(KEY)!;
    const proof = signRecord(signing, 'ns', 'job-control', 'ab'.repeat(8), 7, body);
    assert.deepEqual(verifyRecord(signing, 'ns', 'job-control', proof, body), {
      writer: 'ab'.repeat(8),
      seq: 7,
    });
  });

  it('refuses a changed body, another stream, another namespace, another extra and another key', () => {
    const signing = resolveRecordSigning(KEY)!;
    const proof = signRecord(signing, 'ns', 'job-control', 'ab'.repeat(8), 7, body, 'x');
    assert.equal(
      verifyRecord(signing, 'ns', 'job-control', proof, Buffer.from(`${body} `), 'x'),
      'bad-signature',
    );
    assert.equal(verifyRecord(signing, 'ns', 'schedules', proof, body, 'x'), 'bad-signature');
    assert.equal(verifyRecord(signing, 'other', 'job-control', proof, body, 'x'), 'bad-signature');
    assert.equal(verifyRecord(signing, 'ns', 'job-control', proof, body, 'y'), 'bad-signature');
    assert.equal(
      verifyRecord(resolveRecordSigning(OTHER)!, 'ns', 'job-control', proof, body, 'x'),
      'unknown-key',
    );
    const forged = proof.replace(/\.(\d+)\./, '.8.');
    assert.equal(verifyRecord(signing, 'ns', 'job-control', forged, body, 'x'), 'bad-signature');
  });

  it('tells an unsigned record from a malformed proof', () => {
    const signing = resolveRecordSigning(KEY)!;
    assert.equal(verifyRecord(signing, 'ns', 'history', undefined, body), 'unsigned');
    for (const proof of [
      '',
      '1',
      '1.a.b.c.d',
      7,
      {},
      'x'.repeat(500),
      `1.00000000.${'a'.repeat(16)}.0.${'A'.repeat(43)}`,
    ])
      assert.equal(verifyRecord(signing, 'ns', 'history', proof, body), 'malformed-proof', String(proof));
  });

  it('verifies with any key of a rotation and signs with the first', () => {
    const old = resolveRecordSigning(OTHER)!;
    const rotating = resolveRecordSigning([KEY, OTHER])!;
    const oldProof = signRecord(old, 'ns', 'schedules', 'cd'.repeat(8), 1, body);
    assert.equal(typeof verifyRecord(rotating, 'ns', 'schedules', oldProof, body), 'object');
    const newProof = signRecord(rotating, 'ns', 'schedules', 'cd'.repeat(8), 2, body);
    assert.equal(verifyRecord(old, 'ns', 'schedules', newProof, body), 'unknown-key');
    assert.equal(
      typeof verifyRecord(resolveRecordSigning(KEY)!, 'ns', 'schedules', newProof, body),
      'object',
    );
  });
});

describe('the replay guard', () => {
  it('accepts each (writer, seq) once, a late one within its window, and no old one', () => {
    const guard = new ReplayGuard();
    const w = 'ab'.repeat(8);
    assert.equal(guard.accept({ writer: w, seq: 1 }), true);
    assert.equal(guard.accept({ writer: w, seq: 1 }), false);
    assert.equal(guard.accept({ writer: w, seq: 3 }), true);
    assert.equal(guard.accept({ writer: w, seq: 2 }), true);
    assert.equal(guard.accept({ writer: w, seq: 2 }), false);
    assert.equal(guard.accept({ writer: 'cd'.repeat(8), seq: 1 }), true);
    assert.equal(guard.accept({ writer: w, seq: 10_000 }), true);
    assert.equal(guard.accept({ writer: w, seq: 4 }), false);
  });
});

describe('record trust', () => {
  it('applies a signed record once, skips a replay, an unsigned record and a forgery, and counts each', () => {
    const trust = new RecordTrust('ns', resolveRecordSigning(KEY), createSilentLogger());
    const reader = trust.reader('job-control');
    const headers = trust.proof('job-control', body);
    assert.equal(reader.accept(body, headers), true);
    assert.equal(reader.accept(body, headers), false);
    assert.equal(reader.accept(body, {}), false);
    assert.equal(reader.accept(Buffer.from('{}'), headers), false);
    assert.equal(
      trust.reader('job-control').accept(body, headers),
      true,
      'a new reader reads the stream anew',
    );
    assert.deepEqual(trust.skipped(), {
      isSigning: true,
      skipped: 3,
      byRole: { 'job-control': { replayed: 1, unsigned: 1, 'bad-signature': 1 } },
    });
  });

  it('without a key signs nothing and accepts what the shape checks accept', () => {
    const trust = new RecordTrust('ns', undefined, createSilentLogger());
    assert.deepEqual(trust.proof('history', body), {});
    assert.equal(trust.reader('history').accept(body, undefined), true);
  });

  it('logs skipped records at most once per stream every ten seconds', () => {
    const lines: unknown[] = [];
    const log = { ...createSilentLogger(), warn: (...args: unknown[]) => lines.push(args) } as never;
    const trust = new RecordTrust('ns', resolveRecordSigning(KEY), log);
    const reader = trust.reader('schedules');
    for (let i = 0; i < 1000; i++) reader.accept(body, {});
    trust.reader('history').skip('malformed');
    assert.equal(lines.length, 2);
    assert.equal(trust.skipped().skipped, 1001);
  });
});

describe('a key setting that disagrees', () => {
  it('is reported once by a process without a key that reads signed records', () => {
    const lines: unknown[] = [];
    const log = { warn: (...args: unknown[]) => lines.push(args) } as never;
    const signed = new RecordTrust('ns', resolveRecordSigning(KEY), createSilentLogger());
    const unsigned = new RecordTrust('ns', undefined, log);
    const reader = unsigned.reader('schedules');
    for (let i = 0; i < 3; i++) assert.equal(reader.accept(body, signed.proof('schedules', body)), true);
    assert.equal(lines.length, 1);
  });
});

describe('rolling a key out', () => {
  it('applies unsigned records while acceptUnsigned is on, never badly signed ones', () => {
    const rolling = new RecordTrust(
      'ns',
      resolveRecordSigning({ keys: KEY, acceptUnsigned: true }),
      createSilentLogger(),
    );
    const reader = rolling.reader('job-control');
    assert.equal(reader.accept(body, undefined), true);
    const other = new RecordTrust('ns', resolveRecordSigning(OTHER), createSilentLogger());
    assert.equal(reader.accept(body, other.proof('job-control', body)), false);
    assert.equal(reader.accept(body, rolling.proof('job-control', body)), true);
  });

  it('refuses an object form with an unknown key, no keys or a non-boolean acceptUnsigned', () => {
    assert.throws(
      () => resolveRecordSigning({ keys: KEY, accept: true } as never),
      /signingKey.accept is not an option/,
    );
    assert.throws(() => resolveRecordSigning({} as never), /signingKey.keys must be a key/);
    assert.throws(
      () => resolveRecordSigning({ keys: KEY, acceptUnsigned: 'yes' } as never),
      /signingKey.acceptUnsigned must be a boolean/,
    );
    assert.throws(() => resolveRecordSigning({ keys: ['short'] }), /signingKey.keys\[0\]/);
  });
});
