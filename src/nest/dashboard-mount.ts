import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ConfigurationError, type WarrenOptions } from '../index';
import { createOps, type WarrenOps } from '../ops';
import { expressDashboard } from '../ui';
import { WARREN_MODULE_OPTIONS, type ResolvedWarrenModuleOptions } from './module-options';

/** Injection token of the options `createWarren` got (the merged topology, the discovered jobs). */
export const WARREN_CREATE_OPTIONS = Symbol.for('warren:nest-create-options');

/**
 * Mounts the dashboard (the `dashboard` option) on the app's Express adapter when the module initializes:
 * after Nest registered its routes, before its not-found handler. An app without HTTP (an application
 * context) mounts nothing; a Fastify app is told to register `fastifyDashboard` itself.
 */
@Injectable()
export class WarrenDashboardMount implements OnModuleInit, OnApplicationShutdown {
  private mounted: { close: () => void } | undefined;
  private ownOps: WarrenOps | undefined;

  constructor(
    @Inject(WARREN_MODULE_OPTIONS) private readonly options: ResolvedWarrenModuleOptions,
    @Inject(WARREN_CREATE_OPTIONS) private readonly warrenOptions: WarrenOptions,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  onModuleInit(): void {
    const dashboard = this.options.dashboard;
    const adapter = this.adapterHost.httpAdapter;
    if (!dashboard || !adapter) return;
    if (adapter.getType() !== 'express')
      throw new ConfigurationError(
        `WarrenModule's dashboard option mounts on Express (this app runs on ${adapter.getType()}): on ` +
          "Fastify, register warren/ui's fastifyDashboard({ ops }) with { prefix } on the app instead",
      );
    const { path, ops: given, ...rest } = dashboard;
    const ops = given ?? this.createOps();
    const middleware = expressDashboard({ ...rest, ops });
    adapter.use(path, middleware);
    this.mounted = middleware;
  }

  async onApplicationShutdown(): Promise<void> {
    this.mounted?.close();
    await this.ownOps?.close();
  }

  private createOps(): WarrenOps {
    const { url, connection, namespace, topology, jobs, delay, queues, scheduler, publisher } =
      this.warrenOptions;
    // The graphs read the aggregates with the workers' bucket length; the recent jobs read the history.
    const { aggregates, history } = this.warrenOptions;
    // `collect` is the workers' (moving letters into the log), not the operations API's.
    const { collect: _collect, ...deadLetterLog } = this.warrenOptions.deadLetterLog ?? {};
    this.ownOps = createOps({
      ...{ url, connection, namespace, topology, jobs, delay, queues, scheduler, publisher },
      deadLetterLog,
      ...(aggregates !== undefined ? { aggregates } : {}),
      ...(history !== undefined ? { history } : {}),
    });
    return this.ownOps;
  }
}
