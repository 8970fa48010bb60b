import pino from 'pino';
import type { Logger } from '../index';

/**
 * One line a handler logged through `ctx.log`, with its fields (`jobId`, `job`, `attempt`, `queue`, and the
 * handler's own).
 */
export interface LogEntry {
  readonly level: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
  readonly msg: string;
  readonly [field: string]: unknown;
}

/** A pino logger that keeps every entry in `entries` instead of writing it anywhere. */
export function createRecordingLogger(level: pino.LevelWithSilent = 'trace'): {
  readonly logger: Logger;
  readonly entries: LogEntry[];
} {
  const entries: LogEntry[] = [];
  const labels = pino.levels.labels;
  const logger = pino(
    { level, base: undefined, timestamp: false },
    {
      write(line: string) {
        const { level: number, msg, ...fields } = JSON.parse(line) as { level: number; msg?: string };
        entries.push({ ...fields, level: (labels[number] ?? 'info') as LogEntry['level'], msg: msg ?? '' });
      },
    },
  );
  return { logger, entries };
}
