import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseControlReply, parseControlRequest } from '../../../src/process-control';
import { WARREN_VERSION } from '../../../src/core';

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

/** A status reply of a process with these queues and nothing else. */
const statusReply = (queues: unknown[]) => ({
  v: 1,
  command: 'status',
  process: {
    id: 'a',
    host: 'h',
    pid: 1,
    version: '0.1.0',
    startedAt: '',
    connected: true,
    queues,
    breakers: [],
    isLeader: false,
    schedules: [],
  },
});

describe('control protocol', () => {
  it('accepts status, sync-pause and sync-remove requests', () => {
    assert.deepEqual(parseControlRequest(json({ v: 1, command: 'status' })), { v: 1, command: 'status' });
    assert.deepEqual(parseControlRequest(json({ v: 1, command: 'sync-remove', t: 5 })), {
      v: 1,
      command: 'sync-remove',
      t: 5,
    });
    assert.deepEqual(parseControlRequest(json({ v: 1, command: 'sync-pause', queue: 'email' })), {
      v: 1,
      command: 'sync-pause',
      queue: 'email',
    });
  });

  it('refuses malformed requests with a reason instead of throwing', () => {
    const refused = (content: Buffer) => {
      const parsed = parseControlRequest(content);
      assert.ok('refused' in parsed, `accepted ${content.toString().slice(0, 40)}`);
      return parsed.refused;
    };
    assert.equal(refused(Buffer.from('{oops')), 'not JSON');
    assert.equal(refused(json(null)), 'not an object');
    assert.equal(refused(json([1])), 'not an object');
    assert.match(refused(json({ v: 2, command: 'status' })), /unsupported version 2/);
    assert.match(refused(json({ v: 1, command: 'exit' })), /unknown command "exit"/);
    assert.match(refused(json({ v: 1, command: 'sync-pause' })), /needs a queue key/);
    assert.match(refused(json({ v: 1, command: 'sync-pause', queue: 'a b' })), /needs a queue key/);
    assert.match(refused(json({ v: 1, command: 'sync-pause', queue: 'x'.repeat(201) })), /needs a queue key/);
    assert.match(refused(Buffer.alloc(70_000, 0x20)), /larger than/);
  });

  it('drops replies that are not a process status', () => {
    assert.equal(parseControlReply(Buffer.from('nope')), undefined);
    assert.equal(parseControlReply(json({ v: 1, command: 'status', process: { id: 1 } })), undefined);
    assert.equal(parseControlReply(json(statusReply([])))?.process.id, 'a');
  });

  it("takes a queue's per-key limit report only when every count and key is well formed", () => {
    const withLimits = (keyLimits: unknown) =>
      statusReply([
        { key: 'exports', consuming: true, paused: false, holders: [], activeJobs: 2, keyLimits },
      ]);
    const good = { held: 4, deferred: 0, busiestKeys: [{ key: 'acme', running: 1, recentStarts: 3 }] };
    assert.deepEqual(parseControlReply(json(withLimits(good)))?.process.queues[0]?.keyLimits, good);
    for (const bad of [
      { ...good, held: -1 },
      { ...good, deferred: 1.5 },
      { ...good, busiestKeys: [{ key: 'x'.repeat(256), running: 1, recentStarts: 0 }] },
      { ...good, busiestKeys: [{ key: 'acme', running: '1', recentStarts: 0 }] },
      { held: 1, deferred: 0 },
    ])
      assert.equal(parseControlReply(json(withLimits(bad))), undefined, JSON.stringify(bad).slice(0, 80));
  });

  it('reports the version package.json has', () => {
    let dir = __dirname;
    while (!existsSync(join(dir, 'package.json'))) dir = join(dir, '..');
    assert.equal(WARREN_VERSION, JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version);
  });
});
