// Rascal ships no type declarations; this covers only what the benchmark uses.
// biome-ignore-all lint/suspicious/noExplicitAny: Rascal's own events and content are untyped
declare module 'rascal' {
  import { EventEmitter } from 'node:events';

  export interface PublicationSession extends EventEmitter {
    on(event: 'success', listener: (messageId: string) => void): this;
    on(event: 'error', listener: (err: Error, messageId: string) => void): this;
    on(event: string, listener: (...args: any[]) => void): this;
  }

  export interface RecoveryStrategy {
    strategy: 'ack' | 'nack' | 'republish' | 'forward';
    attempts?: number;
    defer?: number;
    /** `forward`: the publication to forward to. */
    publication?: string;
  }

  export type AckOrNack = (err?: Error, recovery?: RecoveryStrategy | RecoveryStrategy[]) => void;

  export interface SubscriberSession extends EventEmitter {
    on(
      event: 'message',
      listener: (message: import('amqplib').Message, content: any, ackOrNack: AckOrNack) => void,
    ): this;
    on(event: 'error', listener: (err: Error) => void): this;
    on(event: string, listener: (...args: any[]) => void): this;
    cancel(): Promise<void>;
  }

  export interface BrokerAsPromised extends EventEmitter {
    publish(name: string, message: unknown, overrides?: string | object): Promise<PublicationSession>;
    subscribe(name: string, overrides?: object): Promise<SubscriberSession>;
    shutdown(): Promise<void>;
    nuke(): Promise<void>;
  }

  export const BrokerAsPromised: {
    create(config: object, components?: object): Promise<BrokerAsPromised>;
  };

  export function withDefaultConfig(config: object): object;
}
