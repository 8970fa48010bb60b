import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the fake dependency received. */
export interface FakeRequest {
  readonly jobId: string;
  readonly ok: boolean;
  readonly at: number;
}

/**
 * A third-party HTTP API on loopback (127.0.0.1, a free port) that the tests switch between down
 * (503) and up (200): the dependency behind a circuit breaker. It records every request that reached
 * it, so a test can tell calls the breaker let through from calls it refused.
 */
export class FakeThirdParty {
  readonly requests: FakeRequest[] = [];
  private isDown = false;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeThirdParty> {
    let fake: FakeThirdParty | undefined;
    const server = createServer((req: IncomingMessage, res: ServerResponse) => fake!.respond(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const { port } = server.address() as AddressInfo;
    fake = new FakeThirdParty(server, `http://127.0.0.1:${port}`);
    return fake;
  }

  /** From now on every request fails with 503. */
  goDown(): void {
    this.isDown = true;
  }

  /** From now on every request succeeds. */
  recover(): void {
    this.isDown = false;
  }

  /** Requests that failed, per job id. */
  failuresOf(jobId: string): number {
    return this.requests.filter((r) => r.jobId === jobId && !r.ok).length;
  }

  get failures(): number {
    return this.requests.filter((r) => !r.ok).length;
  }

  /** The client side: POST one call for `jobId`; rejects unless the API answered 2xx. */
  async call(jobId: string): Promise<void> {
    const response = await fetch(`${this.url}/send`, { method: 'POST', headers: { 'job-id': jobId } });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`third party answered ${response.status}`);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private respond(req: IncomingMessage, res: ServerResponse): void {
    const ok = !this.isDown;
    this.requests.push({ jobId: String(req.headers['job-id'] ?? ''), ok, at: Date.now() });
    req.resume();
    res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'sent' : 'unavailable');
  }
}
