import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { main, opsOptions } from '../../../src/cli/main';
import type { OpsOptions } from '../../../src/ops';

/** Runs the command line as `warren` would and returns its exit code and what it wrote to stderr. */
async function run(argv: readonly string[]): Promise<{ code: number; stderr: string }> {
  const write = process.stderr.write;
  let stderr = '';
  process.stderr.write = ((chunk: string | Uint8Array) => {
    stderr += chunk.toString();
    return true;
  }) as typeof process.stderr.write;
  try {
    return { code: await main(argv), stderr };
  } finally {
    process.stderr.write = write;
  }
}

describe('warren command line: flag errors', () => {
  for (const [argv, reason] of [
    [['queues', '--jsno'], "unknown option '--jsno'"],
    [['queues', '-x'], "unknown option '-x'"],
    [['queues', '--url'], "option '--url' needs a value"],
    [['queues', '--yes=1'], "option '--yes' takes no value"],
    [
      ['limits', 'set', 'job', 'key', '--max', '-3'],
      "option '--max' needs a value; one that starts with '-' goes as --max=<value>",
    ],
  ] as const) {
    it(`exits 1 with one line naming the reason and the code for ${argv.join(' ')}`, async () => {
      const { code, stderr } = await run(argv);
      assert.equal(code, 1);
      assert.equal(stderr, `warren: ${reason} (see warren --help) [CLI_USAGE]\n`);
    });
  }

  it('prints the code of every other refusal of the command line too', async () => {
    const { code, stderr } = await run(['frobnicate']);
    assert.equal(code, 1);
    assert.equal(stderr, "warren: unknown command 'frobnicate' (see warren --help) [CLI_USAGE]\n");
  });
});

describe('warren command line: the broker URL', () => {
  const config: OpsOptions = { url: 'amqp://from-config' };
  const withEnv = (env: Record<string, string>, fn: () => void) => {
    const saved = { ...process.env };
    Object.assign(process.env, env);
    try {
      fn();
    } finally {
      for (const key of Object.keys(env)) delete process.env[key];
      Object.assign(process.env, saved);
    }
  };

  it("falls through an exported but empty WARREN_URL to the config's url", () => {
    withEnv({ WARREN_URL: '', AMQP_URL: '' }, () => {
      assert.equal(opsOptions(config, {}).url, 'amqp://from-config');
    });
  });

  it('takes --url, then WARREN_URL, then AMQP_URL, then the config', () => {
    withEnv({ WARREN_URL: 'amqp://w', AMQP_URL: 'amqp://a' }, () => {
      assert.equal(opsOptions(config, { url: 'amqp://flag' }).url, 'amqp://flag');
      assert.equal(opsOptions(config, {}).url, 'amqp://w');
    });
    withEnv({ WARREN_URL: '', AMQP_URL: 'amqp://a' }, () => {
      assert.equal(opsOptions(config, {}).url, 'amqp://a');
    });
  });

  it('falls through an exported but empty WARREN_MANAGEMENT_URL to the config', () => {
    withEnv({ WARREN_MANAGEMENT_URL: '' }, () => {
      const management = { url: 'http://from-config:15672' };
      assert.equal(opsOptions({ ...config, management }, {}).management?.url, 'http://from-config:15672');
    });
  });
});
