#!/usr/bin/env node
/**
 * Every ```ts and ```js snippet of the docs (docs/**\/*.md, README.md, CONTRIBUTING.md) compiles against warren's own
 * sources: each snippet is its own module in one TypeScript program, `warren` and `warren/<entry>` resolved
 * to src/ through package.json `exports`, and the names a snippet uses without declaring them (a `mailer`,
 * the `topology` of the page before) declared once in scripts/doc-snippets/context.d.ts.
 *
 * A snippet with no `import` line sees every export of warren's entries as if imported (a page need not
 * repeat the imports of the page before; the names come from test/unit/public-api.txt, the committed API
 * list); a snippet that imports anything must import all it uses, as a file would.
 *
 * JavaScript snippets (```js, ```mjs, ```cjs) are type-checked as written (checkJs, no implicit imports); the
 * application modules they require by relative path are typed in scripts/doc-snippets/app/. Every snippet
 * with a decorator compiles a second time with standard decorators (the docs promise both work), NestJS
 * code excepted.
 *
 * A snippet that cannot compile (a fragment, a shell session, a file of another project) is preceded by
 *   <!-- no-check: the reason -->
 * and is counted: the totals line says how many were checked and how many were not. A marker without a
 * reason is an error, and so is a ```typescript or ```tsx fence (write ```ts). Exit 1 on any error.
 *
 * VitePress checks the links between pages; the files outside docs/ (README.md, CONTRIBUTING.md,
 * CHANGELOG.md) are checked here: every relative link must name a file of the repository.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MARKER = /^<!--\s*no-check(?::\s*(.*?))?\s*-->$/;
const SNIPPET_DIR = join(root, '.doc-snippets');
/** Fences checked as JavaScript (allowJs + checkJs), beside ```ts. */
const JS_LANGS = new Set(['js', 'mjs', 'cjs']);

/** The Markdown files whose snippets are checked. */
function markdownFiles() {
  const out = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      if (name === '.vitepress' || name === 'node_modules') continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.md')) out.push(path);
    }
  };
  walk(join(root, 'docs'));
  for (const name of ['README.md', 'CONTRIBUTING.md']) {
    const path = join(root, name);
    if (statSync(path, { throwIfNoEntry: false })) out.push(path);
  }
  return out.sort();
}

