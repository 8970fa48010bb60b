import pino from 'pino';

/**
 * warren logs through pino. Users pass their own instance (`logger` option); the default is silent
 * so that a library never writes to stdout uninvited.
 */
export type Logger = pino.Logger;

export function createSilentLogger(): Logger {
  return pino({ level: 'silent' });
}
