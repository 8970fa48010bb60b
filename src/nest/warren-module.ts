import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { createWarren, mergeTopologies, Warren, type WarrenOptions } from '../index';
import { WARREN_CREATE_OPTIONS, WarrenDashboardMount } from './dashboard-mount';
import { JobDiscovery } from './job-discovery';
import { metricsController, requireMetricsHandler } from './metrics-controller';
import {
  checkMetricsPath,
  resolveWarrenModuleOptions,
  WARREN_MODULE_DEFAULTS,
  WARREN_MODULE_OPTIONS,
  type ResolvedWarrenModuleOptions,
  type WarrenFeatureOptions,
  type WarrenModuleAsyncOptions,
  type WarrenModuleOptions,
} from './module-options';
import { createNestLogger } from './nest-logger';
import { WarrenFeature } from './warren-feature';
import { WarrenHealthIndicator } from './warren-health-indicator';
import { WarrenLifecycle } from './warren-lifecycle';
import { WarrenPublisher } from './warren-publisher';

const EXPORTS = [Warren, WarrenPublisher, WarrenHealthIndicator];

/**
 * warren in a Nest app. Import `WarrenModule.forRoot` (or `forRootAsync`) once, in the root module:
 * every provider decorated with `@Job` anywhere in the app runs its jobs with its injected
 * dependencies; `Warren` and `WarrenPublisher` are injectable everywhere; workers start on
 * application bootstrap and drain on shutdown.
 *
 * @example
 * @Module({
 *   imports: [WarrenModule.forRoot({ url: process.env.AMQP_URL, topology })],
 *   providers: [Mailer, WelcomeEmail],   // WelcomeEmail is a @Job class; Mailer is injected into it
 *   controllers: [SignupController],     // injects WarrenPublisher
 * })
 * export class AppModule {}
 */
@Module({})
export class WarrenModule {
  static forRoot(options: WarrenModuleOptions = {}): DynamicModule {
    return WarrenModule.root(
      {
        provide: WARREN_MODULE_OPTIONS,
        useValue: requireMetricsHandler(resolveWarrenModuleOptions(options), options.metricsPath),
      },
      [],
      WARREN_MODULE_DEFAULTS.isGlobal,
      checkMetricsPath(options.metricsPath),
    );
  }

  /**
   * Options from other providers.
   *
   * @example
   * WarrenModule.forRootAsync({
   *   imports: [ConfigModule],
   *   inject: [ConfigService],
   *   useFactory: (config: ConfigService) => ({ url: config.getOrThrow('AMQP_URL'), topology }),
   * })
   */
  static forRootAsync(options: WarrenModuleAsyncOptions): DynamicModule {
    const { useFactory } = options;
    const optionsProvider: Provider = {
      provide: WARREN_MODULE_OPTIONS,
      inject: [...(options.inject ?? [])],
      useFactory: async (...args: unknown[]) =>
        requireMetricsHandler(
          resolveWarrenModuleOptions(
            await (useFactory as (...a: unknown[]) => WarrenModuleOptions | Promise<WarrenModuleOptions>)(
              ...args,
            ),
          ),
          options.metricsPath,
        ),
    };
    return WarrenModule.root(
      optionsProvider,
      options.imports ?? [],
      options.isGlobal ?? WARREN_MODULE_DEFAULTS.isGlobal,
      checkMetricsPath(options.metricsPath),
    );
  }

  /**
   * Topology (and publish-only job classes) contributed by a feature module, merged into the root's.
   *
   * @example
   * @Module({ imports: [WarrenModule.forFeature({ topology: billingTopology })], providers: [ChargeCard] })
   * export class BillingModule {}
   */
  static forFeature(feature: WarrenFeatureOptions): DynamicModule {
    return {
      module: WarrenModule,
      providers: [{ provide: WarrenFeature, useValue: new WarrenFeature(feature) }],
    };
  }

  private static root(
    optionsProvider: Provider,
    imports: NonNullable<WarrenModuleAsyncOptions['imports']>,
    isGlobal: boolean,
    metricsPath: string | undefined,
  ): DynamicModule {
    const createOptionsProvider: Provider = {
      provide: WARREN_CREATE_OPTIONS,
      inject: [WARREN_MODULE_OPTIONS, JobDiscovery],
      useFactory: (options: ResolvedWarrenModuleOptions, discovery: JobDiscovery): WarrenOptions => {
        const app = discovery.discover();
        const { warren } = options;
        return {
          ...warren,
          logger: warren.logger ?? createNestLogger(),
          topology: mergeTopologies(warren.topology ?? {}, ...app.topologies),
          handlers: app.handlers,
          jobs: [
            ...(warren.jobs ?? []).filter(
              (job) => typeof job !== 'function' || !app.handlers.some((handler) => handler instanceof job),
            ),
            ...app.jobs,
          ],
        };
      },
    };
    const warrenProvider: Provider = {
      provide: Warren,
      inject: [WARREN_CREATE_OPTIONS],
      useFactory: (options: WarrenOptions) => createWarren(options),
    };
    return {
      module: WarrenModule,
      global: isGlobal,
      imports: [DiscoveryModule, ...imports],
      ...(metricsPath !== undefined ? { controllers: [metricsController(metricsPath)] } : {}),
      providers: [
        optionsProvider,
        JobDiscovery,
        createOptionsProvider,
        warrenProvider,
        WarrenPublisher,
        WarrenHealthIndicator,
        WarrenLifecycle,
        WarrenDashboardMount,
      ],
      exports: EXPORTS,
    };
  }
}
