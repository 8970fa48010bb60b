export {
  HEADERS,
  BROKER_DEATH_HEADERS,
  SENDER_ROUTING_HEADERS,
  JSON_CONTENT_TYPE,
  LAST_ERROR_MAX_CHARS,
  type DeadReason,
} from './headers';
export { encodeBody, jobProperties, decodeJob, type OutgoingJob, type DecodedJob } from './envelope';
export {
  republishProperties,
  replayProperties,
  deadLetterProperties,
  describeError,
  withOwnHeadersOnly,
  type DeadLetterInfo,
} from './republish-properties';
export {
  DIRECT_REPLY_TO,
  isDirectReplyAddress,
  resultAddressOf,
  encodeJobResult,
  parseJobResult,
  JOB_RESULT_CONTENT_TYPE,
  type JobResultBody,
} from './job-result';
export {
  checkJobKey,
  resolveJobKey,
  deliveredKey,
  keyHash,
  laneOf,
  DEFAULT_KEY,
} from './job-key';
