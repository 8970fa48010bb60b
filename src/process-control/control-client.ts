import { randomUUID } from 'node:crypto';
import type { Channel, ConsumeMessage } from 'amqplib';
import {
  CONTROL_PROTOCOL_VERSION,
  parseControlReply,
  type ControlReply,
  type ControlRequest,
} from './control-protocol';
import type { TopologyNaming } from '../topology';
import { exchangeExists } from '../connection';
import type { RecordTrust } from '../records';
import { closeChannel } from '../core';

const DIRECT_REPLY_TO = 'amq.rabbitmq.reply-to';

/**
 * Asks every warren process on the control exchange and gathers their answers for `timeoutMs`, or until
 * `expected` processes answered when the caller knows how many listen (RabbitMQ direct reply-to: no
 * reply queue to declare or clean up). One answer per process id; answers that do not parse or belong
 * to another request are dropped.
 */
export class ControlClient {
  constructor(
    private readonly naming: TopologyNaming,
    private readonly openChannel: () => Promise<Channel>,
    private readonly trust: RecordTrust,
  ) {}

  async ask(
    request: Omit<ControlRequest, 'v'>,
    timeoutMs: number,
    expected?: number,
  ): Promise<ControlReply[]> {
    // No process of this namespace has ever started, or (as the caller knows) none listens now.
    if (expected === 0 || !(await this.exchangeExists())) return [];
    const channel = await this.openChannel();
    channel.on('error', () => undefined);
    const correlationId = randomUUID();
    const replies = new Map<string, ControlReply>();
    const reader = this.trust.reader('control-reply');
    let allAnswered: () => void = () => undefined;
    const gathered = new Promise<void>((resolve) => {
      allAnswered = resolve;
    });
    try {
      await channel.consume(
        DIRECT_REPLY_TO,
        (message: ConsumeMessage | null) => {
          if (message?.properties.correlationId !== correlationId) return;
          const where = { correlationId };
          if (!reader.accept(message.content, message.properties.headers, where, correlationId)) return;
          const reply = parseControlReply(message.content);
          if (reply === undefined) reader.skip('malformed', where);
          if (reply && reply.command === request.command) replies.set(reply.process.id, reply);
          if (expected !== undefined && replies.size >= expected) allAnswered();
        },
        { noAck: true },
      );
      const content = Buffer.from(JSON.stringify({ v: CONTROL_PROTOCOL_VERSION, ...request, t: Date.now() }));
      channel.publish(this.naming.controlExchange(), '', content, {
        replyTo: DIRECT_REPLY_TO,
        correlationId,
        contentType: 'application/json',
        headers: this.trust.proof('control-request', content, correlationId),
      });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([gathered, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
      return [...replies.values()].sort(
        (a, b) => a.process.host.localeCompare(b.process.host) || a.process.pid - b.process.pid,
      );
    } finally {
      await closeChannel(channel);
    }
  }

  private async exchangeExists(): Promise<boolean> {
    return exchangeExists(this.openChannel, this.naming.controlExchange());
  }
}
