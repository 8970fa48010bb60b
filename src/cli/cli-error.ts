/**
 * Why the command refused, as a stable code printed after the reason (`[CLI_USAGE]`), like a WarrenError's:
 * - `CLI_USAGE`: the command line is wrong (an unknown command or flag, a missing or invalid argument);
 * - `CLI_CONFIG`: the config module is missing, cannot be loaded or exports no options;
 * - `CLI_NOT_CONFIRMED`: an action that asks first was not confirmed (or there was no terminal to ask on);
 * - `CLI_NOT_FOUND`: what the command was asked to show does not exist.
 */
export type CliErrorCode = 'CLI_USAGE' | 'CLI_CONFIG' | 'CLI_NOT_CONFIRMED' | 'CLI_NOT_FOUND';

/** A failure the command reports as one line with its code, and a non-zero exit code (1 unless said otherwise). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code: CliErrorCode = 'CLI_USAGE',
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
