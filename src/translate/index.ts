/** Pure protocol knowledge: era detection, validation and mapping functions. No I/O, clock or randomness. */
export { ErrorCode, GATEWAY_OWN_PATHS, LEGACY_VERSION, LEGACY_VERSIONS, META, MODERN_VERSION, OAUTH_WELL_KNOWN, TASKS_EXTENSION } from './constants.js';
export {
  errorResponse,
  isErrorResponse,
  isNotification,
  isObject,
  isRequest,
  isResponse,
  requestIdOf,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type RequestId,
} from './jsonrpc.js';
export { methodPolicy } from './methods.js';
export { singleHeader } from './headers.js';
export { classifyEra, type Era } from './era.js';
export { REQUEST_FAILURE_KIND, validateModernRequest, type ModernHeaders, type ModernRequest, type RequestFailure } from './modern-request.js';
export { asErrorObject, discoverResult, identityFromInitialize, modernError, modernResult, type CacheHints, type UpstreamIdentity } from './results.js';
export {
  sessionInputCapabilities,
  canonicalJson,
  INPUT_KEY_HINT,
  isInputDeclared,
  isInputMethod,
  isValidInputResponse,
  requiredCapabilityFor,
  toInputRequest,
  toLegacyInputResult,
  absentUserAnswer,
  undeclaredInputAnswer,
  withCallerCapabilities,
  type InputRequest,
} from './input.js';
export { KeyMinter } from './input-keys.js';
export { checkInputAnswers, inputAnswerProblem } from './input-answers.js';
export { errorSummary, logFailure, NO_LOG, type LayerLogger } from './layer-logger.js';
export { decodeRequestState, encodeRequestState } from './request-state.js';
export {
  acceptListenFilter,
  listenAcknowledgement,
  listenClosingResult,
  listenNotification,
  readListenFilter,
  type ListenFilter,
} from './listen.js';
export { firstMatch, globCovers, globToRegExp } from './glob.js';
export { raceAbort } from './abort.js';
// Tasks: the era-neutral model and mappings (tasks.ts), 2025-11-25 core tasks (tasks-v1.ts), 2026-07-28 tasks
// extension (tasks-v2.ts).
export { inlineResult, isTerminal, outcomeFromPayload, withoutRelatedTask, type TaskId, type TaskRecord, type TaskSnapshot, type TaskStatus } from './tasks.js';
export {
  createTaskResultV1,
  legacySupportsToolTasks,
  legacyTasksCapability,
  readCreateTaskResultV1,
  readTaskV1,
  relatedTaskMeta,
  taskInputParamsV1,
  taskPayloadV1,
  taskSnapshotFromV1,
  taskStatusNotificationV1,
  taskV1,
  toolTaskSupport,
  withTaskSupportV1,
  type TaskSupport,
  type TaskV1,
} from './tasks-v1.js';
export {
  createTaskResultV2,
  declaresTasks,
  detailedTaskV2,
  readCreateTaskResultV2,
  readDetailedTaskV2,
  TASKS_REQUIRED_CAPABILITIES,
  taskSnapshotFromV2,
  type CreateTaskResultV2,
  type DetailedTaskV2,
} from './tasks-v2.js';
export {
  identityFromDiscover,
  modernHeaders,
  refusedListingOurVersion,
  MRTR_METHODS,
  paramHeaders,
  readInputRequired,
  retryParams,
  screenToolsList,
  withEnvelope,
  withoutSubscriptionId,
  type HeaderParam,
} from './modern-upstream.js';
export { legacyParams, progressTokenOf, relayedOnRequestStream } from './forwarding.js';
export { isLegacyLogLevel, legacyInitializeResult, modernClientCapabilities, readInitializeParams } from './legacy-handshake.js';
export {
  legacyError,
  legacyInputParams,
  legacyResult,
  modernParamsFromLegacy,
  offersSubscriptions,
  sessionListenFilter,
  undeclaredInputError,
} from './legacy-results.js';
export {
  answerOf,
  catalogAnswer,
  ERROR_CATALOG,
  GatewayError,
  type CatalogAnswer,
  type ErrorKind,
  type InBandKind,
  type GatewayErrorOptions,
} from './error-catalog.js';
export { jsonTooDeep } from './json-depth.js';
export { Tally } from './tally.js';
export {
  extractTrace,
  formatTraceparent,
  parseTraceparent,
  setTraceHeaders,
  TRACEPARENT,
  TRACESTATE,
  withTraceMeta,
  type IncomingTrace,
  type TraceCarrier,
} from './trace-context.js';
