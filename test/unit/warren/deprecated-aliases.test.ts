import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createRecordingLogger } from '../../../src/testing';
import { DEPRECATED_ALIASES, DeprecationWarnings } from '../../../src/warren/deprecated-aliases';

describe("Warren's deprecated aliases", () => {
  it('log one warning per alias, the first time it is used, naming the replacement', () => {
    const { logger, entries } = createRecordingLogger('debug');
    const warnings = new DeprecationWarnings(logger);
    warnings.warn('cancelDelayed');
    warnings.warn('cancelDelayed');
    warnings.warn('schedules');
    assert.deepEqual(
      entries.map((e) => e.msg),
      [
        'warren.cancelDelayed is deprecated: use warren.delayed.cancel',
        'warren.schedules is deprecated: use warren.cron.list',
      ],
    );
  });

  it('name a replacement on the facades for every old cron and delayed-job method', () => {
    for (const [alias, replacement] of Object.entries(DEPRECATED_ALIASES)) {
      assert.match(replacement, /^(cron|delayed)\.|Local$/, alias);
    }
  });
});
