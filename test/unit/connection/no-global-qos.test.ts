import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Global QoS (`basic.qos` with global = true) is deprecated and refused by RabbitMQ 4.3 by default; every
 * prefetch warren sets is per consumer. Read from the source: every `prefetch(` call passes `false`.
 */
function findRoot(): string {
  let dir = __dirname;
  while (!statSync(join(dir, 'package.json'), { throwIfNoEntry: false })) dir = dirname(dir);
  return dir;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('QoS', () => {
  it('is never global: every prefetch call in src passes global = false', () => {
    const calls: string[] = [];
    for (const file of sourceFiles(join(findRoot(), 'src'))) {
      for (const match of readFileSync(file, 'utf8').matchAll(/\.prefetch\(([^)]*)\)/g))
        calls.push(match[1]!);
    }
    assert.ok(
      calls.length >= 3,
      `expected the consumer, leader and limiter prefetches, found ${calls.length}`,
    );
    for (const args of calls) assert.match(args, /^[^,]+,\s*false$/, `prefetch(${args})`);
  });
});
