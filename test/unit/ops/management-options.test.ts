import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigurationError } from '../../../src';
import { redactCredentials } from '../../../src/ops';
import { resolveOpsOptions } from '../../../src/ops/options';

const management = (m: Parameters<typeof resolveOpsOptions>[0]['management']) =>
  resolveOpsOptions({ management: m }).management!;

describe('management API options', () => {
  it('takes the credentials out of the URL: fetch refuses a URL that carries them', () => {
    const m = management({ url: 'http://ops%40corp:p%40ss%3Aw0rd@rabbit.internal:15672/' });
    assert.equal(m.url, 'http://rabbit.internal:15672');
    assert.equal(m.username, 'ops@corp');
    assert.equal(m.password, 'p@ss:w0rd');
    assert.deepEqual(
      { ...management({ url: 'https://rabbit.internal/mgmt/', username: 'ops', password: 'x' }) },
      { url: 'https://rabbit.internal/mgmt', username: 'ops', password: 'x', vhost: '/', timeoutMs: 10_000 },
    );
    assert.equal(management({ url: 'http://127.0.0.1:15672' }).username, 'guest');
  });

  it('refuses credentials given twice and differently, and a URL that is not http, without showing the password', () => {
    assert.throws(
      () => management({ url: 'http://ops:S3cretPw@rabbit:15672', password: 'other' }),
      (error: unknown) =>
        error instanceof ConfigurationError &&
        error.message ===
          "management.password must match the one in management.url, or be given in one place only (got '***')",
    );
    assert.throws(
      () => management({ url: 'ftp://ops:S3cretPw@rabbit' }),
      (error: unknown) =>
        error instanceof ConfigurationError &&
        error.message === "management.url must be an http(s) URL (got 'ftp://ops:***@rabbit')",
    );
    assert.equal(management({ url: 'http://ops:pw@rabbit', username: 'ops' }).password, 'pw');
  });

  it('redacts every password of a URL in a text, and authorization values', () => {
    assert.equal(
      redactCredentials('at http://guest:S3cret@h:15672/api and amqps://u:p@ss@b:5671/v, then http://h/x@y'),
      'at http://guest:***@h:15672/api and amqps://u:***@b:5671/v, then http://h/x@y',
    );
    assert.equal(redactCredentials('Authorization: Basic Z3Vlc3Q6Z3Vlc3Q='), 'Authorization: Basic ***');
  });
});
