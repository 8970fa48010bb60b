import { createInterface } from 'node:readline/promises';
import { CliError } from './cli-error';

/**
 * Asks before a state-changing action. `--yes` skips the question; without a terminal to ask on (CI,
 * a pipe) and without `--yes` the action is refused: deny by default.
 */
export async function confirm(question: string, yes: boolean, action: string): Promise<void> {
  if (yes) return;
  if (!process.stdin.isTTY || !process.stderr.isTTY)
    throw new CliError(`refusing to ${action} without --yes (no terminal to ask)`, 'CLI_NOT_CONFIRMED');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(`${question} [y/N] `);
    if (!/^y(es)?$/i.test(answer.trim())) throw new CliError(`${action}: cancelled`, 'CLI_NOT_CONFIRMED');
  } finally {
    rl.close();
  }
}
