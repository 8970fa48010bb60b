import type { FactoryProvider, ModuleMetadata } from '@nestjs/common';
import { ConfigurationError, type JobClass, type TopologyDeclaration, type WarrenOptions } from '../index';
import type { WarrenOps } from '../ops';
import type { DashboardOptions } from '../ui';

/**
 * `dashboard`: the web dashboard (warren/ui) mounted on the Nest app's Express adapter at `path`. Every
 * option of `expressDashboard` applies (`authorize`, `permissions`, `allowedHosts`, `audit`, ...);
 * without `authorize` it is read-only, answers direct loopback clients only (no proxied request) and
 * checks their Host; with `authorize` the Host is checked when `allowedHosts` is given.
 */
export interface WarrenDashboardModuleOptions extends Omit<DashboardOptions, 'ops'> {
  /** Where it is mounted, e.g. '/warren'. */
  readonly path: string;
  /**
   * The operations API it shows. Default: one the module creates from its own options (url, namespace,
   * the merged topology, jobs, deadLetterLog) and closes on shutdown.
   */
  readonly ops?: WarrenOps;
}

/**
 * What `WarrenModule.forRoot` takes: every `createWarren` option except `handlers`, which the module
 * finds itself among the app's providers (every class decorated with `@Job`).
 */
export interface WarrenModuleOptions extends Omit<WarrenOptions, 'handlers'> {
  /**
   * Start consuming when the application bootstraps. Default true. Set false in an app that only
   * publishes (an API in front of separate worker processes): it still declares the topology.
   */
  readonly startWorkers?: boolean;
  /**
   * Serve Prometheus metrics at this HTTP path (e.g. '/metrics') from the `warrenMetrics()` given in
   * `instrumentation`. Default: no route.
   */
  readonly metricsPath?: string;
  /** Mount the web dashboard on the app's HTTP adapter (Express). Default: not mounted. */
  readonly dashboard?: WarrenDashboardModuleOptions;
}

/** `WarrenModule.forRootAsync`: options from other providers, e.g. Nest's ConfigService. */
export interface WarrenModuleAsyncOptions {
  /** Modules that export what `inject` names (e.g. ConfigModule). */
  readonly imports?: ModuleMetadata['imports'];
  /** Providers handed to `useFactory`, in order. */
  readonly inject?: FactoryProvider['inject'];
  readonly useFactory: (...args: never[]) => WarrenModuleOptions | Promise<WarrenModuleOptions>;
  /**
   * Make Warren, WarrenPublisher and WarrenHealthIndicator injectable everywhere without importing the
   * module. Default true.
   */
  readonly isGlobal?: boolean;
  /**
   * Serve Prometheus metrics at this HTTP path from the `warrenMetrics()` the factory puts in
   * `instrumentation`. Given here, not by the factory: Nest needs its routes before the factory runs.
   */
  readonly metricsPath?: string;
}

/** `WarrenModule.forFeature`: what a feature module contributes to the app's one warren. */
export interface WarrenFeatureOptions {
  /**
   * Merged with the root topology and other features (`mergeTopologies`): the same key twice must be
   * identical.
   */
  readonly topology?: TopologyDeclaration;
  /** @Job classes this app publishes but does not run (their handlers live in another service). */
  readonly jobs?: readonly JobClass[];
}

export interface ResolvedWarrenModuleOptions {
  readonly startWorkers: boolean;
  readonly dashboard: WarrenDashboardModuleOptions | undefined;
  /** The rest, handed to createWarren. */
  readonly warren: Omit<WarrenOptions, 'handlers'>;
}

export const WARREN_MODULE_DEFAULTS = Object.freeze({
  startWorkers: true,
  isGlobal: true,
});

/**
 * Injection token of the module's options (the value given to forRoot or returned by forRootAsync's factory).
 */
/** A route path: starts with '/'. */
export function checkMetricsPath(path: string | undefined): string | undefined {
  if (path !== undefined && (typeof path !== 'string' || !path.startsWith('/')))
    throw new ConfigurationError(
      `metricsPath must be a path starting with '/' (got ${JSON.stringify(path)})`,
    );
  return path;
}

export const WARREN_MODULE_OPTIONS = Symbol.for('warren:nest-module-options');

export function resolveWarrenModuleOptions(
  input: WarrenModuleOptions | undefined,
): ResolvedWarrenModuleOptions {
  if (input === null || typeof input !== 'object') {
    throw new ConfigurationError(
      `WarrenModule options must be an object (got ${input === null ? 'null' : typeof input}); did the forRootAsync factory return them?`,
    );
  }
  // metricsPath is the module's (a route), not createWarren's: read by forRoot before this.
  const {
    startWorkers = WARREN_MODULE_DEFAULTS.startWorkers,
    metricsPath: _route,
    dashboard,
    ...warren
  } = input;
  if (typeof startWorkers !== 'boolean')
    throw new ConfigurationError(`startWorkers must be a boolean (got ${JSON.stringify(startWorkers)})`);
  if ('handlers' in warren) {
    throw new ConfigurationError(
      "WarrenModule finds @Job handlers among your providers: list the classes in a module's providers instead of passing handlers",
    );
  }
  if (dashboard !== undefined && (typeof dashboard !== 'object' || dashboard === null))
    throw new ConfigurationError(`dashboard must be an object (got ${JSON.stringify(dashboard)})`);
  if (dashboard !== undefined && (typeof dashboard.path !== 'string' || !dashboard.path.startsWith('/')))
    throw new ConfigurationError(
      `dashboard.path must be a path starting with '/' (got ${JSON.stringify(dashboard.path)})`,
    );
  return Object.freeze({ startWorkers, dashboard, warren });
}
