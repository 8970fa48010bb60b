export { JobPublisher, type BatchJob, type BatchResult, type ValidatedJob } from './job-publisher';
export {
  resolvePublisherOptions,
  PUBLISHER_DEFAULTS,
  type PublisherOptions,
  type ResolvedPublisherOptions,
} from './options';
