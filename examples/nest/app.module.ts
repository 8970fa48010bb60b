import { Module } from '@nestjs/common';
import { WarrenModule } from '../../src/nest';
import { Mailer } from './mailer.service';
import { SignupController } from './signup.controller';
import { topology } from './topology';
import { WelcomeEmail } from './welcome-email.job';

@Module({
  imports: [
    WarrenModule.forRoot({
      url: process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
      // The example runs in CI next to other suites on one broker: its own namespace keeps it apart.
      namespace: process.env.WARREN_NAMESPACE ?? `example-nest-${process.pid}`,
      topology,
    }),
  ],
  controllers: [SignupController],
  providers: [Mailer, WelcomeEmail],
})
export class AppModule {}
