/**
 * What the docs' snippets use without declaring it: the application around them (a mailer, a logger, the
 * topology and job classes of the page before). Global declarations, so a snippet that declares one of
 * these names itself simply shadows it. Kept small: a name belongs here only when several pages use it.
 */
type Warren = import('warren').Warren;
type Handler<T> = import('warren').JobHandler<T>;

interface Mailer {
  send(to: string, template: string | { signal?: AbortSignal }, signal?: AbortSignal): Promise<void>;
}
declare const mailer: Mailer;
declare const log: import('warren').Logger;
declare const topology: import('warren').TopologyDefinition;
declare const warren: Warren;
declare const pool: import('pg').Pool;

declare class WelcomeEmail implements Handler<{ userId: string; email?: string }> {
  constructor(mailer?: Mailer);
  handle(data: { userId: string; email?: string }, ctx: import('warren').JobContext): Promise<void>;
}

/** An application's own types and services, as the guides and recipes name them. */
interface Row {
  id: string;
}
declare function write(row: Row): Promise<void>;
declare const sse: { send(id: string, data: unknown): void };
declare const payments: {
  charge(invoiceId: string, options?: { idempotencyKey?: string }): Promise<{ chargeId: string }>;
  refund(chargeId: string): Promise<void>;
};
declare const users: { id: string; email: string }[];
interface Order {
  orderId: string;
  sku: string;
  amount: number;
  address: string;
}
declare const order: Order;
declare const stock: {
  reserve(sku: string, options: { key: string }): Promise<string>;
  release(reservationId: string): Promise<void>;
};
declare const data: { userId: string; email?: string };
declare const options: import('warren').WarrenOptions;
declare const handlers: object[];
declare function readFileSync(path: string): Buffer;
declare const reports: { build(id: string): Promise<void> };
declare const geocoder: { lookup(address: string): Promise<unknown> };
declare const url: string;
declare class ResizeImage implements Handler<{ url: string }> {
  handle(data: { url: string }): Promise<{ width: number; height: number }>;
}
declare const day: string;
declare class ChargeInvoice implements Handler<{ invoiceId: number }> {
  constructor(service: typeof payments);
  handle(data: { invoiceId: number }): Promise<void>;
}
declare class BuildReport implements Handler<{ day: string }> {
  handle(data: { day: string }): Promise<void>;
}
declare class Invoice implements Handler<{ userId: string; email?: string }> {
  handle(data: { userId: string; email?: string }): Promise<void>;
}
declare class SendReceipt implements Handler<{ orderId: string }> {
  handle(data: { orderId: string }): Promise<void>;
}
declare class FakeMailer implements Mailer {
  readonly sent: string[];
  send(to: string): Promise<void>;
}
declare class FailingMailer implements Mailer {
  send(): Promise<void>;
}
type Activity<T> = import('warren').SlipActivity<T>;
declare class ReserveStock implements Activity<Order> {
  handle(order: Order): Promise<{ reservationId: string }>;
}
declare class ChargeCard implements Activity<Order> {
  handle(order: Order): Promise<{ chargeId: string }>;
}
declare class EmailReceipt implements Activity<Order> {
  handle(order: Order): Promise<void>;
}
declare class Ship implements Activity<Order> {
  handle(order: Order): Promise<void>;
}
declare const activities: import('warren').JobClass[];

/** A plain amqplib confirm channel, as the foreign publishers of the wire-format page hold one. */
declare const channel: import('amqplib').ConfirmChannel;
