import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { WarrenPublisher } from '../../src/nest';
import { WelcomeEmail } from './welcome-email.job';

@Controller('signup')
export class SignupController {
  constructor(private readonly jobs: WarrenPublisher) {}

  /** Answers 202 once the broker confirmed the job; the email goes out in the background. */
  @Post()
  @HttpCode(202)
  async signup(@Body() body: { userId: string }) {
    const job = await this.jobs.publish(
      WelcomeEmail,
      { userId: body.userId },
      { jobId: `welcome-${body.userId}` },
    );
    return { accepted: job.jobId };
  }
}
