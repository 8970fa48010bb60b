// npm run bench -- profile-summary <file.cpuprofile> [--top=N]
// Self time by function, and total (inclusive) time for the functions that matter most.
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
}

function main(): void {
  const [file, ...rest] = process.argv.slice(2);
  if (!file) throw new Error('usage: npm run bench -- profile-summary <file.cpuprofile> [--top=N]');
  const top = Number(rest.find((a) => a.startsWith('--top='))?.slice(6) ?? 30);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totalHits = profile.nodes.reduce((sum, n) => sum + n.hitCount, 0);
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();

  const label = (n: ProfileNode) => {
    const url = n.callFrame.url.replace(/^.*\/(node_modules\/|dist\/)/, '$1');
    return `${n.callFrame.functionName || '(anonymous)'} ${url}:${n.callFrame.lineNumber + 1}`;
  };
  // Inclusive time counts a function once per stack even when it recurses.
  const walk = (node: ProfileNode, onStack: Set<string>): number => {
    const key = label(node);
    self.set(key, (self.get(key) ?? 0) + node.hitCount);
    let hits = node.hitCount;
    const fresh = !onStack.has(key);
    if (fresh) onStack.add(key);
    for (const child of node.children ?? []) hits += walk(byId.get(child)!, onStack);
    if (fresh) {
      onStack.delete(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + hits);
    }
    return hits;
  };
  walk(profile.nodes[0]!, new Set());

  const pct = (hits: number) => `${((hits / totalHits) * 100).toFixed(1).padStart(5)} %`;
  const print = (title: string, table: Map<string, number>) => {
    console.log(`\n${title}`);
    for (const [key, hits] of [...table].sort((a, b) => b[1] - a[1]).slice(0, top))
      console.log(`${pct(hits)}  ${key}`);
  };
  console.log(
    `${file}: ${((profile.endTime - profile.startTime) / 1000).toFixed(0)} ms, ${totalHits} samples`,
  );
  print('self time', self);
  print('inclusive time', inclusive);
}

/** The suite's entry (bench/main.ts): its options are `process.argv.slice(2)`, which the entry point sets. */
export async function run(): Promise<void> {
  main();
}
