import type { JobEvent, JobStatus } from '../ops';
import { formatTable } from './table';
import { terminalCell } from './terminal-text';

/**
 * `warren job <id>`: where the job is, its events as a table, then its payload and result when the history
 * kept them.
 */
export function jobText(id: string, status: JobStatus): string {
  if (status.events.length === 0)
    return `no history of job ${id} (history off on the workers, expired, or never published)`;
  const last = status.last!;
  const detail =
    status.state === 'delayed' || status.state === 'retrying'
      ? ` until ${last.runAt?.toISOString()}`
      : status.state === 'running'
        ? ` in ${last.process}${status.progress === undefined ? '' : `, progress ${JSON.stringify(status.progress)}`}`
        : status.state === 'completed'
          ? ` at ${last.at.toISOString()} in ${last.durationMs} ms`
          : status.state === 'dead'
            ? `: ${last.reason} (${last.error ?? ''}); see warren dead search --job-id ${id}`
            : '';
  const rows = status.events.map((e) => [
    e.at.toISOString(),
    e.kind,
    e.attempt === undefined ? '' : String(e.attempt),
    e.process,
    e.runAt
      ? `runs ${e.runAt.toISOString()}`
      : e.durationMs !== undefined
        ? `${e.durationMs} ms`
        : e.kind === 'progress'
          ? `progress ${JSON.stringify(e.progress)}`
          : (e.error ?? ''),
  ]);
  const table = formatTable(['AT', 'EVENT', 'ATTEMPT', 'PROCESS', 'DETAIL'], rows);
  return `job ${id} (${last.name} on ${last.queue}): ${status.state}${detail}\n${table}${jobContents(status.events)}`;
}

/**
 * The job's payload and result under its events, from the newest events that kept them (`history.payloads`,
 * `history.results`), each on one line (escaped for the terminal); a cut one says how much of it is shown.
 */
function jobContents(events: readonly JobEvent[]): string {
  let payload: JobEvent | undefined;
  let result: JobEvent | undefined;
  for (const e of events) {
    if (e.payload !== undefined) payload = e;
    if (e.result !== undefined) result = e;
  }
  const cut = (text: string, bytes: number | undefined) =>
    terminalCell(text) +
    (bytes === undefined ? '' : ` … (its first ${Buffer.byteLength(text)} of ${bytes} bytes)`);
  const lines = [
    ...(payload ? [`payload: ${cut(payload.payload!, payload.payloadBytes)}`] : []),
    ...(result ? [`result: ${cut(result.result!, result.resultBytes)}`] : []),
  ];
  return lines.length === 0 ? '' : `\n${lines.join('\n')}`;
}