/** The fenced snippets of one file: language, first code line (1-based), code, and its no-check reason. */
export function extractSnippets(text) {
  const lines = text.split('\n');
  const snippets = [];
  let open;
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(\s*)(`{3,}|~{3,})\s*([^\s{:]*)(.*)$/.exec(lines[i]);
    if (open === undefined) {
      if (!fence) continue;
      let previous = i - 1;
      while (previous >= 0 && lines[previous].trim() === '') previous--;
      const marker = previous >= 0 ? MARKER.exec(lines[previous].trim()) : null;
      open = {
        fence: fence[2],
        lang: fence[3].toLowerCase(),
        start: i + 2,
        body: [],
        noCheck: marker ? (marker[1] ?? '') : undefined,
      };
    } else if (fence?.[2].startsWith(open.fence) && fence[3] === '' && fence[4].trim() === '') {
      snippets.push({ lang: open.lang, line: open.start, code: open.body.join('\n'), noCheck: open.noCheck });
      open = undefined;
    } else {
      open.body.push(lines[i]);
    }
  }
  return snippets;
}

/** `warren` and `warren/<entry>` -> their source entry, from package.json `exports`. */
function entryPaths() {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const paths = {};
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    const types = typeof target === 'string' ? undefined : target.types;
    if (!types?.endsWith('.d.ts')) continue;
    const name = subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
    paths[name] = [types.replace(/^\.\/dist\//, './').replace(/\.d\.ts$/, '.ts')];
  }
  return paths;
}

/** One import line of every public name, each from the first entry that exports it (`warren` first). */
function implicitImports() {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const byEntry = new Map();
  const seen = new Set();
  for (const line of readFileSync(join(root, 'test', 'unit', 'public-api.txt'), 'utf8').split('\n')) {
    const [entry, name] = line.trim().split(/\s+/);
    if (!entry || !name || seen.has(name)) continue;
    seen.add(name);
    const module = entry === '.' ? pkg.name : `${pkg.name}/${entry.slice(2)}`;
    byEntry.set(module, [...(byEntry.get(module) ?? []), name]);
  }
  return [...byEntry].map(([module, names]) => `import { ${names.join(', ')} } from '${module}';`).join(' ');
}

/** Relative links of the Markdown files outside docs/ that name no file. */
function brokenRootLinks() {
  const broken = [];
  for (const name of ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md']) {
    const path = join(root, name);
    if (!statSync(path, { throwIfNoEntry: false })) continue;
    const text = readFileSync(path, 'utf8').replace(/```[\s\S]*?```/g, '');
    for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1].split('#')[0];
      if (target === '' || /^[a-z]+:/i.test(target)) continue;
      if (!statSync(join(root, target), { throwIfNoEntry: false }))
        broken.push(`${name}: broken link ${match[1]}`);
    }
  }
  return broken;
}

/** Type-checks the virtual snippet files in one program; the errors name the Markdown file and line. */
function compile(snippets, checked, options, application) {
  const errors = [];
  const virtual = new Map([...application, ...snippets]);
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    const text = virtual.get(resolve(fileName));
    return text !== undefined
      ? ts.createSourceFile(fileName, text, languageVersion, true)
      : getSourceFile(fileName, languageVersion, onError, shouldCreate);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (fileName) => virtual.has(resolve(fileName)) || fileExists(fileName);
  const directoryExists = host.directoryExists?.bind(host);
  host.directoryExists = (dir) =>
    [...virtual.keys()].some((file) => file.startsWith(`${resolve(dir)}/`)) ||
    (directoryExists?.(dir) ?? true);
  const readFile = host.readFile.bind(host);
  host.readFile = (fileName) => virtual.get(resolve(fileName)) ?? readFile(fileName);

  const context = join(root, 'scripts', 'doc-snippets', 'context.d.ts');
  const program = ts.createProgram([context, ...snippets.keys()], options, host);
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const source = diagnostic.file ? checked.get(resolve(diagnostic.file.fileName)) : undefined;
    if (diagnostic.file && source) {
      const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
      errors.push(`${source.file}:${source.line + line}: TS${diagnostic.code} ${message}`);
    } else {
      const where = diagnostic.file ? relative(root, diagnostic.file.fileName) : 'options';
      errors.push(`${where}: TS${diagnostic.code} ${message}`);
    }
  }
  return errors;
}

function main() {
  const started = Date.now();
  const errors = brokenRootLinks();
  const checked = new Map(); // virtual file -> { file, line }
  const virtual = new Map();
  const prelude = implicitImports();
  let unchecked = 0;
  let pages = 0;
  const uncheckedReasons = [];
  for (const file of markdownFiles()) {
    const rel = relative(root, file);
    if (rel.startsWith('docs/')) pages++;
    for (const snippet of extractSnippets(readFileSync(file, 'utf8'))) {
      if (snippet.lang === 'typescript' || snippet.lang === 'tsx') {
        errors.push(`${rel}:${snippet.line - 1}: write \`\`\`ts, not \`\`\`${snippet.lang}`);
        continue;
      }
      const isJs = JS_LANGS.has(snippet.lang);
      if (snippet.lang !== 'ts' && !isJs) continue;
      if (snippet.noCheck !== undefined) {
        if (snippet.noCheck.trim() === '')
          errors.push(
            `${rel}:${snippet.line - 1}: a no-check marker needs a reason (<!-- no-check: why -->)`,
          );
        unchecked++;
        uncheckedReasons.push(`${rel}:${snippet.line - 1}: ${snippet.noCheck}`);
        continue;
      }
      const extension = isJs
        ? snippet.lang === 'cjs'
          ? 'cjs'
          : snippet.lang === 'mjs'
            ? 'mjs'
            : 'js'
        : 'ts';
      const name = join(SNIPPET_DIR, `${rel.replace(/[^\w]+/g, '_')}_${snippet.line}.${extension}`);
      if (isJs) {
        // JavaScript is checked as written (a CommonJS config, a foreign publisher): no implicit imports,
        // `// @ts-check` semantics through checkJs, its globals from context.d.ts
        virtual.set(name, `${snippet.code}\n`);
        checked.set(name, { file: rel, line: snippet.line, js: true });
        continue;
      }
      // `export {}` makes every snippet a module of its own (its names do not clash with another's), on the
      // same line as the code's first line so that line numbers stay the Markdown file's
      const imports = /^\s*import\s/m.test(snippet.code) ? '' : prelude;
      virtual.set(name, `export {}; ${imports} ${snippet.code}\n`);
      checked.set(name, { file: rel, line: snippet.line, decorated: /^\s*@\w/m.test(snippet.code) });
    }
  }

  // The application modules snippets import by relative path (scripts/doc-snippets/app, mirrored beside them)
  const appDir = join(root, 'scripts', 'doc-snippets', 'app');
  const appFiles = (dir) =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? appFiles(join(dir, entry.name)) : [join(dir, entry.name)],
    );
  const application = new Map(
    appFiles(appDir).map((file) => [join(SNIPPET_DIR, relative(appDir, file)), readFileSync(file, 'utf8')]),
  );
  const base = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    types: ['node'],
    strict: true,
    allowJs: true,
    checkJs: true,
    esModuleInterop: true,
    skipLibCheck: true,
    noEmit: true,
    baseUrl: root,
    paths: entryPaths(),
  };
  const legacy = { ...base, experimentalDecorators: true, emitDecoratorMetadata: true };
  errors.push(...compile(virtual, checked, legacy, application));
  // The docs promise that standard (TC39) decorators work as well as legacy ones: every snippet with a
  // decorator compiles again without experimentalDecorators, except NestJS code, which needs legacy ones.
  const decorated = new Map(
    [...virtual].filter(
      ([name, text]) => checked.get(name).decorated && !/from '(@nestjs\/|warren\/nest)/.test(text),
    ),
  );
  for (const error of compile(decorated, checked, base, application))
    errors.push(`${error} (standard decorators)`);
  if (process.argv.includes('--list-unchecked')) for (const reason of uncheckedReasons) console.log(reason);
  for (const error of errors) console.error(error);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const jsCount = [...checked.values()].filter((source) => source.js).length;
  console.log(
    `doc snippets: ${checked.size - jsCount} TypeScript and ${jsCount} JavaScript snippet(s) compiled ` +
      `(${decorated.size} also with standard decorators), ${unchecked} not checked (no-check), ` +
      `${pages} docs page(s), ${errors.length} error(s), ${seconds} s`,
  );
  process.exitCode = errors.length > 0 ? 1 : 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
