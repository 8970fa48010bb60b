export {
  checkSlipEnvelope,
  SLIP_MAX_BYTES,
  SLIP_MAX_RESULT_BYTES,
  SLIP_MAX_STEPS,
  slipJobName,
  slipStepId,
  type SlipEnvelope,
  type SlipFault,
  type SlipLogEntry,
  type SlipStep,
} from './slip-envelope';
export { SlipStepHandler, type SlipActivity } from './slip-step-handler';
export { SlipBuilder, type PublishSlipStep, type StartedSlip } from './slip-builder';
export { planSlipJobs, type SlipJobs } from './plan-slip-jobs';
