// A NestJS 12 application as a user writes it: ESM, WarrenModule.forRoot, a @Job provider with an injected
// service, a publish through WarrenPublisher. Prints one JSON line with what happened; exits non-zero on
// any failure. Nest's dependency injection needs legacy decorators (experimentalDecorators +
// emitDecoratorMetadata), so this app is compiled with them.
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { defineTopology, Job, type JobContext, type JobHandler, Warren } from 'warren';
import { WarrenModule, WarrenPublisher } from 'warren/nest';
import { closeAndDeleteTopology, recordJobEvents, testWarrenOptions } from 'warren/testing';

type Jobs = { 'greeting.send': { name: string } };

const topology = defineTopology({ queues: { greetings: {} } });

@Injectable()
class Greeter {
  readonly greeted: { name: string; jobId: string }[] = [];
  greet(name: string, jobId: string): void {
    this.greeted.push({ name, jobId });
  }
}

@Job('greeting.send', { queue: 'greetings', attempts: 1 })
@Injectable()
class SendGreeting implements JobHandler<{ name: string }> {
  constructor(private readonly greeter: Greeter) {}
  async handle(data: { name: string }, ctx: JobContext): Promise<void> {
    this.greeter.greet(data.name, ctx.jobId);
  }
}

const url = process.env.WARREN_TEST_URL ?? process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

@Module({
  imports: [WarrenModule.forRoot({ ...testWarrenOptions({ url }), topology })],
  providers: [Greeter, SendGreeting],
})
class AppModule {}

const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
const warren = app.get<Warren<Jobs>>(Warren);
try {
  const jobs = recordJobEvents(warren);
  const publisher = app.get<WarrenPublisher<Jobs>>(WarrenPublisher);
  const published = await publisher.publish('greeting.send', { name: 'nest' }, { jobId: 'greeting-1' });
  await jobs.waitForCompleted('greeting.send', { jobId: 'greeting-1', timeoutMs: 30_000 });
  const nestPackage = new URL('../node_modules/@nestjs/core/package.json', import.meta.url);
  const nestVersion = (JSON.parse(readFileSync(nestPackage, 'utf8')) as { version: string }).version;
  console.log(
    JSON.stringify({
      nest: nestVersion,
      node: process.version,
      published,
      greeted: app.get(Greeter).greeted,
    }),
  );
} finally {
  await closeAndDeleteTopology(warren);
  await app.close();
}
