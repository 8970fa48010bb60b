/** A failure the command reports as one line and a non-zero exit code (1 unless said otherwise). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
