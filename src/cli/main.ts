#!/usr/bin/env node
/**
 * The `warren` command: the operations API (warren/ops) for people and scripts. Every failure exits
 * non-zero with one line on stderr; `topology diff` and `verify` exit 2 when the broker drifted.
 *
 * Arguments are parsed with Node's util.parseArgs: built in (no dependency to keep in step), strict
 * about unknown options, and enough for a handful of subcommands.
 */
import { parseArgs } from 'node:util';
import { WarrenError } from '../index';
import { createOps, redactCredentials, WARREN_VERSION, type OpsOptions } from '../ops';
import { CliError } from './cli-error';
import { COMMANDS } from './commands';
import { JOB_ACTIONS } from './job-commands';
import { runUi } from './ui-command';
import { firstLine, loadConfig } from './load-config';
import { terminalCell, terminalJson, terminalLines } from './terminal-text';

const USAGE = `usage: warren <command> [options]

commands:
  queues                     job queues: ready, unacked, consumers, dead letters, paused
  processes                  the warren processes running, what they consume, breakers, cron leader
  pause <queue>              stop consuming <queue> in every process (running jobs finish)
  resume <queue>             undo pause
  mark deploy                mark a deploy on the dashboard graphs' time axis (--note <text>,
                             --release <version>)
  publish <job> <json>       publish a job
  schedules                  cron schedules with their next fire time
  schedules add <job> <pattern> [<json>]
                             add (or replace) a schedule on the broker (--id, default the job; --tz)
  schedules rm <id>          remove a schedule added at run time (asks unless --yes)
  schedules pause <id>       stop a schedule firing in every process (code-declared ones too)
  schedules resume <id>      undo pause
  schedules trigger <id>     publish one firing now, as <id>@manual-<ms>
  limits                     per-key limit overrides in force (docs: per-key limits)
  limits get <target> <key>  one key's override; <target> is the job (concurrency) or the limiter key (max)
  limits set <target> <key>  override a key's limit in every process: --concurrency n, --max n (per window);
                             'planned' goes back to the planned value
  job <id>                   where a job is: waiting, delayed, running, completed, retrying, dead
  job cancel <id>            drop a delayed job when it comes due
  job promote <id>           run a delayed job now (published with controllable: true)
  job reschedule <id>        move a delayed job: --run-at <date> or --delay <ms>
  topology plan              what warren declares for this config (no broker needed)
  topology diff              missing / extra / different on the broker; exits 2 on drift
  topology verify            queue types, delivery limits, dead-letter wiring, bindings; exits 2 on failure
  topology apply             declare what is missing (never deletes)
  namespace remove           delete every queue, exchange, stream and marker of the namespace (asks unless
                             --yes); refuses while its processes answer: --force asks them to stop first
                             and waits (--wait <ms>, default 30000)
  dead ls                    the newest dead letters (--from <offset> pages from an offset, --limit n)
  dead show <offset>         one dead letter: payload, error, state
  dead search                dead letters matching the filter options below
  dead replay                replay the letters the filter selects (--dry-run, --rate n/s, --to <queue>)
  dead purge                 mark the letters the filter selects purged
  dead stats                 counts by state, what expired, what waits in parking queues
  dead collect               move letters from the parking queues into the log
  ui                         the web dashboard on loopback (--port 3000, --host, --role viewer|operator|admin,
                             --allowed-host <name[:port]> repeatable: Host names it answers to besides loopback)

filter (dead search | replay | purge):
  --job-id <id>  --name <job>  --queue <key>  --reason <reason>  --error-class <Class>
  --error <text>  --since <date>  --until <date>  --field <path=value>  --state dead|replayed|purged
  --offset <n> (repeatable)

options:
  --config <file>            config module (default: ./warren.config.js, .cjs, .mjs or .ts)
  --url <amqp-url>           broker (default: $WARREN_URL, $AMQP_URL, then the config's url)
  --management-url <url>     management HTTP API, e.g. http://127.0.0.1:15672 ($WARREN_MANAGEMENT_URL)
  --management-user <name>   ($WARREN_MANAGEMENT_USER, default guest)
  --management-password <p>  ($WARREN_MANAGEMENT_PASSWORD, default guest; prefer the environment: every
                             user of this machine can read a command line)
  --timeout <ms>             how long to wait for processes to answer (default 1500)
  --json                     print JSON for scripts instead of tables
  --yes                      do not ask before pause, resume, apply, schedules rm, namespace remove
  -h, --help                 this help
  --version                  warren's version`;

