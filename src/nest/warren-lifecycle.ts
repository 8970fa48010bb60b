import {
  Inject,
  Injectable,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { Warren, WORKER_DEFAULTS } from '../index';
import { JobDiscovery } from './job-discovery';
import { WARREN_MODULE_OPTIONS, type ResolvedWarrenModuleOptions } from './module-options';

const DRAIN_POLL_MS = 20;

/**
 * Ties the warren to the application's life:
 * - onModuleInit: bind the discovered handlers to their instances (or fail init with the reason);
 * - onApplicationBootstrap: start consuming (unless `startWorkers: false`);
 * - onModuleDestroy: stop taking jobs and let running ones finish, while the services they use are
 *   still alive (WarrenModule is global, so Nest destroys it after your modules but before any
 *   onApplicationShutdown hook, where TypeORM, Mongoose and others close their connections);
 * - onApplicationShutdown: close (flush publisher confirms, close the connection). Closing this late
 *   lets requests still being served while the HTTP server drains publish their jobs.
 * With `app.enableShutdownHooks()` the same happens on SIGTERM/SIGINT.
 */
@Injectable()
export class WarrenLifecycle
  implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy, OnApplicationShutdown
{
  private drainDeadline: number | undefined;

  constructor(
    @Inject(Warren) private readonly warren: Warren,
    private readonly discovery: JobDiscovery,
    @Inject(WARREN_MODULE_OPTIONS) private readonly options: ResolvedWarrenModuleOptions,
  ) {}

  async onModuleInit(): Promise<void> {
    try {
      this.discovery.bind();
    } catch (error) {
      // Nest runs no shutdown hook after a failed init; without this the connection keeps the process alive.
      await this.warren.close({ graceMs: 0 }).catch(() => undefined);
      throw error;
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.options.startWorkers) await this.warren.start();
  }

  async onModuleDestroy(): Promise<void> {
    const graceMs = this.options.warren.worker?.shutdownGraceMs ?? WORKER_DEFAULTS.shutdownGraceMs;
    this.drainDeadline = Date.now() + graceMs;
    const consumers = this.warren.health().consumers;
    await Promise.all(
      consumers.map((consumer) => this.warren.pauseLocal(consumer.queue).catch(() => undefined)),
    );
    while (
      this.warren.health().consumers.some((consumer) => consumer.activeJobs > 0) &&
      Date.now() < this.drainDeadline
    ) {
      await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
    }
  }

  async onApplicationShutdown(): Promise<void> {
    // Jobs still running past the drain's deadline get what is left of the grace period, then return to their
    // queue.
    const graceMs =
      this.drainDeadline === undefined ? undefined : Math.max(0, this.drainDeadline - Date.now());
    await this.warren.close(graceMs === undefined ? {} : { graceMs });
  }
}
