import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createDashboard } from './dashboard-handler';
import type { DashboardOptions } from './options';

/**
 * The dashboard as a Fastify (5) plugin: `app.register(fastifyDashboard({ ops, authorize }), { prefix:
 * '/warren' })`. Fastify is imported for its types only. Inside its own (encapsulated) scope the plugin
 * hands requests to the plain handler with the prefix taken off, and leaves bodies unparsed for it.
 */
export function fastifyDashboard(options: DashboardOptions) {
  const handler = createDashboard(options);
  return async function warrenDashboard(fastify: FastifyInstance): Promise<void> {
    const prefix = fastify.prefix;
    fastify.removeAllContentTypeParsers();
    fastify.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    const serve = (request: FastifyRequest, reply: FastifyReply) => {
      reply.hijack();
      const raw = request.raw as typeof request.raw & { originalUrl?: string };
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
