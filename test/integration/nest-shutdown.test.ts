import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Injectable, Module, type BeforeApplicationShutdown, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { defineTopology, Job, Warren, type JobContext, type JobHandler } from '../../src';
import type { TopologyPlan } from '../../src/ops';
import { WarrenModule, WarrenPublisher } from '../../src/nest';
import { recordJobEvents } from '../../src/testing';
import { deletePlanEntities, messageCount, testNamespace, testProfile } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';

const topology = defineTopology({
  exchanges: { jobs: { type: 'topic' } },
  queues: {
    reports: { bind: { exchange: 'jobs', pattern: 'report.*' } },
    audit: { bind: { exchange: 'jobs', pattern: 'audit.*' } },
  },
});

/** Lets a test hold a running job until it says so. */
@Injectable()
class Gate {
  started = false;
  finishedAt: number | undefined;
  sawAbort = false;
  private release!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.release = resolve));
  open(): void {
    this.release();
  }
}

@Job('report.build', { queue: 'reports', attempts: 1 })
@Injectable()
class BuildReport implements JobHandler<{ id: string }> {
  constructor(private readonly gate: Gate) {}
  async handle(_data: { id: string }, ctx: JobContext) {
    this.gate.started = true;
    const aborted = new Promise<void>((resolve) =>
      ctx.signal.addEventListener('abort', () => resolve(), { once: true }),
    );
    await Promise.race([this.gate.opened, aborted]);
    this.gate.sawAbort = ctx.signal.aborted;
    this.gate.finishedAt = Date.now();
  }
}

/** Published here, run by another service: no handler in this app. */
@Job('audit.record', { queue: 'audit' })
class AuditRecord implements JobHandler<{ event: string }> {
  async handle() {}
}

/**
 * A service that publishes late in shutdown: after every onModuleDestroy, while the HTTP server would still
 * be draining.
 */
@Injectable()
class ShutdownAudit implements BeforeApplicationShutdown {
  constructor(private readonly jobs: WarrenPublisher) {}
  async beforeApplicationShutdown() {
    await this.jobs.publish(AuditRecord, { event: 'app-stopping' });
  }
}

@Module({
  imports: [WarrenModule.forFeature({ jobs: [AuditRecord] })],
  providers: [Gate, BuildReport, ShutdownAudit],
  exports: [Gate],
})
class ReportsModule {}

const plans: TopologyPlan[] = [];

async function boot(shutdownGraceMs: number): Promise<{ app: INestApplication; warren: Warren }> {
  const profile = testProfile(testNamespace('nest-stop'));
  const moduleRef = await Test.createTestingModule({
    imports: [
      WarrenModule.forRoot({ ...profile, topology, worker: { ...profile.worker, shutdownGraceMs } }),
      ReportsModule,
    ],
  }).compile();
  const app = moduleRef.createNestApplication();
  const warren = app.get(Warren);
  plans.push(planOf(warren));
  await app.init();
  return { app, warren };
}

describe('WarrenModule on application shutdown', () => {
  afterEach(async () => {
    for (const plan of plans.splice(0)) await deletePlanEntities(plan);
  });

  it('lets a job in flight finish before app.close() resolves, and acks it', async () => {
    const { app, warren } = await boot(10_000);
    const gate = app.get(Gate);
    const jobs = recordJobEvents(warren);
    await app.get(WarrenPublisher).publish('report.build', { id: 'r1' }, { jobId: 'report-r1' });
    await waitFor(() => gate.started, { what: 'the job to start' });

    let closedAt: number | undefined;
    const closing = app.close().then(() => (closedAt = Date.now()));
    await waitFor(() => warren.health().consumers.every((consumer) => consumer.paused), {
      what: 'consumption to stop',
    });
    assert.equal(closedAt, undefined, 'close waits for the running job');
    gate.open();
    await closing;

    assert.equal(gate.sawAbort, false, 'the job was not aborted');
    assert.ok(gate.finishedAt! <= closedAt!, 'the job finished before close resolved');
    await jobs.waitForCompleted('report.build', { jobId: 'report-r1', timeoutMs: 0 });
    assert.equal(warren.health().connected, false);
    assert.equal(
      await messageCount(planOf(warren).jobs.get('report.build')!.queueName),
      0,
      'acked, not returned to the queue',
    );
  });

  it('stops consuming early but keeps publishing open until onApplicationShutdown, for requests still being served', async () => {
    const { app, warren } = await boot(10_000);
    await app.close();
    assert.equal(await messageCount(planOf(warren).jobs.get('audit.record')!.queueName), 1);
  });

  it('aborts a job still running when the grace period ends and returns it to its queue', async () => {
    const { app, warren } = await boot(300);
    const gate = app.get(Gate);
    await app.get(WarrenPublisher).publish('report.build', { id: 'r2' }, { jobId: 'report-r2' });
    await waitFor(() => gate.started, { what: 'the job to start' });
    const started = Date.now();
    await app.close();
    const tookMs = Date.now() - started;
    assert.equal(gate.sawAbort, true, 'ctx.signal aborted');
    assert.ok(tookMs < 3_000, `close kept to the grace period (took ${tookMs} ms)`);
    assert.equal(
      await messageCount(planOf(warren).jobs.get('report.build')!.queueName),
      1,
      'the job is back in its queue',
    );
  });
});
