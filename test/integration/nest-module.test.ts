import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  Body,
  Controller,
  HttpCode,
  Injectable,
  Module,
  Post,
  Scope,
  type DynamicModule,
  type INestApplication,
  type LoggerService,
  type ModuleMetadata,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  ConfigurationError,
  defineJob,
  defineTopology,
  Job,
  Warren,
  type JobContext,
  type JobHandler,
} from '../../src';
import type { TopologyPlan } from '../../src/ops';
import { WarrenHealthIndicator, WarrenModule, WarrenPublisher } from '../../src/nest';
import { createRecordingLogger, recordJobEvents } from '../../src/testing';
import { deletePlanEntities, messageCount, testNamespace, testProfile } from '../support/test-broker';
import { waitFor } from '../support/wait-for';
import { planOf } from '../../src/warren';

type Welcome = { userId: string };
type Charge = { invoiceId: string; cents: number };
type Jobs = { 'email.welcome': Welcome; 'email.broken': Welcome; 'billing.charge': Charge };

const topology = defineTopology({
  exchanges: { jobs: { type: 'topic' } },
  queues: { email: { bind: { exchange: 'jobs', pattern: 'email.*' } } },
});
const billingTopology = defineTopology({
  exchanges: { jobs: { type: 'topic' } },
  queues: { billing: { bind: { exchange: 'jobs', pattern: 'billing.*' } } },
});

@Injectable()
class Mailer {
  readonly sent: { userId: string; jobId: string }[] = [];
  async send(userId: string, jobId: string): Promise<void> {
    this.sent.push({ userId, jobId });
  }
}

@Module({ providers: [Mailer], exports: [Mailer] })
class MailerModule {}

@Job('email.welcome', { queue: 'email', attempts: 1 })
@Injectable()
class WelcomeEmail implements JobHandler<Welcome> {
  constructor(private readonly mailer: Mailer) {}
  async handle(data: Welcome, ctx: JobContext) {
    await this.mailer.send(data.userId, ctx.jobId);
  }
}

@Job('email.broken', { queue: 'email', attempts: 1 })
@Injectable()
class BrokenEmail implements JobHandler<Welcome> {
  async handle(): Promise<void> {
    throw new Error('SMTP said no');
  }
}

@Module({ imports: [MailerModule], providers: [WelcomeEmail] })
class EmailModule {}

@Injectable()
class Ledger {
  readonly charged: Charge[] = [];
}

@Job('billing.charge', { queue: 'billing', attempts: 1 })
@Injectable()
class ChargeCard implements JobHandler<Charge> {
  constructor(private readonly ledger: Ledger) {}
  async handle(data: Charge) {
    this.ledger.charged.push(data);
  }
}

@Module({
  imports: [WarrenModule.forFeature({ topology: billingTopology })],
  providers: [Ledger, ChargeCard],
  exports: [Ledger],
})
class BillingModule {}

@Controller('signup')
class SignupController {
  constructor(private readonly jobs: WarrenPublisher<Jobs>) {}

  @Post()
  @HttpCode(202)
  async signup(@Body() body: { userId: string }) {
    return this.jobs.publish('email.welcome', { userId: body.userId }, { jobId: `welcome-${body.userId}` });
  }
}

/** A service that uses the whole Warren API. */
@Injectable()
class InvoiceService {
  constructor(readonly warren: Warren<Jobs>) {}

  async bill(invoiceId: string) {
    return this.warren.publish(
      'billing.charge',
      { invoiceId, cents: 4200 },
      { jobId: `charge-${invoiceId}` },
    );
  }
}

@Module({ imports: [BillingModule], providers: [InvoiceService] })
class InvoiceModule {}

class AppConfig {
  constructor(readonly namespace: string) {}
}

@Module({})
class ConfigModule {
  static register(namespace: string): DynamicModule {
    return {
      module: ConfigModule,
      providers: [{ provide: AppConfig, useValue: new AppConfig(namespace) }],
      exports: [AppConfig],
    };
  }
}

const apps: { app: INestApplication; plan: TopologyPlan | undefined; closed: boolean }[] = [];

