// The walk of one delivery through warren's files, from the amqplib consume callback
// (QueueConsumer.onMessage) to its ack, retry republish or dead letter: which files, how many calls cross
// from one file to another, how often job-processor.ts is entered, and the widest declared signature in
// src/worker/ on the way. A measuring tool for the closing note of issue 29, not a test.
//
//   npm run build && node scripts/delivery-walk.cjs [--tree]     (RabbitMQ on WALK_AMQP_URL or 127.0.0.1:5672)
//
// How: every function and class method that a file of dist/src exports is wrapped (compiled CommonJS calls
// them through the exports object or the prototype), and AsyncLocalStorage attributes each call to its
// caller across awaits. Closures (arrow functions inside methods) are not seen, and connection/ is a leaf:
// the walk ends where the confirm publisher takes the copy.
const path = require('node:path');
const { AsyncLocalStorage } = require('node:async_hooks');

const root = path.resolve(__dirname, '..');
const dist = path.join(root, 'dist', 'src');
const warren = require(path.join(dist, 'index.js'));
const testing = require(path.join(dist, 'testing', 'index.js'));
const { planOf } = require(path.join(dist, 'warren', 'index.js'));
const amqp = require('amqplib');

const URL = process.env.WALK_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const PROCESSOR = 'worker/job-processor.ts';
const DELIVERY = 'worker/delivery.ts';
const showTree = process.argv.includes('--tree');
const als = new AsyncLocalStorage();
const roots = [];
let recording = false;

function wrap(fn, file, name) {
  return function walked(...args) {
    const parent = als.getStore();
    if (!recording || parent?.leaf || (!parent && name !== 'QueueConsumer.onMessage'))
      return fn.apply(this, args);
    const frame = { file, name, params: fn.length, children: [], leaf: file.startsWith('connection/') };
    (parent ? parent.children : roots).push(frame);
    return als.run(frame, () => fn.apply(this, args));
  };
}

for (const [file, loaded] of Object.entries(require.cache)) {
  if (!file.startsWith(dist) || file.endsWith('index.js')) continue;
  const rel = path.relative(dist, file).replace(/\.js$/, '.ts');
  const exported = loaded.exports;
  for (const key of Object.keys(exported)) {
    const descriptor = Object.getOwnPropertyDescriptor(exported, key);
    if (!descriptor || typeof descriptor.value !== 'function') continue;
    const value = descriptor.value;
    if (!/^class\s/.test(Function.prototype.toString.call(value))) {
      if (descriptor.writable) exported[key] = wrap(value, rel, key);
      continue;
    }
    for (const method of Object.getOwnPropertyNames(value.prototype)) {
      const own = Object.getOwnPropertyDescriptor(value.prototype, method);
      if (method !== 'constructor' && typeof own?.value === 'function')
        value.prototype[method] = wrap(own.value, rel, `${key}.${method}`);
    }
  }
}

function frames(frame, parentFile, out = []) {
  out.push({ ...frame, parentFile });
  for (const child of frame.children) frames(child, frame.file, out);
  return out;
}

/**
 * The same walk with the Delivery's own methods (its settle-once ack/requeue/reject and field setters)
 * folded into their callers: what the settle closures of queue-consumer.ts were before, which no wrapper
 * sees. Their callees count as called from the Delivery's caller.
 */
function withoutDelivery(frame) {
  const children = frame.children.flatMap((child) =>
    child.file === DELIVERY ? withoutDelivery(child).children : [withoutDelivery(child)],
  );
  return { ...frame, children };
}

function print(frame, depth = 0) {
  console.log(`${'  '.repeat(depth)}${frame.file} ${frame.name}`);
  for (const child of frame.children) print(child, depth + 1);
}

function count(delivery) {
  const all = frames(delivery);
  const files = [...new Set(all.map((f) => f.file))];
  const hops = all.filter((f) => f.parentFile !== undefined && f.parentFile !== f.file).length;
  const processor = all.filter((f) => f.file === PROCESSOR);
  const callsIn = processor.filter((f) => f.parentFile !== PROCESSOR).length;
  const returns = processor.reduce((n, f) => n + f.children.filter((c) => c.file !== PROCESSOR).length, 0);
  const widest = Math.max(...all.filter((f) => f.file.startsWith('worker/')).map((f) => f.params));
  return (
    `${files.length} files, ${all.length} calls, ${hops} cross-file calls; ${PROCESSOR} entered ` +
    `${callsIn + returns} times (${callsIn} from other files calling in, ${returns} returns from them); ` +
    `widest worker/ signature on the walk: ${widest} parameters\n  files: ${files.join(', ')}`
  );
}

function report(label, delivery) {
  console.log(`${label}: ${count(delivery)}`);
  console.log(`  without the Delivery's own methods: ${count(withoutDelivery(delivery))}`);
  if (showTree) print(delivery, 1);
}

const ran = [];
class Completes {
  async handle() {
    ran.push('ok');
  }
}
class Fails {
  async handle() {
    ran.push('fail');
    throw new Error('walk: fails every attempt');
  }
}
warren.Job('walk.ok', { queue: 'walk' })(Completes);
warren.Job('walk.fail', { queue: 'walk', attempts: 2, backoff: { type: 'fixed', delayMs: 100 } })(Fails);

async function scenario(labels, act, isDone) {
  roots.length = 0;
  recording = true;
  await act();
  const deadline = Date.now() + 10_000;
  while (!isDone() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  await new Promise((resolve) => setTimeout(resolve, 300)); // the batched ack and the republish confirm
  recording = false;
  for (const [i, delivery] of roots.entries()) report(labels[i] ?? `delivery ${i + 1}`, delivery);
}

async function main() {
  const namespace = testing.testNamespace();
  const w = await warren.createWarren({
    ...testing.testWarrenOptions({ url: URL, namespace }),
    topology: warren.defineTopology({ queues: { walk: {} } }),
    handlers: [new Completes(), new Fails()],
  });
  await w.start();
  const plan = planOf(w);
  const queue = plan.queues.find((q) => q.key === 'walk').name;
  try {
    await scenario(
      ['completed -> ack'],
      () => w.publish('walk.ok', {}),
      () => ran.includes('ok'),
    );
    await scenario(
      ['failed attempt 1 -> retry republish', 'failed last attempt -> dead letter'],
      () => w.publish('walk.fail', {}),
      () => ran.filter((r) => r === 'fail').length >= 2,
    );
    const connection = await amqp.connect(URL);
    const channel = await connection.createConfirmChannel();
    await scenario(
      ['undecodable body -> dead letter'],
      async () => {
        channel.sendToQueue(queue, Buffer.from('{not json'), { type: 'walk.ok', messageId: 'walk-1' });
        await channel.waitForConfirms();
      },
      () => false,
    );
    await connection.close();
  } finally {
    await w.close({ graceMs: 500 });
    const connection = await amqp.connect(URL);
    const channel = await connection.createChannel();
    channel.on('error', () => undefined);
    for (const q of plan.queues) await channel.deleteQueue(q.name).catch(() => undefined);
    for (const e of plan.exchanges) await channel.deleteExchange(e.name).catch(() => undefined);
    await connection.close().catch(() => undefined);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
