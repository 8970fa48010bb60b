import type { Logger } from '../core';

/**
 * The names Warren had before its facades and its renames, each with what replaces it. They keep
 * working for one minor release (docs/versioning.md, "Deprecation"); the first use of each logs one
 * warning on the instance's logger, with `deprecated` and `replacement` as fields.
 */
export const DEPRECATED_ALIASES = {
  schedule: 'cron.schedule',
  unschedule: 'cron.unschedule',
  schedules: 'cron.list',
  addSchedule: 'cron.add',
  removeSchedule: 'cron.remove',
  pauseSchedule: 'cron.pause',
  resumeSchedule: 'cron.resume',
  triggerSchedule: 'cron.trigger',
  isLeader: 'cron.isLeader',
  cancelDelayed: 'delayed.cancel',
  promote: 'delayed.promote',
  reschedule: 'delayed.reschedule',
  pause: 'pauseLocal',
  resume: 'resumeLocal',
} as const;

export type DeprecatedAlias = keyof typeof DEPRECATED_ALIASES;

/** The versioning policy's one warning per deprecated name, the first time an instance's is used. */
export class DeprecationWarnings {
  readonly #warned = new Set<DeprecatedAlias>();

  constructor(private readonly log: Logger) {}

  warn(alias: DeprecatedAlias): void {
    if (this.#warned.has(alias)) return;
    this.#warned.add(alias);
    const replacement = DEPRECATED_ALIASES[alias];
    this.log.warn(
      { deprecated: alias, replacement },
      `warren.${alias} is deprecated: use warren.${replacement}`,
    );
  }
}