const OPTIONS = {
  config: { type: 'string' },
  url: { type: 'string' },
  'management-url': { type: 'string' },
  'management-user': { type: 'string' },
  'management-password': { type: 'string' },
  timeout: { type: 'string' },
  json: { type: 'boolean' },
  yes: { type: 'boolean', short: 'y' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  'job-id': { type: 'string' },
  name: { type: 'string' },
  queue: { type: 'string' },
  reason: { type: 'string' },
  'error-class': { type: 'string' },
  error: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  field: { type: 'string' },
  state: { type: 'string' },
  offset: { type: 'string', multiple: true },
  from: { type: 'string' },
  limit: { type: 'string' },
  'dry-run': { type: 'boolean' },
  rate: { type: 'string' },
  to: { type: 'string' },
  port: { type: 'string' },
  host: { type: 'string' },
  role: { type: 'string' },
  'allowed-host': { type: 'string', multiple: true },
  'run-at': { type: 'string' },
  delay: { type: 'string' },
  id: { type: 'string' },
  tz: { type: 'string' },
  force: { type: 'boolean' },
  wait: { type: 'string' },
  note: { type: 'string' },
  release: { type: 'string' },
  concurrency: { type: 'string' },
  max: { type: 'string' },
} as const;

type Values = ReturnType<typeof parse>['values'];

/**
 * Takes the passwords out of what `ps` and /proc show for this process (Linux rewrites the command line
 * with the title), for as long as it runs: `warren ui` runs for hours. The environment is still the place
 * for secrets (a command line is readable by every user until this runs).
 */
function hideSecrets(argv: readonly string[]): void {
  let masked = false;
  const shown = argv.map((arg, i) => {
    const hidden =
      argv[i - 1] === '--management-password'
        ? '***'
        : arg.startsWith('--management-password=')
          ? '--management-password=***'
          : redactCredentials(arg);
    masked ||= hidden !== arg;
    return hidden;
  });
  if (masked) process.title = ['warren', ...shown].join(' ');
}

function parse(argv: readonly string[]) {
  try {
    return parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new CliError(`${argumentProblem(error)} (see warren --help)`);
  }
}

/**
 * What was wrong with the arguments, in one line of our own: Node's parseArgs text adds advice meant for
 * another kind of command line (`as in '-- "--jsno"`) and a `<value>` placeholder.
 */
export function argumentProblem(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  const option =
    /'([^']+)'/
      .exec(message)?.[1]
      ?.replace(/ <value>$/, '')
      .replace(/^-\w, /, '') ?? '?';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option '${option}'`;
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    if (/argument missing/.test(message)) return `option '${option}' needs a value`;
    // the value given starts with a dash (`--max -3`): parseArgs takes it for an option
    if (/ambiguous/.test(message))
      return `option '${option}' needs a value; one that starts with '-' goes as ${option}=<value>`;
    return `option '${option}' takes no value`;
  }
  return firstLine(error);
}

/** An environment variable that is set to something: an exported but empty one counts as not set. */
export function fromEnv(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

/** The command's name and its own arguments: `topology` takes a sub-command. */
function commandOf(positionals: readonly string[]): { name: string; args: string[] } {
  const [first, second, ...rest] = positionals;
  if (first === undefined) throw new CliError('missing <command> (see warren --help)');
  const grouped =
    first === 'topology' ||
    first === 'dead' ||
    first === 'namespace' ||
    first === 'mark' ||
    (first === 'job' && JOB_ACTIONS.has(second ?? '')) ||
    (first === 'schedules' && second !== undefined) ||
    (first === 'limits' && second !== undefined);
  const name = grouped ? `${first} ${second ?? ''}`.trim() : first;
  if (!(name in COMMANDS)) throw new CliError(`unknown command '${name}' (see warren --help)`);
  return { name, args: grouped ? rest : positionals.slice(1) };
}

/** The operations API's options: flags, then the environment, then the config module. */
export function opsOptions(config: OpsOptions, values: Values): OpsOptions {
  const env = process.env;
  const url = values.url ?? fromEnv(env.WARREN_URL) ?? fromEnv(env.AMQP_URL) ?? config.url;
  const managementUrl =
    values['management-url'] ?? fromEnv(env.WARREN_MANAGEMENT_URL) ?? config.management?.url;
  let replyTimeoutMs = config.replyTimeoutMs;
  if (values.timeout !== undefined) {
    replyTimeoutMs = Number(values.timeout);
    if (!Number.isInteger(replyTimeoutMs) || replyTimeoutMs < 1)
      throw new CliError(`--timeout must be a whole number of milliseconds >= 1 (got ${values.timeout})`);
  }
  return {
    ...config,
    ...(url !== undefined ? { url } : {}),
    ...(replyTimeoutMs !== undefined ? { replyTimeoutMs } : {}),
    connection: { connectTimeoutMs: 3000, ...config.connection },
    ...(managementUrl !== undefined
      ? {
          management: {
            ...config.management,
            url: managementUrl,
            ...optional('username', values['management-user'] ?? fromEnv(env.WARREN_MANAGEMENT_USER)),
            ...optional('password', values['management-password'] ?? fromEnv(env.WARREN_MANAGEMENT_PASSWORD)),
          },
        }
      : {}),
  };
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

/** Runs the command line; resolves with the exit code. Writes results to stdout, the reason to stderr. */
export async function main(argv: readonly string[]): Promise<number> {
  let ops: ReturnType<typeof createOps> | undefined;
  try {
    hideSecrets(argv);
    const { values, positionals } = parse(argv);
    if (values.help || values.version) {
      print(values.help ? USAGE : WARREN_VERSION);
      return 0;
    }
    const { name, args } = commandOf(positionals);
    const config = await loadConfig(values.config);
    const options = opsOptions(config, values);
    // One query a process: an index would hold more than the log's bytes for nothing kept. The dashboard
    // runs for hours and keeps its index warm.
    ops = createOps(name === 'ui' ? options : { deadLetterIndex: 'scan', ...options });
    if (name === 'ui') {
      print(await runUi(ops, values));
      return 0;
    }
    const result = await COMMANDS[name]!({ ops, args, yes: values.yes ?? false, values });
    print(values.json ? terminalJson(JSON.stringify(result.json, null, 2)) : terminalLines(result.text));
    return result.exitCode;
  } catch (error) {
    const code = error instanceof WarrenError || error instanceof CliError ? ` [${error.code}]` : '';
    process.stderr.write(`warren: ${terminalCell(redactCredentials(firstLine(error)))}${code}\n`);
    return error instanceof CliError ? error.exitCode : 1;
  } finally {
    await ops?.close().catch(() => undefined);
  }
}

/** Every line the command prints: no password, no control character from a broker's data. */
function print(text: string): void {
  process.stdout.write(`${redactCredentials(text)}\n`);
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`warren: ${terminalCell(redactCredentials(firstLine(error)))}\n`);
      process.exit(1);
    },
  );
}
