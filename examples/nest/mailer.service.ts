import { Injectable } from '@nestjs/common';

/** Stands in for a real mail client: an ordinary Nest provider that the job handler gets injected. */
@Injectable()
export class Mailer {
  readonly sent: { to: string; template: string }[] = [];

  async send(to: string, template: string, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    this.sent.push({ to, template });
  }
}
