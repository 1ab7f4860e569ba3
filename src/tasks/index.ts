/**
 * The runtime: what each tools/call becomes (a pure decision), the MRTR bridge, listen streams, and the task
 * lifecycles behind TaskRuntime. Named exports: the layer's public surface, nothing of its insides.
 */
export {
  hidesTool,
  replaceHeaders,
  replaceRules,
  runtimeServesTools,
  shapesToolList,
  wrapsTools,
  type CallerContext,
  type CallerSubject,
  type FederationRouting,
  type TaskPolicy,
  type UpstreamRoute,
} from './route.js';
export { MrtrBridge, type ForwardHooks, type LiveHoldLimits, type Outcome } from './calls/mrtr-bridge.js';
export { runListen } from './calls/listen-bridge.js';
export { legacyTaskSupport } from './calls/tool-support.js';
export { TaskRuntime } from './task-runtime.js';
export { federatedRoute, FederationCollisionError, refuseCollisions, type FederatedIdentity } from './federation/federated-client.js';
export type { MemberExposure } from './federation/federation.js';
export { memberCall, onMember } from './federation/member-calls.js';
export type { LiveTaskLimits } from './runtime-options.js';
export { InstanceBus, mintInstanceId } from './instances/instance-bus.js';
export { Sealer } from './instances/sealing.js';
/** Store errors the edge maps, re-exported so the edge depends on the runtime only. */
export { StoreUnavailableError, type SharedValues } from '../store/index.js';
export { NO_AUDIT, principalFingerprint, teeAudit, type AuditEvent, type AuditLog } from './audit.js';
export { NO_TASK_METRICS, type TaskMetrics } from './metrics.js';
