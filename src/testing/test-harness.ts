import { createWarren, type Warren, type WarrenJobs, type WarrenOptions } from '../index';
import { JobEventRecorder } from './job-event-recorder';
import { testWarrenOptions } from './test-namespace';

export interface TestHarnessOptions extends WarrenOptions {
  /** Start consuming at once. Default true. */
  readonly start?: boolean;
  /** Deadline of every `waitFor…` call unless it sets its own. Default 10 000 ms. */
  readonly timeoutMs?: number;
}

export interface TestHarness<TJobs extends object = WarrenJobs> extends JobEventRecorder {
  readonly warren: Warren<TJobs>;
  /** The namespace every entity of this harness carries. */
  readonly namespace: string;
  /**
   * Stops the workers, deletes every queue, stream and exchange of the harness (messages included), closes.
   * Idempotent.
   */
  close(): Promise<void>;
}

/**
 * A warren on a real broker in a throwaway namespace (see `testWarrenOptions`), consuming, with its
 * job events recorded: wait for "job X completed / dead-lettered" with a deadline instead of sleeping.
 * `close()` deletes what it declared. Options are createWarren's; `queues`, `worker`, `delay` and
 * `connection` merge over the test profile one level deep.
 *
 * @example
 * const harness = await createTestHarness({ url: process.env.AMQP_URL, topology, handlers: [new
 * WelcomeEmail(fakeMailer)] });
 * after(() => harness.close());
 * await harness.warren.publish('email.welcome', { userId: 'u1' }, { jobId: 'w-1' });
 * await harness.waitForCompleted('email.welcome', { jobId: 'w-1' });
 */
export async function createTestHarness<TJobs extends object = WarrenJobs>(
  options: TestHarnessOptions = {},
): Promise<TestHarness<TJobs>> {
  const { start = true, timeoutMs, ...warrenOptions } = options;
  const profile = testWarrenOptions({
    ...(options.namespace !== undefined ? { namespace: options.namespace } : {}),
  });
  const namespace = warrenOptions.namespace ?? profile.namespace!;
  const warren = await createWarren<TJobs>({
    ...profile,
    ...warrenOptions,
    namespace,
    queues: { ...profile.queues, ...warrenOptions.queues },
    worker: { ...profile.worker, ...warrenOptions.worker },
    delay: { ...profile.delay, ...warrenOptions.delay },
    ...(warrenOptions.connection ? { connection: warrenOptions.connection } : {}),
  });
  const recorder = new JobEventRecorder(warren, timeoutMs);
  let closing: Promise<void> | undefined;
  try {
    if (start) await warren.start();
  } catch (error) {
    await closeAndDeleteTopology(warren).catch(() => undefined);
    throw error;
  }
  return Object.assign(recorder, {
    warren,
    namespace,
    close(): Promise<void> {
      recorder.stop();
      closing ??= closeAndDeleteTopology(warren);
      return closing;
    },
  }) as TestHarness<TJobs>;
}

/**
 * Tears a test warren down without leaving anything on the broker: stops consuming and lets running
 * jobs finish (within `graceMs`, default 2 s), deletes every queue and exchange of its plan, closes.
 * Consumers must stop first: a consumer whose queue is deleted under it re-declares the topology.
 * Also for warrens built by WarrenModule: call it before `app.close()`.
 */
export async function closeAndDeleteTopology(
  warren: Pick<Warren, 'health' | 'pauseLocal' | 'deleteTopology' | 'close'>,
  options: { graceMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + (options.graceMs ?? 2_000);
  await Promise.all(
    warren.health().consumers.map((consumer) => warren.pauseLocal(consumer.queue).catch(() => undefined)),
  );
  while (warren.health().consumers.some((consumer) => consumer.activeJobs > 0) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  try {
    await warren.deleteTopology();
  } finally {
    await warren.close({ graceMs: Math.max(0, deadline - Date.now()) });
  }
}
