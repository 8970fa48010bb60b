export {
  checkSlipEnvelope,
  NO_SLIP_SEAL,
  PARALLEL_STEP,
  SLIP_MAX_BRANCHES,
  SLIP_MAX_BYTES,
  SLIP_MAX_RESULT_BYTES,
  SLIP_MAX_STEPS,
  slipJobName,
  slipStepId,
  type SlipEnvelope,
  type SlipFault,
  type SlipLogEntry,
  type SlipStep,
  type SlipSeal,
} from './slip-envelope';
export { SlipStepHandler, type SlipActivity } from './slip-step-handler';
export { branch, SlipBuilder, type PublishSlipStep, type SlipBranch, type StartedSlip } from './slip-builder';
export { planSlipJobs, type SlipJobs } from './plan-slip-jobs';
export { SlipRouter } from './slip-router';
