import { Logger as NestLogger } from '@nestjs/common';
import pino, { type LevelWithSilent } from 'pino';
import type { Logger } from '../index';

export interface NestLoggerOptions {
  /** Nest log context. Default 'Warren'. */
  readonly context?: string;
  /** Lowest pino level passed on. Default 'info'. */
  readonly level?: LevelWithSilent;
}

/** pino's standard fields; the rest of an entry are its details. */
const PINO_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'err']);

/**
 * A pino logger (what warren takes) that writes through Nest's Logger, so warren's lines look like
 * the app's and follow `app.useLogger(...)`. WarrenModule uses it unless `logger` is given; pass your
 * own pino instance (nestjs-pino's, for instance) to log JSON directly.
 */
export function createNestLogger(options: NestLoggerOptions = {}): Logger {
  const nest = new NestLogger(options.context ?? 'Warren');
  const destination = {
    write(line: string): void {
      const entry = JSON.parse(line) as Record<string, unknown> & {
        level: number;
        msg?: string;
        err?: { message?: string; stack?: string };
      };
      const details = Object.entries(entry).filter(([key]) => !PINO_FIELDS.has(key));
      const suffix =
        details.length > 0
          ? ` ${details.map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`).join(' ')}`
          : '';
      const error = entry.err?.message !== undefined ? ` (${entry.err.message})` : '';
      const message = `${entry.msg ?? ''}${error}${suffix}`;
      if (entry.level >= 60) nest.fatal(message);
      else if (entry.level >= 50) nest.error(message, entry.err?.stack);
      else if (entry.level >= 40) nest.warn(message);
      else if (entry.level >= 30) nest.log(message);
      else if (entry.level >= 20) nest.debug(message);
      else nest.verbose(message);
    },
  };
  return pino({ level: options.level ?? 'info', base: undefined, timestamp: false }, destination);
}
