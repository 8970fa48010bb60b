/**
 * Reflect-metadata keys. `Symbol.for` so two copies of warren in one process read each other's decorations.
 */
export const JOB_METADATA = Symbol.for('warren:job');
export const CRON_METADATA = Symbol.for('warren:cron');
