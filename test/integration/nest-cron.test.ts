import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Cron, defineTopology, Job, Warren, type JobContext, type JobHandler } from '../../src';
import type { TopologyPlan } from '../../src/ops';
import { WarrenModule } from '../../src/nest';
import { recordJobEvents } from '../../src/testing';
import { deletePlanEntities, testNamespace, testProfile } from '../support/test-broker';
import { planOf } from '../../src/warren';

const topology = defineTopology({ queues: { reports: {} } });

@Injectable()
class ReportStore {
  readonly built: string[] = [];
}

@Cron('* * * * * *', { data: { report: 'tick' } })
@Job('report.tick', { queue: 'reports', attempts: 1 })
@Injectable()
class TickReport implements JobHandler<{ report: string }> {
  constructor(private readonly store: ReportStore) {}
  async handle(data: { report: string }, ctx: JobContext) {
    this.store.built.push(`${data.report} ${ctx.jobId}`);
  }
}

describe('WarrenModule with @Cron', () => {
  let plan: TopologyPlan | undefined;
  after(async () => {
    if (plan) await deletePlanEntities(plan);
  });

  it('schedules a @Cron on a discovered @Job provider and runs it with its injected service', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [WarrenModule.forRoot({ ...testProfile(testNamespace('nest-cron')), topology })],
      providers: [ReportStore, TickReport],
    }).compile();
    const app = moduleRef.createNestApplication();
    const warren = app.get(Warren);
    plan = planOf(warren);
    await app.init();
    try {
      const jobs = recordJobEvents(warren);
      await jobs.waitForCompleted('report.tick', { timeoutMs: 5_000 });
      assert.match(app.get(ReportStore).built[0] ?? '', /^tick /);
    } finally {
      await app.close();
    }
  });
});