/** Compiles and initialises a Nest app; afterEach closes it and deletes what its warren declared. */
async function boot(
  metadata: ModuleMetadata,
  logger?: LoggerService,
): Promise<{ app: INestApplication; warren: Warren<Jobs> }> {
  const builder = Test.createTestingModule(metadata);
  if (logger) builder.setLogger(logger);
  const moduleRef = await builder.compile();
  const app = moduleRef.createNestApplication();
  const warren = app.get<Warren<Jobs>>(Warren);
  apps.push({ app, plan: planOf(warren), closed: false });
  await app.init();
  return { app, warren };
}

async function closeAll(): Promise<void> {
  for (const entry of apps.splice(0)) {
    if (!entry.closed) await entry.app.close().catch(() => undefined);
    if (entry.plan) await deletePlanEntities(entry.plan);
  }
}

describe('WarrenModule in a Nest application', () => {
  afterEach(closeAll);

  it('runs a @Job provider found in a feature module with its injected service, published by a controller over HTTP', async () => {
    const { app, warren } = await boot({
      imports: [WarrenModule.forRoot({ ...testProfile(testNamespace('nest')), topology }), EmailModule],
      controllers: [SignupController],
    });
    const jobs = recordJobEvents(warren);
    await app.listen(0, '127.0.0.1');
    const response = await fetch(`${await app.getUrl()}/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ userId: 'u1' }),
    });
    assert.equal(response.status, 202);
    assert.deepEqual(await response.json(), { jobId: 'welcome-u1', name: 'email.welcome', queue: 'email' });
    await jobs.waitForCompleted('email.welcome', { jobId: 'welcome-u1' });
    assert.deepEqual(app.get(Mailer).sent, [{ userId: 'u1', jobId: 'welcome-u1' }]);
  });

  it('injects Warren itself into services, and merges topology contributed by forFeature', async () => {
    const { app, warren } = await boot({
      imports: [
        WarrenModule.forRoot({ ...testProfile(testNamespace('nest')), topology }),
        EmailModule,
        InvoiceModule,
      ],
    });
    const invoices = app.get(InvoiceService);
    assert.equal(invoices.warren, warren, 'one warren per app');
    assert.ok(
      planOf(warren).queues.some((queue) => queue.role === 'job' && queue.key === 'billing'),
      'the feature queue is declared',
    );
    assert.ok(
      planOf(warren).queues.some((queue) => queue.role === 'job' && queue.key === 'email'),
      'the root queue is declared',
    );
    const jobs = recordJobEvents(warren);
    await invoices.bill('inv-7');
    await jobs.waitForCompleted('billing.charge', { jobId: 'charge-inv-7' });
    assert.deepEqual(app.get(Ledger).charged, [{ invoiceId: 'inv-7', cents: 4200 }]);
    // publishing is typed by job name
    // @ts-expect-error cents must be a number
    await invoices.warren.publish('billing.charge', { invoiceId: 'x', cents: 'many' }).catch(() => undefined);
  });

  it('takes its options from other providers with forRootAsync', async () => {
    const namespace = testNamespace('nest');
    const { app, warren } = await boot({
      imports: [
        WarrenModule.forRootAsync({
          imports: [ConfigModule.register(namespace)],
          inject: [AppConfig],
          useFactory: (config: AppConfig) => ({ ...testProfile(config.namespace), topology }),
        }),
        EmailModule,
      ],
    });
    assert.ok(
      planOf(warren).queues.every((queue) => queue.name.startsWith(namespace)),
      'every queue carries the configured namespace',
    );
    const jobs = recordJobEvents(warren);
    await app.get(WarrenPublisher).publish(WelcomeEmail, { userId: 'u2' }, { jobId: 'welcome-u2' });
    await jobs.waitForCompleted('email.welcome', { jobId: 'welcome-u2' });
    assert.equal(app.get(Mailer).sent[0]?.userId, 'u2');
  });

  it('runs the handler a test module put in place with overrideProvider().useValue', async () => {
    const fakeMailer = new Mailer();
    const moduleRef = await Test.createTestingModule({
      imports: [WarrenModule.forRoot({ ...testProfile(testNamespace('nest')), topology }), EmailModule],
    })
      .overrideProvider(WelcomeEmail)
      .useValue(new WelcomeEmail(fakeMailer))
      .compile();
    const app = moduleRef.createNestApplication();
    const warren = app.get<Warren<Jobs>>(Warren);
    apps.push({ app, plan: planOf(warren), closed: false });
    await app.init();
    const jobs = recordJobEvents(warren);
    await warren.publish('email.welcome', { userId: 'u6' }, { jobId: 'welcome-u6' });
    await jobs.waitForCompleted('email.welcome', { jobId: 'welcome-u6' });
    assert.deepEqual(fakeMailer.sent, [{ userId: 'u6', jobId: 'welcome-u6' }]);
    assert.deepEqual(app.get(Mailer).sent, [], "the module's own Mailer was not used");
  });

  it('runs jobs of defineJob that modules provide with useValue, each by itself', async () => {
    const ran: string[] = [];
    const hello = defineJob('email.hello', { queue: 'email', attempts: 1 }, (data: Welcome) => {
      ran.push(`hello ${data.userId}`);
    });
    const bye = defineJob('email.bye', { queue: 'email', attempts: 1 }, (data: Welcome) => {
      ran.push(`bye ${data.userId}`);
    });
    @Module({
      providers: [
        { provide: 'hello', useValue: hello },
        { provide: 'bye', useValue: bye },
      ],
    })
    class GreetingModule {}
    const { warren } = await boot({
      imports: [WarrenModule.forRoot({ ...testProfile(testNamespace('nest')), topology }), GreetingModule],
    });
    const jobs = recordJobEvents(warren);
    await warren.publish(hello, { userId: 'u8' }, { jobId: 'hello-u8' });
    await warren.publish(bye, { userId: 'u8' }, { jobId: 'bye-u8' });
    await jobs.waitForCompleted('email.hello', { jobId: 'hello-u8' });
    await jobs.waitForCompleted('email.bye', { jobId: 'bye-u8' });
    assert.deepEqual(ran.sort(), ['bye u8', 'hello u8']);
  });

  it('only publishes when startWorkers is false: the job waits in its queue', async () => {
    const { app, warren } = await boot({
      imports: [
        WarrenModule.forRoot({ ...testProfile(testNamespace('nest')), topology, startWorkers: false }),
        EmailModule,
      ],
    });
    await app.get(WarrenPublisher).publish('email.welcome', { userId: 'u3' });
    const batch = await app.get(WarrenPublisher).publishMany([
      { job: 'email.welcome', data: { userId: 'u3b' } },
      { job: WelcomeEmail, data: { userId: 'u3c' } },
    ]);
    assert.deepEqual(
      batch.map((r) => r.status),
      ['confirmed', 'confirmed'],
    );
    assert.deepEqual(
      warren.health().consumers.map((consumer) => consumer.consuming),
      [false],
    );
    assert.equal(await messageCount(planOf(warren).jobs.get('email.welcome')!.queueName), 3);
    assert.deepEqual(app.get(Mailer).sent, []);
  });

  it('reports health in the shape terminus expects: up while consuming, down once closed', async () => {
    const { app, warren } = await boot({
      imports: [WarrenModule.forRoot({ ...testProfile(testNamespace('nest')), topology }), EmailModule],
    });
    const indicator = app.get(WarrenHealthIndicator);
    await waitFor(() => warren.health().healthy, { what: 'the consumer to subscribe' });
    const up = indicator.isHealthy('rabbitmq');
    assert.equal(up.rabbitmq.status, 'up');
    assert.equal(up.rabbitmq.connected, true);
    assert.deepEqual(
      up.rabbitmq.consumers.map((c) => [c.queue, c.consuming]),
      [['email', true]],
    );
    assert.equal(indicator.isHealthy().warren.status, 'up', "the key defaults to 'warren'");
    await app.close();
    apps[0]!.closed = true;
    const down = indicator.isHealthy('rabbitmq');
    assert.equal(down.rabbitmq.status, 'down');
    assert.equal(down.rabbitmq.connected, false);
  });

  it("logs through Nest's logger by default, and through the pino logger it is given", async () => {
    const lines: { level: string; message: string; context: string | undefined }[] = [];
    const capture: LoggerService = {
      log: (message: string, context?: string) => lines.push({ level: 'log', message, context }),
      warn: (message: string, context?: string) => lines.push({ level: 'warn', message, context }),
      error: (message: string, ...rest: unknown[]) =>
        lines.push({ level: 'error', message, context: rest.at(-1) as string }),
    };
    const { app, warren } = await boot(
      {
        imports: [WarrenModule.forRoot({ ...testProfile(testNamespace('nest')), topology }), EmailModule],
        providers: [BrokenEmail],
      },
      capture,
    );
    const jobs = recordJobEvents(warren);
    await app.get(WarrenPublisher).publish('email.broken', { userId: 'u4' }, { jobId: 'broken-u4' });
    await jobs.waitForDeadLettered('email.broken', { jobId: 'broken-u4' });
    const line = await waitFor(() => lines.find((l) => l.message.startsWith('job dead-lettered')));
    assert.equal(line.level, 'warn');
    assert.equal(line.context, 'Warren');
    assert.match(line.message, /\(SMTP said no\)/);
    assert.match(line.message, /jobId=broken-u4/);
    assert.match(line.message, /component=worker/);

    const pinoLogs = createRecordingLogger('info');
    const second = await boot({
      imports: [
        WarrenModule.forRoot({ ...testProfile(testNamespace('nest')), topology, logger: pinoLogs.logger }),
        EmailModule,
      ],
      providers: [BrokenEmail],
    });
    const secondJobs = recordJobEvents(second.warren);
    await second.app.get(WarrenPublisher).publish('email.broken', { userId: 'u5' }, { jobId: 'broken-u5' });
    await secondJobs.waitForDeadLettered('email.broken');
    const entry = await waitFor(() => pinoLogs.entries.find((e) => e.msg === 'job dead-lettered'));
    assert.equal(entry.jobId, 'broken-u5');
  });
});

describe('WarrenModule refuses handlers it cannot run', () => {
  afterEach(closeAll);

  @Job('email.scoped', { queue: 'email' })
  @Injectable({ scope: Scope.REQUEST })
  class RequestScopedJob implements JobHandler<object> {
    async handle() {}
  }

  @Injectable({ scope: Scope.REQUEST })
  class RequestContext {}

  @Job('email.implicit', { queue: 'email' })
  @Injectable()
  class NeedsRequest implements JobHandler<object> {
    constructor(readonly request: RequestContext) {}
    async handle() {}
  }

  it('rejects a request-scoped handler when the module compiles', async () => {
    await assert.rejects(
      Test.createTestingModule({
        imports: [WarrenModule.forRoot({ ...testProfile(testNamespace('nest')), topology })],
        providers: [RequestScopedJob],
      }).compile(),
      (error: unknown) =>
        error instanceof ConfigurationError &&
        /RequestScopedJob .* is request-scoped; job handlers must be singletons/.test(error.message),
    );
  });

  it('rejects a handler made request-scoped by its dependency at init, and closes the connection it opened', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [WarrenModule.forRoot({ ...testProfile(testNamespace('nest')), topology })],
      providers: [RequestContext, NeedsRequest],
    }).compile();
    const app = moduleRef.createNestApplication();
    const warren = app.get(Warren);
    apps.push({ app, plan: planOf(warren), closed: true });
    await assert.rejects(
      app.init(),
      (error: unknown) =>
        error instanceof ConfigurationError &&
        /NeedsRequest .* depends on a request-scoped provider/.test(error.message),
    );
    assert.equal(warren.health().connected, false);
  });

  it('rejects a handler built by a factory provider, naming the fix', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [WarrenModule.forRoot({ ...testProfile(testNamespace('nest')), topology }), MailerModule],
      providers: [
        { provide: 'WELCOME', inject: [Mailer], useFactory: (mailer: Mailer) => new WelcomeEmail(mailer) },
      ],
    }).compile();
    const app = moduleRef.createNestApplication();
    apps.push({ app, plan: planOf(app.get(Warren)), closed: true });
    await assert.rejects(app.init(), /WelcomeEmail is provided by a factory .*list the class in providers/);
  });

  it('rejects the same handler class provided by two modules', async () => {
    @Module({ imports: [MailerModule], providers: [WelcomeEmail] })
    class OtherEmailModule {}
    await assert.rejects(
      Test.createTestingModule({
        imports: [
          WarrenModule.forRoot({ ...testProfile(testNamespace('nest')), topology }),
          EmailModule,
          OtherEmailModule,
        ],
      }).compile(),
      /WelcomeEmail is provided by two modules \((EmailModule and OtherEmailModule|OtherEmailModule and EmailModule)\)/,
    );
  });
});
