/**
 * warren/testing — helpers for your own test suites: run a handler without a broker (`runJob`), or
 * run real workers on a real broker in a throwaway namespace and wait for job events with deadlines
 * (`createTestHarness`, `recordJobEvents`).
 */
export {
  runJob,
  type RunJobOptions,
  type RunJobResult,
  type PublishedCall,
  type JobOutcome,
} from './run-job';
export { createRecordingLogger, type LogEntry } from './recording-logger';
export {
  JobEventRecorder,
  recordJobEvents,
  type RecordedEvent,
} from './job-event-recorder';
export {
  createTestHarness,
  closeAndDeleteTopology,
  type TestHarness,
  type TestHarnessOptions,
} from './test-harness';
export { testNamespace, testWarrenOptions } from './test-namespace';
