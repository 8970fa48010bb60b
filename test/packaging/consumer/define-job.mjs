// The function form in a plain ES module, no compiler: defineJob from the installed package, run by runJob.
import { defineJob, readJobDefinition } from 'warren';
import { runJob } from 'warren/testing';

const sendReport = defineJob(
  'report.send',
  { queue: 'reports', attempts: 3, cron: '0 9 * * *' },
  async (data, ctx) => `${data.report}#${ctx.attempt}`,
);

runJob(sendReport, { report: 'daily' }).then((run) =>
  console.log(
    JSON.stringify({ status: run.status, result: run.result, definition: readJobDefinition(sendReport) }),
  ),
);
