export { ControlClient } from './control-client';
export { ControlListener, type ControlTarget } from './control-listener';
export { PauseMarkers } from './pause-markers';
export {
  parseControlRequest,
  parseControlReply,
  CONTROL_PROTOCOL_VERSION,
  CONTROL_COMMANDS,
  MAX_CONTROL_MESSAGE_BYTES,
  type ControlCommand,
  type ControlRequest,
  type ControlReply,
  type ProcessStatus,
  type ProcessQueueStatus,
  type ProcessRunningJob,
  type ProcessScheduleStatus,
} from './control-protocol';
