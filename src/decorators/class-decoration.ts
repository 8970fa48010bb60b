import { ConfigurationError } from '../core';

/**
 * `@Job` and `@Cron` decorate classes, under either decorator model: legacy (`experimentalDecorators`)
 * calls them with the class alone, standard (TC39) with the class and a context whose kind is 'class'.
 * TypeScript refuses them elsewhere; this catches plain JavaScript that puts one on a method or field.
 */
export function requireClassDecoration(decorator: string, target: unknown, context: unknown): void {
  const kind = (context as { kind?: unknown } | undefined)?.kind;
  if (typeof target !== 'function' || (context !== undefined && kind !== 'class')) {
    const where = typeof kind === 'string' ? `a ${kind}` : 'a class member';
    throw new ConfigurationError(`${decorator} decorates a class, not ${where}`);
  }
}
