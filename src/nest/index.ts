/**
 * warren/nest — the NestJS integration. Needs @nestjs/common, @nestjs/core (11 or 12) and rxjs, which are
 * optional peer dependencies of warren: nothing else in warren imports them.
 */
export { WarrenModule } from './warren-module';
export { WarrenPublisher } from './warren-publisher';
export {
  WarrenHealthIndicator,
  type WarrenHealthDetails,
  type WarrenHealthResult,
} from './warren-health-indicator';
export { createNestLogger, type NestLoggerOptions } from './nest-logger';
export {
  WARREN_MODULE_DEFAULTS,
  type WarrenModuleOptions,
  type WarrenModuleAsyncOptions,
  type WarrenFeatureOptions,
  type WarrenDashboardModuleOptions,
} from './module-options';
