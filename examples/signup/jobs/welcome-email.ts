import { Job, type JobContext, type JobHandler } from '../../../src';

export interface Mailer {
  send(to: string, template: string, signal: AbortSignal): Promise<void>;
}

export type WelcomeEmailData = { userId: string; email: string };

@Job('email.welcome', {
  queue: 'email',
  attempts: 5,
  backoff: { type: 'exponential', delayMs: 1000 },
  timeoutMs: 30_000,
})
export class WelcomeEmail implements JobHandler<WelcomeEmailData> {
  constructor(private readonly mailer: Mailer) {}

  async handle(data: WelcomeEmailData, ctx: JobContext): Promise<void> {
    await this.mailer.send(data.email, 'welcome', ctx.signal);
    ctx.log.info({ userId: data.userId }, 'welcome email sent');
  }
}
