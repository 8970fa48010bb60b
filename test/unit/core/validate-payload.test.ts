import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PayloadValidationError, validatePayload } from '../../../src';
import type { StandardSchemaV1 } from '../../../src/core';
import { summarizeIssues } from '../../../src/core';

function schema(validate: StandardSchemaV1['~standard']['validate']): StandardSchemaV1 {
  return { '~standard': { version: 1, vendor: 'test', validate } };
}

describe('validatePayload', () => {
  it("returns the schema's output when the payload is valid", async () => {
    const trim = schema((value) => ({ value: String(value).trim() }));
    assert.deepEqual(await validatePayload(trim, '  a '), { value: 'a' });
  });

  it('flattens issue paths to a.b.0, for sync and async schemas alike', async () => {
    const issues = [
      { message: 'required', path: ['user', { key: 'emails' }, 0] },
      { message: 'too short', path: [] },
    ];
    const expected = { issues: [{ message: 'required', path: 'user.emails.0' }, { message: 'too short' }] };
    assert.deepEqual(
      await validatePayload(
        schema(() => ({ issues })),
        {},
      ),
      expected,
    );
    assert.deepEqual(
      await validatePayload(
        schema(async () => ({ issues })),
        {},
      ),
      expected,
    );
  });

  it('fails a payload whose schema throws, with one issue naming the throw', async () => {
    const throws = schema(() => {
      throw new RangeError('Maximum call stack size exceeded');
    });
    assert.deepEqual(await validatePayload(throws, {}), {
      issues: [{ message: 'the schema threw: Maximum call stack size exceeded' }],
    });
  });

  it('summarizes issues the way PayloadValidationError shows them', () => {
    const issues = [{ message: 'required', path: 'a.b' }, { message: 'bad' }];
    assert.equal(summarizeIssues(issues), 'a.b: required; bad');
    assert.match(new PayloadValidationError('x.y', issues).message, /'x.y' is invalid: a.b: required; bad$/);
  });
});
