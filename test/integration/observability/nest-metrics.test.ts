import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ConfigurationError, defineTopology, Job, Warren, type JobHandler } from '../../../src';
import type { TopologyPlan } from '../../../src/ops';
import { WarrenModule } from '../../../src/nest';
import { warrenMetrics } from '../../../src/observability';
import { deletePlanEntities, testNamespace, testProfile } from '../../support/test-broker';
import { waitFor } from '../../support/wait-for';
import { planOf } from '../../../src/warren';

const topology = defineTopology({ queues: { work: {} } });

@Job('work.ping', { queue: 'work' })
@Injectable()
class Ping implements JobHandler<object> {
  handle() {}
}

const opened: { app: INestApplication; plan: TopologyPlan | undefined }[] = [];

describe('WarrenModule metricsPath', () => {
  afterEach(async () => {
    for (const { app, plan } of opened.splice(0)) {
      await app.close().catch(() => undefined);
      if (plan) await deletePlanEntities(plan);
    }
  });

  it('serves the Prometheus text of warrenMetrics() at the path it is given', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        WarrenModule.forRootAsync({
          useFactory: () => ({
            ...testProfile(testNamespace('nest-metrics')),
            topology,
            instrumentation: [warrenMetrics()],
          }),
          metricsPath: '/metrics',
        }),
      ],
      providers: [Ping],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    const warren = app.get(Warren);
    opened.push({ app, plan: planOf(warren) });
    await app.listen(0, '127.0.0.1');
    let done = 0;
    warren.on('completed', () => done++);
    await warren.publish('work.ping', {});
    await waitFor(() => done === 1);
    const response = await fetch(`${await app.getUrl()}/metrics`);
    assert.equal(response.status, 200);
    const text = await response.text();
    assert.match(text, /^warren_jobs_completed_total\{job="work.ping",queue="work"\} 1$/m);
    assert.match(text, /^warren_jobs_published_total\{job="work.ping",queue="work"\} 1$/m);
  });

  it('refuses a metricsPath without warrenMetrics() among the instrumentation, before connecting', () => {
    assert.throws(
      () =>
        WarrenModule.forRoot({
          ...testProfile(testNamespace('nest-metrics')),
          topology,
          metricsPath: '/metrics',
        }),
      (error: unknown) =>
        error instanceof ConfigurationError && /needs warrenMetrics\(\)/.test(error.message),
    );
  });
});
