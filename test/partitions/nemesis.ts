/**
 * The nemesis of the partition suite: which faults a shape makes, and when. Pure: a shape, the node count,
 * the run's length and a seed give the same schedule every time (netsplit.sh and run.ts carry it out).
 *
 * The shapes are RabbitMQ's own Jepsen nemeses (random halves, halves, majorities ring, random node) and the
 * issue's others: the node of the cron leader's process isolated, a one-way link, a flapping link, a lossy
 * link, a broker frozen with SIGSTOP, a worker's clock skewed and a disk alarm. Each fault lasts 10 s or 30 s
 * (drawn from the seed, as the Jepsen tests' partition durations), then everything heals for 10 s, and again,
 * until the shape's time is up.
 *
 * Endpoints: nodes n1..nN and the workload's processes c1..c3, each "on the side of" its home node (c1 with n1,
 * c2 with n2, c3 with the last node): a cut that separates two nodes separates their clients alike. A grudge
 * `{ n1: ['n2'] }` means n1 drops what comes from n2 (one way); a symmetric cut is a grudge both ways.
 */
import { randomIndex, seededRandom, shuffled } from './random';

export const SHAPES = [
  'random-halves',
  'halves',
  'majorities-ring',
  'random-node',
  'isolated-leader',
  'one-way',
  'flapping',
  'lossy',
  'pause',
  'clock-skew',
  'disk-alarm',
] as const;
export type Shape = (typeof SHAPES)[number];

/** endpoint -> the endpoints it drops packets from, each with a drop probability (1: all) */
export type Grudges = Readonly<Record<string, readonly { readonly from: string; readonly p: number }[]>>;

export type NemesisOp =
  | { readonly op: 'cut'; readonly label: string; readonly grudges: Grudges }
  /** isolate the node whose client leads the cron election now (resolved when it runs) */
  | { readonly op: 'isolate-leader' }
  | { readonly op: 'heal' }
  | { readonly op: 'pause'; readonly node: number }
  | { readonly op: 'resume'; readonly node: number }
  | { readonly op: 'skew'; readonly client: string; readonly ms: number }
  | { readonly op: 'disk-alarm'; readonly node: number; readonly on: boolean };

export interface NemesisStep {
  /** ms after the run's start */
  readonly atMs: number;
  readonly op: NemesisOp;
}

export const CLIENTS = ['c1', 'c2', 'c3'] as const;

/** The node a client sits beside: c1 with n1, c2 with n2, c3 with the last node. */
export function homeNode(client: string, nodes: number): number {
  return client === 'c1' ? 1 : client === 'c2' ? 2 : nodes;
}

export const nodeNames = (nodes: number) => Array.from({ length: nodes }, (_, i) => `n${i + 1}`);

/**
 * Node grudges extended to the clients: a client drops what its home node drops, and a node that drops a node
 * drops that node's clients too.
 */
export function withClients(nodeGrudges: Grudges, nodes: number): Grudges {
  const result: Record<string, { from: string; p: number }[]> = {};
  const add = (to: string, from: string, p: number) => {
    result[to] = [...(result[to] ?? []), { from, p }];
  };
  const clientsOf = (node: string) => CLIENTS.filter((c) => `n${homeNode(c, nodes)}` === node);
  for (const [to, list] of Object.entries(nodeGrudges))
    for (const { from, p } of list) {
      add(to, from, p);
      for (const client of clientsOf(from)) add(to, client, p);
      for (const client of clientsOf(to)) add(client, from, p);
    }
  return result;
}

/** A symmetric cut into groups of nodes: every node drops every node of the other groups. */
export function cutGroups(groups: readonly (readonly string[])[], nodes: number, p = 1): Grudges {
  const grudges: Record<string, { from: string; p: number }[]> = {};
  for (const group of groups)
    for (const node of group)
      grudges[node] = groups.filter((g) => g !== group).flatMap((g) => g.map((from) => ({ from, p })));
  return withClients(grudges, nodes);
}

