import { Injectable } from '@nestjs/common';
import { Job, type JobContext, type JobHandler } from '../../src';
import { Mailer } from './mailer.service';

export interface WelcomeEmailData {
  readonly userId: string;
}

/** A job handler is a Nest provider: WarrenModule finds it and Nest injects its dependencies. */
@Job('email.welcome', { queue: 'email', attempts: 5, backoff: { type: 'exponential', delayMs: 1000 } })
@Injectable()
export class WelcomeEmail implements JobHandler<WelcomeEmailData> {
  constructor(private readonly mailer: Mailer) {}

  async handle(data: WelcomeEmailData, ctx: JobContext): Promise<void> {
    await this.mailer.send(data.userId, 'welcome', ctx.signal);
    console.log(
      `nest example: WelcomeEmail sent to ${data.userId} (job ${ctx.jobId}, attempt ${ctx.attempt}) through the injected Mailer`,
    );
  }
}
