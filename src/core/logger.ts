import pino from 'pino';
import { ConfigurationError } from './errors';
import { validationMessage } from './validation-message';

/**
 * warren logs through pino. Users pass their own instance (`logger` option); the default is silent
 * so that a library never writes to stdout uninvited.
 */
export type Logger = pino.Logger;

export function createSilentLogger(): Logger {
  return pino({ level: 'silent' });
}

/** The methods of pino's that warren calls on a logger it is given. */
const LOGGER_METHODS = ['child', 'debug', 'info', 'warn', 'error'] as const;

/**
 * The `logger` option: the silent default when not given, else the logger itself once it has pino's methods. A
 * value without them (`false`, a console-like object without `child`) is a ConfigurationError here, not a
 * TypeError from deep inside the connection's set-up.
 */
export function resolveLogger(path: string, value: Logger | undefined): Logger {
  if (value === undefined) return createSilentLogger();
  const missing =
    typeof value === 'object' && value !== null
      ? LOGGER_METHODS.filter(
          (name) => typeof (value as unknown as Record<string, unknown>)[name] !== 'function',
        )
      : LOGGER_METHODS;
  if (missing.length > 0)
    throw new ConfigurationError(
      validationMessage(path, `must be a pino logger (or have pino's ${missing.join(', ')} methods)`, value),
    );
  return value;
}
