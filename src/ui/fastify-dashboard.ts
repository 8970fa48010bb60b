import type { IncomingMessage, ServerResponse } from 'node:http';
import { createDashboard } from './dashboard-handler';
import type { DashboardOptions } from './options';

/**
 * The part of a Fastify (5) instance the plugin uses. Structural, so that warren's type declarations
 * do not need `fastify` (an optional peer dependency) installed.
 */
export interface FastifyScope {
  readonly prefix: string;
  removeAllContentTypeParsers(): unknown;
  addContentTypeParser(
    contentType: string,
    parser: (request: unknown, payload: unknown, done: (error: Error | null, body?: unknown) => void) => void,
  ): unknown;
  all(path: string, handler: (request: FastifyRequestLike, reply: FastifyReplyLike) => void): unknown;
  addHook(name: 'onClose', hook: () => Promise<void>): unknown;
}

/** The part of a Fastify request the plugin uses. */
export interface FastifyRequestLike {
  readonly raw: IncomingMessage;
}

/** The part of a Fastify reply the plugin uses. */
export interface FastifyReplyLike {
  hijack(): unknown;
  readonly raw: ServerResponse;
}

/**
 * The dashboard as a Fastify (5) plugin: `app.register(fastifyDashboard({ ops, authorize }), { prefix:
 * '/warren' })`. Inside its own (encapsulated) scope the plugin hands requests to the plain handler with
 * the prefix taken off, and leaves bodies unparsed for it.
 */
export function fastifyDashboard(options: DashboardOptions) {
  const handler = createDashboard(options);
  return async function warrenDashboard(fastify: FastifyScope): Promise<void> {
    const prefix = fastify.prefix;
    fastify.removeAllContentTypeParsers();
    fastify.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    const serve = (request: FastifyRequestLike, reply: FastifyReplyLike) => {
      reply.hijack();
      const raw = request.raw as IncomingMessage & { originalUrl?: string };
      const url = raw.url ?? '/';
      raw.originalUrl = url;
      raw.url = url.startsWith(prefix) ? url.slice(prefix.length) || '/' : url;
      void handler(raw, reply.raw);
    };
    fastify.all('/', serve);
    fastify.all('/*', serve);
    fastify.addHook('onClose', async () => handler.close());
  };
}
