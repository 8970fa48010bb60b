export { JobPublisher, type ValidatedJob } from './job-publisher';
export {
  resolvePublisherOptions,
  PUBLISHER_DEFAULTS,
  type PublisherOptions,
  type ResolvedPublisherOptions,
} from './options';
