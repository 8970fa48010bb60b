#!/usr/bin/env node
/**
 * The reference pages name everything the code has: each closed set below is read from its type in src/
 * with the TypeScript compiler, and each member must appear, in backticks, on the page that documents it.
 * A new error code, option, dead-letter reason, event, publish option or history kind therefore fails
 * `npm run docs:build` until it is documented. Exit 1 on anything missing.
 *
 * The code's own pointers into the docs stay true too: a TSDoc or comment in src/ that names a docs page
 * (`docs/guide/cron.md`) must name one that exists, and none may send a reader to the README for a topic
 * (the README is a short entry page; topics live on the docs site).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** What must be documented where: a type (a union of string literals, or an interface's keys) and pages. */
const RULES = [
  { file: 'src/core/errors.ts', type: 'WarrenErrorCode', pages: ['docs/reference/errors.md'] },
  {
    file: 'src/cli/cli-error.ts',
    type: 'CliErrorCode',
    pages: ['docs/reference/errors.md', 'docs/operating/cli.md'],
  },
  {
    file: 'src/message/headers.ts',
    type: 'DeadReason',
    pages: ['docs/guide/dead-letters.md', 'docs/reference/metrics-and-traces.md'],
  },
  { file: 'src/warren/options.ts', type: 'WarrenOptions', pages: ['docs/reference/options.md'] },
  { file: 'src/core/job-types.ts', type: 'PublishOptions', pages: ['docs/guide/publishing.md'] },
  { file: 'src/core/events.ts', type: 'WarrenEvents', pages: ['docs/guide/events.md'] },
  { file: 'src/history/history-event.ts', type: 'HistoryKind', pages: ['docs/operating/cli.md'] },
  { file: 'src/history/history-event.ts', type: 'JobStatus', pages: ['docs/operating/ops-api.md'] },
  { file: 'src/job-events/event-record.ts', type: 'LiveEventKind', pages: ['docs/guide/events.md'] },
];

/** The members of a string-literal union or the property names of an interface, as written in the file. */
export function membersOf(file, typeName) {
  const source = ts.createSourceFile(
    file,
    readFileSync(join(root, file), 'utf8'),
    ts.ScriptTarget.ES2022,
    true,
  );
  let members;
  const visit = (node) => {
    if (ts.isTypeAliasDeclaration(node) && node.name.text === typeName) {
      const types = ts.isUnionTypeNode(node.type) ? node.type.types : [node.type];
      members = types
        .filter((t) => ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal))
        .map((t) => t.literal.text);
    } else if (ts.isInterfaceDeclaration(node) && node.name.text === typeName) {
      members = node.members.filter((m) => m.name).map((m) => m.name.getText(source).replace(/^'|'$/g, ''));
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  if (!members?.length) throw new Error(`${file}: no type ${typeName} with members`);
  return members;
}

/** src/ comments that point at a docs page that does not exist, or at the README. */
export function staleDocPointers() {
  const stale = [];
  const walk = (dir) =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? walk(path) : path.endsWith('.ts') ? [path] : [];
    });
  for (const file of walk(join(root, 'src'))) {
    const rel = file.slice(root.length + 1);
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (/\bREADME\b/.test(line))
        stale.push(`${rel}:${i + 1}: points at the README; name the docs page instead`);
      for (const match of line.matchAll(/\bdocs\/[\w/-]+\.md\b/g))
        if (!statSync(join(root, match[0]), { throwIfNoEntry: false }))
          stale.push(`${rel}:${i + 1}: ${match[0]} does not exist`);
    });
  }
  return stale;
}

/**
 * The comparison pages say what warren does today: "When to pick warren" (README) and docs/why-warren.md
 * once said the outbox was "not there yet" after it shipped. A promise of later has no place there.
 */
export function staleComparisons() {
  const stale = [];
  for (const [file, from, to] of [
    ['README.md', '## When to pick warren', '\n## '],
    ['docs/why-warren.md', '', undefined],
  ]) {
    const text = readFileSync(join(root, file), 'utf8');
    const start = text.indexOf(from);
    if (start < 0) {
      stale.push(`${file}: no section '${from}'`);
      continue;
    }
    const end = to === undefined ? text.length : text.indexOf(to, start + from.length);
    const section = text.slice(start, end < 0 ? text.length : end);
    for (const match of section.matchAll(/not (?:there )?yet|coming soon|is planned|on the roadmap/gi))
      stale.push(`${file}: '${match[0]}' in the comparison: say what warren does today`);
  }
  return stale;
}

function main() {
  const missing = [...staleDocPointers(), ...staleComparisons()];
  let checked = 0;
  for (const rule of RULES) {
    const members = membersOf(rule.file, rule.type);
    for (const page of rule.pages) {
      const text = readFileSync(join(root, page), 'utf8');
      for (const member of members) {
        checked++;
        // `name`, or a dotted path starting with it (`scheduler.enabled`), in backticks
        if (!new RegExp(`\`${member.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[\`.]`).test(text))
          missing.push(`${page}: ${rule.type} '${member}' (${rule.file}) is not documented`);
      }
    }
  }
  for (const line of missing) console.error(line);
  console.log(
    `doc reference: ${checked} name(s) from ${RULES.length} types checked on their pages, ${missing.length} missing`,
  );
  process.exitCode = missing.length > 0 ? 1 : 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
