import { Inject, Injectable } from '@nestjs/common';
import { Warren, type WarrenJobs } from '../index';

/**
 * Publishing, for services and controllers: inject it (or `Warren` itself for the whole API).
 * Typed like `Warren.publish`: by job name (augment `WarrenJobs`) or by @Job class.
 *
 * @example
 * @Controller('signup')
 * export class SignupController {
 *   constructor(private readonly jobs: WarrenPublisher) {}
 *   @Post() async signup(@Body() body: { userId: string }) {
 *     await this.jobs.publish(WelcomeEmail, { userId: body.userId }, { jobId: `welcome-${body.userId}` });
 *   }
 * }
 */
@Injectable()
export class WarrenPublisher<TJobs extends object = WarrenJobs> {
  /** Resolves once the broker confirmed the job; see `Warren.publish`. */
  readonly publish: Warren<TJobs>['publish'];
  /** Many jobs at once, one result per job; see `Warren.publishMany`. */
  readonly publishMany: Warren<TJobs>['publishMany'];

  constructor(@Inject(Warren) warren: Warren<TJobs>) {
    this.publish = warren.publish.bind(warren) as Warren<TJobs>['publish'];
    this.publishMany = warren.publishMany.bind(warren) as Warren<TJobs>['publishMany'];
  }
}
