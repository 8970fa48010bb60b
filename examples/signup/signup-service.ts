import type { Warren } from '../../src';
import { WelcomeEmail } from './jobs/welcome-email';

/** A service on the request path: it publishes and returns in milliseconds; the email is sent later. */
export class SignupService {
  constructor(private readonly warren: Warren) {}

  async signUp(userId: string, email: string): Promise<void> {
    await this.warren.publish(WelcomeEmail, { userId, email }, { jobId: `welcome-${userId}` });
  }
}
