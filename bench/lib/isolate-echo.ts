/**
 * The runtime's own floor for the isolates suite: a bare worker thread or child process that echoes each
 * message back, with nothing of warren around it.
 */
import { isMainThread, parentPort } from 'node:worker_threads';

if (!isMainThread) parentPort?.on('message', (m: { n: number }) => parentPort?.postMessage(m.n));
else if (process.send) process.on('message', (m: { n: number }) => process.send?.(m.n));
