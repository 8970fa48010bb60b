import { Job, type JobHandler } from '../../../src';

export type MonthlyReportData = { month: string };

/** Always fails: its reporting API is down. After its attempts it lands in the dead-letter queue. */
@Job('report.monthly', { queue: 'reports', attempts: 2, backoff: { type: 'fixed', delayMs: 500 } })
export class MonthlyReport implements JobHandler<MonthlyReportData> {
  async handle(data: MonthlyReportData): Promise<void> {
    throw new Error(`reporting API unavailable (month ${data.month})`);
  }
}
