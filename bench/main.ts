// The one entry point of the benchmarks: npm run bench -- <suite> [options] (bench/README.md).
//   npm run bench                       the default suite (throughput), full size
//   npm run bench -- --list             every suite, its options and what it needs
//   npm run bench -- <suite> --quick    tiny sizes: proves the suite works, measures nothing
import { DEFAULT_SUITE, findSuite, type Suite, SUITES } from './suites';

const USAGE = 'usage: npm run bench -- [<suite>] [--quick] [options]   (npm run bench -- --list)';

function list(): void {
  console.log(`${USAGE}\n\nSuites (default: ${DEFAULT_SUITE}):`);
  for (const suite of SUITES) {
    console.log(`\n  ${suite.name}  ${suite.summary}`);
    console.log(`    options: ${suite.usage}`);
    if (suite.needs) console.log(`    needs: ${suite.needs}`);
  }
}

/**
 * The suite's own arguments, `--quick` replaced by its tiny sizes, after the arguments given (a mode such as
 * `profile consume` stays first). What the caller gave wins: a quick flag the caller also set is dropped,
 * and quick positionals (`cron 2`) only apply when the caller gave none.
 */
function suiteArgs(suite: Suite, args: string[]): string[] {
  if (!args.includes('--quick')) return args;
  const given = args.filter((arg) => arg !== '--quick');
  const flagOf = (arg: string) => arg.split('=', 1)[0];
  const givenFlags = new Set(given.filter((arg) => arg.startsWith('--')).map(flagOf));
  const hasPositional = given.some((arg, i) => !arg.startsWith('-') && !given[i - 1]?.startsWith('--'));
  const quick: string[] = [];
  const q = suite.quickArgs;
  for (let i = 0; i < q.length; i++) {
    const arg = q[i];
    if (!arg.startsWith('--')) {
      if (!hasPositional) quick.push(arg);
      continue;
    }
    // `--flag value`: the value travels with its flag
    const value = !arg.includes('=') && i + 1 < q.length && !q[i + 1].startsWith('--') ? [q[++i]] : [];
    if (!givenFlags.has(flagOf(arg))) quick.push(arg, ...value);
  }
  return [...given, ...quick];
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === '--list' || argv[0] === '--help' || argv[0] === '-h') return list();
  // no suite named (nothing, or options only): the default suite with those options
  const named = argv.length > 0 && !argv[0].startsWith('-');
  const name = named ? argv[0] : DEFAULT_SUITE;
  const suite = findSuite(name);
  if (!suite) throw new Error(`unknown suite '${name}'; known: ${SUITES.map((s) => s.name).join(', ')}`);
  const args = suiteArgs(suite, named ? argv.slice(1) : argv);
  // older suites read their options from process.argv at load time, as when they were scripts of their own
  process.argv.splice(2, Infinity, ...args);
  const module = await suite.load();
  await module.run(args);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  if (error instanceof Error && !/^unknown (suite|argument)/.test(error.message)) console.error(error.stack);
  // a failed suite may leave connections or child processes behind: exit as the scripts did
  process.exit(1);
});
