export { Job, type JobClass, type JobData, type JobMetadata, type JobRef } from './job';
export { Cron, readCronMetadata, type CronOptions, type CronMetadata } from './cron';
export {
  readJobDefinition,
  readJobMetadata,
  isDefinedJob,
  jobIdentity,
  describeJobSource,
} from './read-job-definition';
export { defineJob, type DefinedJob, type DefineJobOptions, type DefineJobCron } from './define-job';
export { JOB_METADATA, CRON_METADATA } from './job-metadata';
