import { deprecate } from 'node:util';

/**
 * The methods Warren had before its facades, each with what replaces it. They keep working for one
 * minor release (docs/versioning.md, "Deprecation"), and the first call of each in a process emits one
 * Node.js `DeprecationWarning` naming the replacement (code `WARREN_DEP_<NAME>`; silenced, like Node's
 * own, by `--no-deprecation`).
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
} as const;

export type DeprecatedAlias = keyof typeof DEPRECATED_ALIASES;

const warnings = Object.fromEntries(
  Object.entries(DEPRECATED_ALIASES).map(([alias, use]) => [
    alias,
    deprecate(
      () => undefined,
      `warren.${alias} is deprecated: use warren.${use}; the alias goes in the next minor release`,
      `WARREN_DEP_${alias.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`,
    ),
  ]),
) as Record<DeprecatedAlias, () => void>;

/** Warns, once per process, that `alias` is deprecated. */
export function warnDeprecated(alias: DeprecatedAlias): void {
  warnings[alias]();
}
