export { decideFailure, backoffDelay, type FailureDecision, type FailureInput } from './decide-failure';
