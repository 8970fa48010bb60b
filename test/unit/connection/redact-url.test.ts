import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createWarren, WarrenError } from '../../../src';
import { maskPasswords, redactUrl } from '../../../src/connection';

describe('password masking', () => {
  it('masks the password however the URL looks', () => {
    assert.equal(redactUrl('amqp://user:secret@host:5672/vh'), 'amqp://user:***@host:5672/vh');
    assert.equal(redactUrl('amqp://user:p@ss@word@host/vh'), 'amqp://user:***@host/vh');
    assert.equal(redactUrl('amqp://:secret@host'), 'amqp://:***@host');
    assert.equal(redactUrl('http://user:secret@host'), 'http://user:***@host');
    assert.equal(redactUrl('user:se/cr:et@host'), 'user:***@host');
    assert.equal(redactUrl('amqp://host:5672'), 'amqp://host:5672');
  });

  it('never prints the password of a URL refused for its scheme or of a broker it cannot reach', async () => {
    for (const url of ['http://user:hunter2@host', 'amqp://:hunter2@host', 'ampq://u:hunt@er2@host']) {
      await assert.rejects(createWarren({ url, connection: { connectTimeoutMs: 0 } }), (error: unknown) => {
        assert.ok(error instanceof WarrenError, String(error));
        assert.ok(!/hunter2|hunt@er2/.test(error.message), error.message);
        return true;
      });
    }
    assert.equal(
      maskPasswords('getaddrinfo ENOTFOUND er2@host', ['amqp://u:er2@host']),
      'getaddrinfo ENOTFOUND ***@host',
    );
  });
});
