import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import ts from 'typescript';
import { ConfigurationError, Cron, Job, type JobHandler } from '../../../src';
import { readCronMetadata, readJobDefinition } from '../../../src/decorators';

/**
 * The suite compiles with `experimentalDecorators`; a plain application may use standard (TC39) decorators
 * instead. This compiles a user's class both ways with the TypeScript compiler and runs the output against
 * warren's build, so each decorator model is exercised for real.
 */
const warrenEntry = join(__dirname, '..', '..', '..', 'src', 'index.js');

const userSource = `
import { Cron, Job } from ${JSON.stringify(warrenEntry)};
@Cron('0 9 * * *', { tz: 'Asia/Tokyo', id: 'morning' })
@Cron('0 18 * * *', { id: 'evening' })
@Job('report.send', { queue: 'reports', attempts: 3 })
export class SendReport {
  async handle(data: { report: string }) { return data.report; }
}
`;

function compileAndLoad(experimentalDecorators: boolean): { SendReport: object } {
  const { outputText, diagnostics } = ts.transpileModule(userSource, {
    reportDiagnostics: true,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.CommonJS,
      experimentalDecorators,
      emitDecoratorMetadata: experimentalDecorators,
    },
  });
  assert.deepEqual(diagnostics, []);
  // the two models compile to different code: standard decorators go through __esDecorate
  assert.equal(outputText.includes('__esDecorate'), !experimentalDecorators);
  const module = { exports: {} as { SendReport: object } };
  new Function('require', 'module', 'exports', outputText)(require, module, module.exports);
  return module.exports;
}

for (const [model, experimental] of [
  ['legacy (experimentalDecorators)', true],
  ['standard (TC39)', false],
] as const) {
  describe(`@Job and @Cron as ${model} decorators`, () => {
    it('record the job definition and the schedules in source order', () => {
      const { SendReport } = compileAndLoad(experimental);
      assert.deepEqual(
        { ...readJobDefinition(SendReport) },
        { name: 'report.send', queue: 'reports', attempts: 3 },
      );
      assert.deepEqual(
        readCronMetadata(SendReport).map((cron) => [cron.pattern, cron.options.id]),
        [
          ['0 9 * * *', 'morning'],
          ['0 18 * * *', 'evening'],
        ],
      );
    });
  });
}

describe('@Job and @Cron outside a class', () => {
  it('refuse a standard method decoration with a ConfigurationError', () => {
    const context = { kind: 'method', name: 'handle' } as unknown as ClassDecoratorContext;
    const asClass = (() => undefined) as unknown as abstract new () => JobHandler<object>;
    assert.throws(
      () => Job('a.b', { queue: 'q' })(asClass, context as ClassDecoratorContext<typeof asClass>),
      (error: unknown) =>
        error instanceof ConfigurationError && /@Job decorates a class, not a method/.test(error.message),
    );
    assert.throws(
      () => Cron('* * * * *')(asClass, context as ClassDecoratorContext<typeof asClass>),
      (error: unknown) =>
        error instanceof ConfigurationError && /@Cron decorates a class, not a method/.test(error.message),
    );
  });
});

describe('@Job and @Cron without a compiler', () => {
  // docs/guide/getting-started.md, "Decorators": plain JavaScript calls them as functions
  it('record the job definition and the schedule when plain JavaScript calls them as functions', () => {
    const plainJs = `
      const { Cron, Job } = require(${JSON.stringify(warrenEntry)});
      class SendReport { async handle(data) { return data.report; } }
      Job('report.send', { queue: 'reports', attempts: 3 })(SendReport);
      Cron('0 9 * * *', { id: 'morning' })(SendReport);
      module.exports = { SendReport };
    `;
    const module = { exports: {} as { SendReport: object } };
    new Function('require', 'module', 'exports', plainJs)(require, module, module.exports);
    const { SendReport } = module.exports;
    assert.deepEqual(
      { ...readJobDefinition(SendReport) },
      { name: 'report.send', queue: 'reports', attempts: 3 },
    );
    assert.deepEqual(
      readCronMetadata(SendReport).map((cron) => [cron.pattern, cron.options.id]),
      [['0 9 * * *', 'morning']],
    );
  });
});
