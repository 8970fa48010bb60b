import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * The docs checks of `npm run docs:build` (scripts/check-doc-*.mjs) are code too: these tests show that
 * they find what they are for, and that the repository passes the reference check (every error code,
 * option, dead-letter reason, event, publish option and history kind documented on its page).
 */
function findRoot(): string {
  let dir = __dirname;
  while (!statSync(join(dir, 'package.json'), { throwIfNoEntry: false })) dir = dirname(dir);
  return dir;
}
const root = findRoot();
// an ES module from this CommonJS build: a real dynamic import, not the require() tsc would make of it
const importModule = new Function('url', 'return import(url)') as (url: string) => Promise<unknown>;
const load = <T>(script: string) =>
  importModule(pathToFileURL(join(root, 'scripts', script)).href) as Promise<T>;

interface Snippet {
  lang: string;
  line: number;
  code: string;
  noCheck: string | undefined;
}

describe('docs checks', () => {
  it('extracts each ts snippet with its first line and its no-check reason', async () => {
    const { extractSnippets } = await load<{ extractSnippets(text: string): Snippet[] }>(
      'check-doc-snippets.mjs',
    );
    const page = [
      '# A page',
      '```ts',
      'const a = 1;',
      '```',
      '<!-- no-check: a fragment -->',
      '```ts',
      'handle(data) {}',
      '```',
      '````md',
      '```ts',
      'inside a larger fence',
      '```',
      '````',
    ].join('\n');
    const snippets = extractSnippets(page);
    assert.deepEqual(
      snippets.map((s) => [s.lang, s.line, s.code, s.noCheck]),
      [
        ['ts', 3, 'const a = 1;', undefined],
        ['ts', 7, 'handle(data) {}', 'a fragment'],
        ['md', 10, '```ts\ninside a larger fence\n```', undefined],
      ],
    );
  });

  it('reads the dead-letter reasons from their type, compensation-failed and wrong-queue included', async () => {
    const { membersOf } = await load<{ membersOf(file: string, type: string): string[] }>(
      'check-doc-reference.mjs',
    );
    const reasons = membersOf('src/message/headers.ts', 'DeadReason');
    for (const reason of [
      'compensation-failed',
      'wrong-queue',
      'too-large',
      'invalid-headers',
      'unrepublishable',
    ])
      assert.ok(reasons.includes(reason), reason);
    assert.ok(membersOf('src/warren/options.ts', 'WarrenOptions').includes('deduplication'));
  });

  it('generates the options page with code spans as written and only prose escaped for Vue', async () => {
    const { optionsPage } = await load<{ optionsPage(): string }>('options-reference.mjs');
    const page = optionsPage();
    const spans = [...page.matchAll(/`[^`\n]*`/g)].map((match) => match[0]);
    assert.ok(
      spans.includes('`<namespace>.<queue>`'),
      'a TSDoc code span with angle brackets stays as it is',
    );
    assert.deepEqual(
      spans.filter((span) => span.includes('&lt;')),
      [],
      'no entity inside a code span (it would show as &lt;)',
    );
    const prose = page.replace(/`[^`\n]*`/g, '').replace(/<!--[^\n]*-->/g, '');
    assert.doesNotMatch(prose, /<[a-z]/i, 'no raw tag outside code spans (Vue would compile it)');
  });

  it('finds every code, option, reason, event and history kind of the code on its reference page', () => {
    const out = execFileSync(process.execPath, [join(root, 'scripts', 'check-doc-reference.mjs')], {
      cwd: root,
      encoding: 'utf8',
    });
    assert.match(out, /, 0 missing/);
  });

  it("lists every public member of Warren in the getting-started page's call table", () => {
    // The members as the published types declare them (this test runs from the compiled dist/).
    // Warren's own members, and its facades' as `cron.add`, `delayed.cancel`.
    const files = { 'warren.d.ts': '', 'warren-cron.d.ts': 'cron.', 'warren-delayed.d.ts': 'delayed.' };
    const declared = Object.entries(files).flatMap(([file, prefix]) =>
      [
        ...readFileSync(join(root, 'dist', 'src', 'warren', file), 'utf8').matchAll(
          /^ {4}(?:readonly |get )?([a-zA-Z]+)[(<:]/gm,
        ),
      ]
        .map((match) => match[1]!)
        .filter((name) => name !== 'constructor')
        .map((name) => prefix + name),
    );
    const members = [...new Set(declared)];
    assert.ok(members.includes('deleteTopology') && members.length > 20, `read ${members.join(', ')}`);
    assert.ok(
      members.includes('cron.add') && members.includes('delayed.cancel'),
      `read ${members.join(', ')}`,
    );
    const page = readFileSync(join(root, 'docs', 'guide', 'getting-started.md'), 'utf8');
    const table = page.slice(page.indexOf('## The `Warren` instance at a glance'));
    const missing = members.filter((name) => !new RegExp(`\`${name.replace('.', '\\.')}[\`(.]`).test(table));
    assert.deepEqual(missing, [], 'every public member of Warren has a row');
  });
});
