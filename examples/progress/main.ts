/**
 * A web page shows a long job's progress over server-sent events: `POST /exports` publishes an export
 * job, `GET /exports/:id/events` streams its `progress` events and ends with `completed` (or `failed`).
 * The worker runs in the same process here; with several processes, serve the page from any of them and
 * read `ops.job(id).progress` from the job history, or run the worker beside the web server.
 * Run with `node dist/examples/progress/main.js` (it starts the server, follows one export as a
 * browser would, and exits).
 */
import { createServer, get, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createWarren, defineTopology, Job, type JobContext, type JobHandler, type Warren } from '../../src';

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

/** Streams one job's events to one browser until the job ends or the browser leaves. */
function streamJob(warren: Warren, jobId: string, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (event: string, data: unknown) =>
    res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  const onProgress = (e: { jobId: string; progress: unknown }) => {
    if (e.jobId === jobId) send('progress', e.progress);
  };
  const onCompleted = (e: { jobId: string; result: unknown }) => {
    if (e.jobId !== jobId) return;
    send('completed', e.result);
    stop();
  };
  const onFailed = (e: { jobId: string; willRetry: boolean }) => {
    if (e.jobId !== jobId || e.willRetry) return;
    send('failed', {});
    stop();
  };
  const stop = () => {
    warren.off('progress', onProgress);
    warren.off('completed', onCompleted);
    warren.off('failed', onFailed);
    res.end();
  };
  warren.on('progress', onProgress);
  warren.on('completed', onCompleted);
  warren.on('failed', onFailed);
  res.on('close', stop);
}

function serve(warren: Warren) {
  return createServer((req: IncomingMessage, res: ServerResponse) => {
    const events = /^\/exports\/([\w-]+)\/events$/.exec(req.url ?? '');
    if (req.method === 'POST' && req.url === '/exports') {
      warren.publish('export.csv', { rows: 150 }).then(
        (job) => res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify(job)),
        () => res.writeHead(503).end(),
      );
    } else if (req.method === 'GET' && events) streamJob(warren, events[1]!, res);
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

async function main(): Promise<void> {
  const warren = await createWarren({
    url,
    namespace: 'warren-example-progress',
    topology,
    handlers: [new ExportCsv()],
    connection: { connectTimeoutMs: 3000 },
  });
  await warren.start();
  const server = serve(warren).listen(0);
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const { events, last } = await followOneExport((server.address() as AddressInfo).port);
    const progress = events.filter((e) => e === 'progress').length;
    console.log(`done: ${progress} progress events, then ${events.at(-1)} (${last})`);
  } finally {
    server.close();
    await warren.deleteTopology();
    await warren.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
