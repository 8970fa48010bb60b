import type { IncomingMessage, ServerResponse } from 'node:http';
import { redactCredentials, type GraphRange, type WarrenOps } from '../ops';
import { chartAssets } from './chart-assets';
import { ACTIONS, runAction } from './dashboard-actions';
import { openEventStream, readJson, send, sendJson } from './http-io';
import { letterFilter } from './letter-query';
import { isAllowed, resolveDashboardOptions, type DashboardAction, type DashboardOptions } from './options';
import { PAGE_HTML } from './page-html';
import { PAGE_SCRIPT } from './page-script';
import { PAGE_STYLE } from './page-style';
import { type Caller, CSRF_HEADER, Refusal, RequestGuard } from './request-guard';
import { SnapshotCache } from './snapshot-cache';

/** A Node request handler; `next` (Express, Connect) is called for paths the dashboard does not serve. */
export interface DashboardHandler {
  (request: IncomingMessage, response: ServerResponse, next?: (error?: unknown) => void): Promise<void>;
  /** The shared snapshot (its `refreshes` counts broker reads). */
  readonly snapshots: SnapshotCache;
  /** Ends the event streams and the refresh timer (the ops API stays open: it is yours). */
  close(): void;
}

const LETTER_LIMIT = 200;

/**
 * The dashboard as a framework-neutral request handler over the operations API: the page and its assets
 * (inside the package), JSON endpoints, server-sent events from one shared snapshot, and actions gated by
 * role, CSRF token and Origin. Mount it anywhere (paths are relative to where it is mounted).
 *
 * @example
 * const dashboard = createDashboard({ ops: createOps(config), authorize: (req) => roleFromSession(req) });
 * http.createServer((req, res) => dashboard(req, res)).listen(3000, '127.0.0.1');
 */
export function createDashboard(input: DashboardOptions): DashboardHandler {
  const options = resolveDashboardOptions(input);
  const guard = new RequestGuard(options);
  const snapshots = new SnapshotCache(options.ops, options.refreshMs);
  const streams = new Map<ServerResponse, string>();
  const parts: DashboardParts = { options, guard, snapshots, streams };

  const handler = (async (request, response, next) => {
    const path = new URL(request.url ?? '/', 'http://dashboard.invalid').pathname;
    try {
      guard.checkHost(request);
      const caller = await guard.caller(request);
      const known = await route(parts, request, response, path, caller);
      if (known === undefined && !response.headersSent) {
        if (next) return next();
        sendJson(response, 404, { error: `nothing at ${path}` });
      }
    } catch (error) {
      sendFailure(response, error);
    }
  }) as DashboardHandler;
  Object.defineProperty(handler, 'snapshots', { value: snapshots });
  handler.close = () => {
    snapshots.close();
    for (const response of streams.keys()) response.end();
    streams.clear();
  };
  return handler;
}

/** What every request of one dashboard shares. */
interface DashboardParts {
  readonly options: ReturnType<typeof resolveDashboardOptions>;
  readonly guard: RequestGuard;
  readonly snapshots: SnapshotCache;
  /** Every open event stream, with the caller it is counted against (`who`). */
  readonly streams: Map<ServerResponse, string>;
}

/** Undefined when the dashboard serves nothing at `path`. */
async function route(
  parts: DashboardParts,
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  caller: Caller,
) {
  const { options, guard, snapshots } = parts;
  if (request.method === 'POST' && path.startsWith('/api/actions/')) {
    const action = path.slice('/api/actions/'.length) as DashboardAction;
    if (!ACTIONS.includes(action)) throw new Refusal(404, `no action ${action}`);
    guard.checkMutation(request);
    const result = await runAction(options, caller, action, await readJson(request));
    snapshots.invalidate();
    return sendJson(response, 200, result);
  }
  if (request.method !== 'GET' && request.method !== 'HEAD') throw new Refusal(405, 'method not allowed');
  if (path === '/' || path === '') return sendPage(request, response);
  if (path === '/app.js') return send(response, 200, 'text/javascript; charset=utf-8', PAGE_SCRIPT);
  if (path === '/app.css') return send(response, 200, 'text/css; charset=utf-8', PAGE_STYLE);
  const asset = chartAsset(path);
  if (asset) return send(response, 200, asset.type, asset.body);
  if (path === '/api/session') {
    const session = guard.session(request);
    if (session.setCookie) response.setHeader('set-cookie', session.setCookie);
    return sendJson(response, 200, {
      role: caller.role,
      who: caller.who,
      csrf: guard.token(session.id),
      csrfHeader: CSRF_HEADER,
      permissions: options.permissions,
      ...(options.authorize === undefined && options.loopbackRole !== 'viewer'
        ? {
            notice:
              `Every loopback client is an ${options.loopbackRole} here: anyone with an account on this ` +
              `machine, and any process on it, can ${describeRights(options, options.loopbackRole)}.`,
          }
        : {}),
    });
  }
  if (path === '/api/snapshot')
    return send(response, 200, 'application/json; charset=utf-8', await snapshots.json());
  if (path === '/api/events') return stream(parts, response, caller);
  const jobEvents = /^\/api\/jobs\/(.+)\/events$/.exec(path);
  if (jobEvents) return streamJob(parts, response, caller, decodeURIComponent(jobEvents[1]!));
  return routeLookups(parts, request, response, path);
}

