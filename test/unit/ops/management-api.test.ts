import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ManagementApiError } from '../../../src/ops';
import { ManagementApi } from '../../../src/ops/management-api';

/** A stand-in for the management API that answers each path with the statuses queued for it. */
describe('the management API client', () => {
  const answers = new Map<string, number[]>();
  let server: Server;
  let url: string;
  before(async () => {
    server = createServer((request, response) => {
      const path = (request.url ?? '').split('?')[0]!;
      const status = answers.get(path)?.shift() ?? 200;
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(status === 200 ? '[]' : '{"error":"Internal Server Error"}');
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());
  const api = () => new ManagementApi({ url, username: 'u', password: 'p', vhost: '/', timeoutMs: 5_000 });

  it('lists again after a 500 (a listing that raced a deletion), so one bad answer fails nothing', async () => {
    answers.set('/api/queues/%2F', [500, 500]);
    const state = await api().state();
    assert.deepEqual(state.queues, []);
    assert.deepEqual(answers.get('/api/queues/%2F'), []);
  });

  it('gives up with a typed error when the 500s go on, and at once on other statuses', async () => {
    answers.set('/api/queues/%2F', [500, 500, 500, 500]);
    await assert.rejects(api().state(), (e) => e instanceof ManagementApiError && e.status === 500);
    assert.deepEqual(answers.get('/api/queues/%2F'), [500]);
    answers.set('/api/exchanges/%2F', [401, 401]);
    await assert.rejects(api().state(), (e) => e instanceof ManagementApiError && e.status === 401);
    assert.deepEqual(answers.get('/api/exchanges/%2F'), [401]);
  });
});
