// The function form in plain CommonJS, no compiler: defineJob from the installed package, run by runJob.
const { defineJob, readJobDefinition } = require('warren');
const { runJob } = require('warren/testing');

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
