/**
 * The dashboard's browser tests' browser: Debian's chromium (or CHROMIUM_PATH) through playwright-core, and
 * where their screenshots go.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { ROOT } from './run-cli';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** A headless chromium; fails the test with the install command when there is none. */
export async function launchChromium(): Promise<Browser> {
  assert.ok(
    existsSync(CHROMIUM),
    `no browser at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`,
  );
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}

/**
 * The docs' folder with WARREN_UPDATE_SCREENSHOTS set (the screenshots the docs show), else a scratch folder,
 * so that a test run leaves the tree clean.
 */
export function screenshotFolder(): string {
  return process.env.WARREN_UPDATE_SCREENSHOTS
    ? join(ROOT, 'docs')
    : mkdtempSync(join(tmpdir(), 'warren-ui-'));
}
