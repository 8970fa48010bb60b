/**
 * A web page shows a long job's progress over server-sent events, served by a process that runs no
 * worker: `POST /exports` subscribes to a new job id's live events (`warren.events.subscribe`), then
 * publishes the export job; `GET /exports/:id/events` streams that subscription's `progress` events and
 * ends with `completed` (or `dead`). The worker is another OS process (this file, forked with `worker`):
 * nothing but broker messages reaches the web process. Subscribing before publishing misses nothing.
 * Run with `node dist/examples/progress/main.js` (it forks the worker, starts the server, follows one
 * export as a browser would, and exits).
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, get, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createWarren,
  defineTopology,
  Job,
  type JobContext,
  type JobEventSubscription,
  type JobHandler,
  type Warren,
} from '../../src';

const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const topology = defineTopology({ queues: { exports: {} } });

@Job('export.csv', { queue: 'exports', attempts: 1 })
class ExportCsv implements JobHandler<{ rows: number }> {
  async handle(data: { rows: number }, ctx: JobContext): Promise<{ file: string }> {
    for (let row = 1; row <= data.rows; row++) {
      await new Promise((resolve) => setTimeout(resolve, 2)); // writing one row
      ctx.progress({ percent: Math.round((row / data.rows) * 100) });
    }
    return { file: `/exports/${ctx.jobId}.csv` };
  }
}

const PAGE = `<!doctype html><progress id="bar" max="100" value="0"></progress><span id="msg"></span>
<script>
fetch('/exports', { method: 'POST' }).then((r) => r.json()).then(({ jobId }) => {
  const events = new EventSource('/exports/' + jobId + '/events');
  events.addEventListener('progress', (e) => { bar.value = JSON.parse(e.data).percent; });
  events.addEventListener('completed', (e) => { msg.textContent = JSON.parse(e.data).file; events.close(); });
  events.addEventListener('failed', (e) => { msg.textContent = 'failed'; events.close(); });
});
</script>`;

/** Subscriptions made by `POST /exports`, waiting for the browser to open the event stream. */
const waiting = new Map<string, JobEventSubscription>();

/** Subscribes to a new job id first, then publishes it: the stream cannot miss the job's first events. */
async function startExport(web: Warren): Promise<{ jobId: string }> {
  const jobId = `export-${randomUUID()}`;
  const subscription = await web.events.subscribe({ jobId });
  waiting.set(jobId, subscription);
  try {
    await web.publish('export.csv', { rows: 150 }, { jobId });
  } catch (error) {
    waiting.delete(jobId);
    await subscription.close();
    throw error;
  }
  return { jobId };
}

/** Streams one job's live events to one browser until the job ends or the browser leaves. */
async function streamJob(web: Warren, jobId: string, res: ServerResponse): Promise<void> {
  const subscription = waiting.get(jobId) ?? (await web.events.subscribe({ jobId }));
  waiting.delete(jobId);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.on('close', () => void subscription.close());
  const send = (event: string, data: unknown) =>
    res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  for await (const event of subscription) {
    if (event.kind === 'progress') send('progress', event.progress);
    else if (event.kind === 'completed') {
      send('completed', event.result);
      break;
    } else if (event.kind === 'dead') {
      send('failed', { reason: event.reason });
      break;
    }
  }
  res.end();
}

function serve(web: Warren) {
  return createServer((req: IncomingMessage, res: ServerResponse) => {
    const events = /^\/exports\/([\w-]+)\/events$/.exec(req.url ?? '');
    if (req.method === 'POST' && req.url === '/exports') {
      startExport(web).then(
        (job) => res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify(job)),
        () => res.writeHead(503).end(),
      );
    } else if (req.method === 'GET' && events) streamJob(web, events[1]!, res).catch(() => res.destroy());
    else if (req.method === 'GET' && req.url === '/')
      res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
    else res.writeHead(404).end();
  });
}

/** What the page's script does: start an export, then read its event stream to the end. */
async function followOneExport(port: number): Promise<{ events: string[]; last: string }> {
  const { jobId } = await new Promise<{ jobId: string }>((resolve, reject) => {
    const req = request({ port, path: '/exports', method: 'POST' }, (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve(JSON.parse(body)));
    });
    req.on('error', reject);
    req.end();
  });
  return new Promise((resolve, reject) => {
    get({ port, path: `/exports/${jobId}/events` }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => {
        const events = [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]!);
        resolve({ events, last: text.trim().split('\n').at(-1)! });
      });
    }).on('error', reject);
  });
}

const options = {
  url,
  namespace: 'warren-example-progress',
  topology,
  connection: { connectTimeoutMs: 3000 },
};

/** The worker process: runs the export jobs until its parent tells it to stop. */
async function runWorker(): Promise<void> {
  const worker = await createWarren({ ...options, handlers: [new ExportCsv()] });
  await worker.start();
  process.once('message', () => {
    void worker.close().finally(() => process.exit(0));
  });
  process.send?.('ready');
}

/** The web process: no handlers, so no worker; it publishes and follows jobs through live events. */
async function main(): Promise<void> {
  const worker = fork(__filename, ['worker'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('exit', (code) => reject(new Error(`the worker exited (${code})`)));
  });
  const web = await createWarren({ ...options, jobs: [ExportCsv] });
  const server = serve(web).listen(0);
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const { events, last } = await followOneExport((server.address() as AddressInfo).port);
    const progress = events.filter((e) => e === 'progress').length;
    console.log(`done: ${progress} progress events, then ${events.at(-1)} (${last})`);
  } finally {
    server.close();
    const stopped = new Promise((resolve) => worker.once('exit', resolve));
    worker.send('stop');
    await stopped;
    await web.deleteTopology();
    await web.close();
  }
}

(process.argv[2] === 'worker' ? runWorker() : main()).catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
