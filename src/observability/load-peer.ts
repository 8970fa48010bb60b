import { ConfigurationError } from '../core';

/**
 * Loads an optional peer when the user asks for the feature, never when `warren/observability` is imported:
 * an app without prom-client or @opentelemetry/api still loads the entry.
 */
export function loadPeer<T>(name: 'prom-client' | '@opentelemetry/api', feature: string): T {
  try {
    return require(name) as T;
  } catch (error) {
    throw new ConfigurationError(`${feature} needs the optional peer '${name}': npm install ${name}`, {
      cause: error,
    });
  }
}
