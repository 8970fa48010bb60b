import type { IncomingMessage, ServerResponse } from 'node:http';
import { Controller, Get, Inject, Req, Res, type Type } from '@nestjs/common';
import { ConfigurationError } from '../index';
import { WARREN_MODULE_OPTIONS, type ResolvedWarrenModuleOptions } from './module-options';

type MetricsHandler = (request: IncomingMessage, response: ServerResponse) => void;

/** The `/metrics` handler among the instrumentations (`warrenMetrics()` has one), found by its shape. */
function findHandler(options: ResolvedWarrenModuleOptions): MetricsHandler | undefined {
  const given = options.warren.instrumentation;
  const list = (Array.isArray(given) ? given : given ? [given] : []) as readonly object[];
  for (const item of list) {
    const handler = (item as { handler?: unknown }).handler;
    if (typeof handler === 'function') return handler as MetricsHandler;
  }
  return undefined;
}

/**
 * Checks, before warren connects, that a module given `metricsPath` has something to serve there.
 */
export function requireMetricsHandler(
  options: ResolvedWarrenModuleOptions,
  path: string | undefined,
): ResolvedWarrenModuleOptions {
  if (path !== undefined && findHandler(options) === undefined)
    throw new ConfigurationError(
      `WarrenModule metricsPath '${path}' needs warrenMetrics() (warren/observability) among instrumentation`,
    );
  return options;
}

/**
 * A controller serving the metrics of the module's `warrenMetrics()` at `path` (the `metricsPath` option),
 * on Express and on Fastify (whose reply wraps the Node response as `raw`).
 */
export function metricsController(path: string): Type<unknown> {
  @Controller()
  class WarrenMetricsController {
    private readonly serve: MetricsHandler;

    constructor(@Inject(WARREN_MODULE_OPTIONS) options: ResolvedWarrenModuleOptions) {
      this.serve = findHandler(requireMetricsHandler(options, path))!;
    }

    @Get(path)
    metrics(@Req() request: { raw?: IncomingMessage }, @Res() response: { raw?: ServerResponse }): void {
      this.serve((request.raw ?? request) as IncomingMessage, (response.raw ?? response) as ServerResponse);
    }
  }
  return WarrenMetricsController;
}
