export { Job, type JobClass, type JobData, type JobMetadata } from './job';
export { Cron, readCronMetadata, type CronOptions, type CronMetadata } from './cron';
export { readJobDefinition, readJobMetadata } from './read-job-definition';
export { JOB_METADATA, CRON_METADATA } from './job-metadata';
