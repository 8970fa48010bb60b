import { Inject, Injectable } from '@nestjs/common';
import { Warren, type HealthReport } from '../index';

/** What `isHealthy` reports under its key: terminus's HealthIndicatorResult shape. */
export interface WarrenHealthDetails {
  readonly status: 'up' | 'down';
  readonly connected: boolean;
  readonly blocked: boolean;
  readonly consumers: HealthReport['consumers'];
}

export type WarrenHealthResult<K extends string> = { readonly [P in K]: WarrenHealthDetails };

/**
 * The warren's health in the shape @nestjs/terminus expects (`{ [key]: { status: 'up' | 'down', ... } }`),
 * without depending on terminus. Up when connected and every started consumer (not paused) is subscribed.
 *
 * @example
 * // with @nestjs/terminus 11
 * @Get('health') @HealthCheck()
 * check() { return this.health.check([() => this.warren.isHealthy('rabbitmq')]); }
 */
@Injectable()
export class WarrenHealthIndicator {
  constructor(@Inject(Warren) private readonly warren: Warren) {}

  isHealthy<const K extends string = 'warren'>(key: K = 'warren' as K): WarrenHealthResult<K> {
    const report = this.warren.health();
    const details: WarrenHealthDetails = {
      status: report.healthy ? 'up' : 'down',
      connected: report.connected,
      blocked: report.blocked,
      consumers: report.consumers,
    };
    return { [key]: details } as WarrenHealthResult<K>;
  }
}
