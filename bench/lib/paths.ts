import { join } from 'node:path';

/** The checkout, from this file's place in the build (dist/bench/lib/). */
export const REPO_ROOT = join(__dirname, '..', '..', '..');
/** Every suite writes its result files here; only the runs the docs cite are committed (.gitignore). */
export const RESULTS_DIR = join(REPO_ROOT, 'bench', 'results');