/** The read-only look-ups: dead letters and one job. */
async function routeLookups(
  { options: { ops } }: DashboardParts,
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
) {
  if (path === '/api/dead') {
    const url = new URL(request.url ?? '/', 'http://dashboard.invalid');
    const found = await ops.dead.search(letterFilter(Object.fromEntries(url.searchParams)));
    const letters = found.slice(-LETTER_LIMIT).reverse();
    return sendJson(response, 200, { total: found.length, letters });
  }
  const letter = /^\/api\/dead\/(\d+)$/.exec(path);
  if (letter) {
    const shown = await ops.dead.show(Number(letter[1]));
    if (!shown) throw new Refusal(404, `no dead letter at offset ${letter[1]}`);
    return sendJson(response, 200, shown);
  }
  if (path === '/api/aggregates') {
    const range = new URL(request.url ?? '/', 'http://dashboard.invalid').searchParams.get('range') ?? 'hour';
    if (!GRAPH_RANGES.includes(range as GraphRange))
      throw new Refusal(400, `range must be one of ${GRAPH_RANGES.join(', ')} (got ${range.slice(0, 40)})`);
    return sendJson(response, 200, await ops.aggregates(range as GraphRange));
  }
  const recent = /^\/api\/queues\/(.+)\/recent$/.exec(path);
  if (recent) {
    const found = await ops.recentJobs(decodeURIComponent(recent[1]!));
    return sendJson(response, 200, found ?? { isWritten: false });
  }
  const delayed = /^\/api\/queues\/(.+)\/delayed$/.exec(path);
  if (delayed)
    return sendJson(response, 200, await ops.delayed.dueNext({ queue: decodeURIComponent(delayed[1]!) }));
  const job = /^\/api\/jobs\/(.+)$/.exec(path);
  if (job) return sendJson(response, 200, await ops.job(decodeURIComponent(job[1]!)));
  return undefined;
}

const GRAPH_RANGES: readonly string[] = ['hour', 'day', 'week'] satisfies readonly GraphRange[];

/** The charting library and the graphs' script, by path. */
function chartAsset(path: string): { type: string; body: string } | undefined {
  if (path === '/vendor/uplot.js')
    return { type: 'text/javascript; charset=utf-8', body: chartAssets().script };
  if (path === '/vendor/uplot.css') return { type: 'text/css; charset=utf-8', body: chartAssets().style };
  if (path === '/graphs.js') return { type: 'text/javascript; charset=utf-8', body: chartAssets().graphs };
  return undefined;
}

/** The page, at the mount path with a trailing slash (its assets are relative to it). */
function sendPage(request: IncomingMessage, response: ServerResponse): void {
  const full = (request as { originalUrl?: string }).originalUrl ?? request.url ?? '/';
  const bare = full.split('?')[0]!;
  if (bare.endsWith('/')) send(response, 200, 'text/html; charset=utf-8', PAGE_HTML);
  else {
    response.writeHead(308, { location: `${bare}/` });
    response.end();
  }
}

/** The actions a role may take, for the page's notice. */
function describeRights(options: DashboardParts['options'], role: Caller['role']): string {
  const rights = ACTIONS.filter((action) => isAllowed(options.permissions, role, action));
  return rights.length ? rights.join(', ') : 'read everything';
}

/** Refuses a live view past the per-client or the dashboard's limit; else counts it. */
function admitStream(parts: DashboardParts, response: ServerResponse, caller: Caller): void {
  const { streams, options } = parts;
  const held = [...streams.values()].filter((who) => who === caller.who).length;
  if (held >= options.maxStreamsPerClient)
    throw new Refusal(
      429,
      `too many live views open (${held} of ${options.maxStreamsPerClient} for ${caller.who}): close a tab`,
    );
  if (streams.size >= options.maxStreams)
    throw new Refusal(503, `too many live views open on this dashboard (${options.maxStreams}): try later`);
  streams.set(response, caller.who);
}

/**
 * One job followed live: its events from every process (`ops.events`), each sent as a `job` event, with
 * the subscription's gap and reconnect notices; counted against the same limits as the overview's stream.
 */
async function streamJob(
  parts: DashboardParts,
  response: ServerResponse,
  caller: Caller,
  jobId: string,
): Promise<void> {
  admitStream(parts, response, caller);
  let subscription: Awaited<ReturnType<WarrenOps['events']['subscribe']>>;
  try {
    subscription = await parts.options.ops.events.subscribe({ jobId }, { maxLength: 1000 });
  } catch (error) {
    parts.streams.delete(response);
    throw error;
  }
  const emit = openEventStream(response);
  response.on('close', () => {
    parts.streams.delete(response);
    void subscription.close();
  });
  for await (const message of subscription) emit('job', JSON.stringify(message));
  response.end();
}

function stream(parts: DashboardParts, response: ServerResponse, caller: Caller): void {
  const { snapshots, streams } = parts;
  admitStream(parts, response, caller);
  const emit = openEventStream(response);
  const unsubscribe = snapshots.subscribe((_, json) => emit('snapshot', json));
  void snapshots.json().then(
    (json) => emit('snapshot', json),
    () => undefined,
  );
  response.on('close', () => {
    unsubscribe();
    streams.delete(response);
  });
}

function sendFailure(response: ServerResponse, error: unknown): void {
  if (response.headersSent) {
    response.end();
    return;
  }
  if (error instanceof Refusal) {
    sendJson(response, error.status, { error: error.reason });
    return;
  }
  const code = (error as { code?: unknown }).code;
  const status =
    code === 'UNKNOWN_QUEUE' || code === 'UNKNOWN_JOB' ? 400 : code === 'DEAD_LETTER_LOG_BUSY' ? 409 : 500;
  sendJson(response, status, {
    error: redactCredentials(error instanceof Error ? error.message : String(error)),
    ...(typeof code === 'string' ? { code } : {}),
  });
}