/** Jepsen's majorities ring: on a random ring each node sees a majority (itself and the next ones), none the same. */
export function majoritiesRing(random: () => number, nodes: number): Grudges {
  const ring = shuffled(random, nodeNames(nodes));
  const majority = Math.floor(nodes / 2) + 1;
  const grudges: Record<string, { from: string; p: number }[]> = {};
  ring.forEach((node, i) => {
    const sees = new Set(Array.from({ length: majority }, (_, k) => ring[(i + k) % nodes]));
    grudges[node] = ring.filter((other) => !sees.has(other)).map((from) => ({ from, p: 1 }));
  });
  return withClients(grudges, nodes);
}

/** The schedule of one shape. */
export function planNemesis(shape: Shape, nodes: number, durationMs: number, seed: number): NemesisStep[] {
  const random = seededRandom(seed);
  const names = nodeNames(nodes);
  const steps: NemesisStep[] = [];
  const warmUpMs = 5_000;
  const healMs = 10_000;
  let at = warmUpMs;
  while (true) {
    const faultMs = random() < 0.5 ? 10_000 : 30_000;
    if (at + faultMs > durationMs) break;
    const node = 1 + randomIndex(random, nodes);
    const others = names.filter((n) => n !== `n${node}`);
    const push = (offsetMs: number, op: NemesisOp) => steps.push({ atMs: at + offsetMs, op });
    switch (shape) {
      case 'random-halves':
      case 'halves': {
        const order = shape === 'halves' ? names : shuffled(random, names);
        const half = Math.floor(nodes / 2);
        push(0, {
          op: 'cut',
          label: shape === 'halves' ? 'halves' : 'random halves',
          grudges: cutGroups([order.slice(0, half), order.slice(half)], nodes),
        });
        break;
      }
      case 'majorities-ring':
        push(0, { op: 'cut', label: 'majorities ring', grudges: majoritiesRing(random, nodes) });
        break;
      case 'random-node':
        push(0, { op: 'cut', label: `n${node} isolated`, grudges: cutGroups([[`n${node}`], others], nodes) });
        break;
      case 'isolated-leader':
        push(0, { op: 'isolate-leader' });
        break;
      case 'one-way':
        push(0, {
          op: 'cut',
          label: `n${node} deaf to the others (one way)`,
          grudges: withClients({ [`n${node}`]: others.map((from) => ({ from, p: 1 })) }, nodes),
        });
        break;
      case 'flapping':
        for (let offset = 0; offset + 2_000 <= faultMs; offset += 4_000) {
          push(offset, {
            op: 'cut',
            label: `n${node} flapping`,
            grudges: cutGroups([[`n${node}`], others], nodes),
          });
          push(offset + 2_000, { op: 'heal' });
        }
        break;
      case 'lossy':
        push(0, {
          op: 'cut',
          label: `n${node} links lose 30%`,
          grudges: cutGroups([[`n${node}`], others], nodes, 0.3),
        });
        break;
      case 'pause':
        push(0, { op: 'pause', node });
        push(faultMs, { op: 'resume', node });
        break;
      case 'clock-skew':
        // behind by 2-8 s: as the leader it fires ticks another leader already fired (same ids)
        push(0, { op: 'skew', client: 'c2', ms: -(2_000 + randomIndex(random, 6_000)) });
        push(100, { op: 'isolate-leader' });
        push(faultMs, { op: 'skew', client: 'c2', ms: 0 });
        break;
      case 'disk-alarm':
        push(0, { op: 'disk-alarm', node, on: true });
        push(faultMs, { op: 'disk-alarm', node, on: false });
        break;
    }
    push(faultMs, { op: 'heal' });
    at += faultMs + healMs;
  }
  return steps.sort((a, b) => a.atMs - b.atMs);
}

/** netsplit.sh's SPEC for grudges: "n1<n2,c2@0.3 n2<n1". */
export function grudgeSpec(grudges: Grudges): string {
  return Object.entries(grudges)
    .filter(([, list]) => list.length > 0)
    .map(([to, list]) => `${to}<${list.map(({ from, p }) => (p >= 1 ? from : `${from}@${p}`)).join(',')}`)
    .join(' ');
}
