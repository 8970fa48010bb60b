import { ConfigurationError } from './errors';
import { validationMessage } from './validation-message';

/**
 * Checks used by every module's `resolveXxxOptions`: each throws a ConfigurationError that names the
 * option path, the rule and the value, and returns the value so resolution reads as one expression.
 */
export function checkInteger(
  path: string,
  value: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    const rule =
      max === Number.MAX_SAFE_INTEGER
        ? `must be an integer >= ${min}`
        : `must be an integer from ${min} to ${max}`;
    throw new ConfigurationError(validationMessage(path, rule, value));
  }
  return value;
}

export function checkNumber(
  path: string,
  value: number,
  min: number,
  max = Number.POSITIVE_INFINITY,
): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    const rule =
      max === Number.POSITIVE_INFINITY
        ? `must be a number >= ${min}`
        : `must be a number from ${min} to ${max}`;
    throw new ConfigurationError(validationMessage(path, rule, value));
  }
  return value;
}

export function checkBoolean(path: string, value: boolean): boolean {
  if (typeof value !== 'boolean')
    throw new ConfigurationError(validationMessage(path, 'must be a boolean', value));
  return value;
}

export function checkOneOf<T extends string>(path: string, value: T, allowed: readonly T[]): T {
  if (!allowed.includes(value)) {
    throw new ConfigurationError(
      validationMessage(path, `must be one of ${allowed.map((a) => `'${a}'`).join(', ')}`, value),
    );
  }
  return value;
}

export function checkNonEmptyString(path: string, value: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new ConfigurationError(validationMessage(path, 'must be a non-empty string', value));
  }
  return value;
}

/**
 * Rejects keys an options object does not know (`connection.tls` is a typo for `connection.socket`,
 * not something to ignore). `known` is the options interface's keys, checked complete at compile time
 * by the caller (`satisfies Record<keyof XxxOptions, true>`). Returns the value.
 */
export function checkKnownKeys<T>(path: string, value: T, known: Readonly<Record<string, true>>): T {
  if (value === undefined) return value;
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new ConfigurationError(validationMessage(path, 'must be an object', value));
  for (const key of Object.keys(value)) {
    if (!Object.hasOwn(known, key)) {
      const names = Object.keys(known).join(', ');
      throw new ConfigurationError(
        validationMessage(
          `${path}.${key}`,
          `is not an option (known: ${names})`,
          (value as Record<string, unknown>)[key],
        ),
      );
    }
  }
  return value;
}
