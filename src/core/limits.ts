/**
 * The longest delay a job may carry (`delayMs`, `runAt`, a `warren-deliver-at` header): 366 days. A
 * publish asking for more is refused (CONFIGURATION_INVALID); a delivery whose `warren-deliver-at` lies
 * further ahead than this is a forged header and goes to dead letters as `invalid-headers`, instead
 * of parking a job in the delay levels for years.
 */
export const MAX_DELAY_MS = 366 * 24 * 3_600_000;
