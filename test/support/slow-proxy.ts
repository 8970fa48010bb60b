import { connect as connectTcp, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy to the broker at `brokerUrl` that holds every chunk the broker sends for `delayMs` (in order).
 * With `pause`, it also cuts what the broker sends into pieces of `bytes` and sends them `gapMs` apart: a
 * broker that pauses in the middle of a stream's chunk, as a loaded one does. `setDelay` changes the hold of
 * what comes next (never reordering what is held).
 */
export async function slowProxy(
  brokerUrl: string,
  delayMs: number,
  pause?: { bytes: number; gapMs: number },
): Promise<{ url: string; setDelay(ms: number): void; close(): Promise<void> }> {
  const broker = new URL(brokerUrl);
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connectTcp(Number(broker.port || 5672), broker.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream);
    let nextSendAt = 0;
    const sendAt = (at: number, piece: Buffer) =>
      setTimeout(() => client.destroyed || client.write(piece), at - Date.now());
    upstream.on('data', (chunk: Buffer) => {
      const bytes = pause?.bytes ?? chunk.length;
      for (let start = 0; start < chunk.length; start += bytes) {
        nextSendAt = Math.max(Date.now() + delayMs, nextSendAt + (pause?.gapMs ?? 0));
        sendAt(nextSendAt, chunk.subarray(start, start + bytes));
      }
    });
    upstream.on('close', () => setTimeout(() => client.destroy(), delayMs));
    client.on('close', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const url = new URL(brokerUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.href,
    setDelay: (ms) => {
      delayMs = ms;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
