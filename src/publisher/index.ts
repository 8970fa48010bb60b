export {
  JobPublisher,
  type BatchJob,
  type BatchResult,
  type DedupReserver,
  type ValidatedJob,
} from './job-publisher';
export {
  resolvePublisherOptions,
  PUBLISHER_DEFAULTS,
  type PublisherOptions,
  type ResolvedPublisherOptions,
} from './options';
export { ResultChannel, type ResultHandle } from './result-channel';
