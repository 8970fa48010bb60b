/** WarrenModule's `dashboard` option: the web dashboard mounted on a Nest (Express) app. */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { Controller, Get, Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ConfigurationError, defineTopology, Job, Warren, type JobHandler } from '../../src';
import type { TopologyPlan } from '../../src/ops';
import { WarrenModule } from '../../src/nest';
import { deletePlanEntities, testNamespace, testProfile } from '../support/test-broker';
import { planOf } from '../../src/warren';

const topology = defineTopology({ queues: { work: {} } });
const extraTopology = defineTopology({ queues: { extra: {} } });

@Job('work.ping', { queue: 'work' })
@Injectable()
class Ping implements JobHandler<object> {
  handle() {}
}

@Module({ imports: [WarrenModule.forFeature({ topology: extraTopology })] })
class ExtraModule {}

@Controller('hello')
class HelloController {
  @Get()
  hello() {
    return { hello: 'nest' };
  }
}

type Snapshot = {
  queues: { key: string }[];
  processes: { id: string; queues: { key: string }[] }[];
};

const opened: { app: INestApplication; plan: TopologyPlan | undefined }[] = [];

/** The status of GET /warren/api/session with exactly these headers (fetch cannot set Host). */
function statusOf(port: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/warren/api/session', headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('WarrenModule dashboard', () => {
  afterEach(async () => {
    for (const { app, plan } of opened.splice(0)) {
      await app.close().catch(() => undefined);
      if (plan) await deletePlanEntities(plan);
    }
  });

  it('mounts the dashboard at its path on the Express adapter, next to the app’s own routes', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        WarrenModule.forRoot({
          ...testProfile(testNamespace('nest-ui')),
          topology,
          dashboard: { path: '/warren' },
        }),
        ExtraModule,
      ],
      providers: [Ping],
      controllers: [HelloController],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    const warren = app.get(Warren);
    opened.push({ app, plan: planOf(warren) });
    await app.listen(0, '127.0.0.1');
    const base = (await app.getUrl()).replace('[::1]', '127.0.0.1');

    const page = await fetch(`${base}/warren`);
    assert.equal(page.status, 200);
    assert.equal(page.url, `${base}/warren/`, 'redirected to the trailing slash its relative links need');
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(await page.text(), /app\.js/);

    const response = await fetch(`${base}/warren/api/snapshot`);
    assert.equal(response.status, 200);
    const snapshot = (await response.json()) as Snapshot;
    // The module's own operations API sees the merged topology (the feature's queue too)...
    assert.deepEqual(snapshot.queues.map((q) => q.key).sort(), ['extra', 'work']);
    // ...and the app's warren answers it on the control exchange.
    assert.ok(
      snapshot.processes.some((p) => p.queues.some((q) => q.key === 'work')),
      `the app's own process is listed (got ${JSON.stringify(snapshot.processes)})`,
    );

    assert.deepEqual(await (await fetch(`${base}/hello`)).json(), { hello: 'nest' });
    assert.equal((await fetch(`${base}/nothing-here`)).status, 404, "Nest's not-found handler still answers");
    // Read-only without authorize: an action is refused.
    const refused = await fetch(`${base}/warren/api/actions/pause`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ queue: 'work' }),
    });
    assert.equal(refused.status, 403);
    // Without authorize the mounted dashboard answers its loopback names only, and no proxied request.
    const port = new URL(base).port;
    assert.equal(await statusOf(port, { host: 'evil.test' }), 421);
    assert.equal(await statusOf(port, { host: `localhost:${port}`, 'x-forwarded-for': '192.0.2.2' }), 403);
    assert.equal(await statusOf(port, { host: `localhost:${port}` }), 200);
  });

  it('refuses a dashboard path that is not a path', () => {
    assert.throws(
      () =>
        WarrenModule.forRoot({
          ...testProfile(testNamespace('nest-ui')),
          topology,
          dashboard: { path: 'warren' },
        }),
      (error: unknown) =>
        error instanceof ConfigurationError && /dashboard\.path must be/.test(error.message),
    );
  });
});
