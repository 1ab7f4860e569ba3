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
export { encodeHeaderValue, singleHeader } from './headers.js';
export { classifyEra, type Era } from './era.js';
export { REQUEST_FAILURE_KIND, validateModernRequest, type ModernHeaders, type ModernRequest, type RequestFailure } from './modern-request.js';
export {
  asErrorObject,
  discoverResult,
  modernCapabilities,
  identityFromInitialize,
  modernError,
  modernResult,
  type CacheHints,
  type UpstreamIdentity,
} from './results-to-modern.js';
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
  sessionStartAnswer,
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
// Tasks: the era-neutral model and mappings (tasks.ts), 2025-11-25 core tasks (legacy-tasks.ts), 2026-07-28 tasks
// extension (modern-tasks.ts).
export { inlineResult, isTerminal, outcomeFromPayload, withoutRelatedTask, type TaskId, type TaskRecord, type TaskSnapshot, type TaskStatus } from './tasks.js';
export {
  legacyCreateTaskResult,
  legacySupportsToolTasks,
  legacyTask,
  legacyTaskInputParams,
  legacyTaskPayload,
  legacyTasksCapability,
  legacyTaskStatusNotification,
  readLegacyCreateTaskResult,
  readLegacyTask,
  relatedTaskMeta,
  taskSnapshotFromLegacy,
  toolTaskSupport,
  withLegacyTaskSupport,
  type LegacyTask,
  type TaskSupport,
} from './legacy-tasks.js';
export {
  declaresTasks,
  modernCreateTaskResult,
  modernDetailedTask,
  readModernCreateTaskResult,
  readModernDetailedTask,
  TASKS_REQUIRED_CAPABILITIES,
  taskSnapshotFromModern,
  type ModernCreateTaskResult,
  type ModernDetailedTask,
} from './modern-tasks.js';
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
  type ModernEnvelope,
} from './modern-upstream.js';
export {
  DEFAULT_TASK_MODE,
  drivesJob,
  makesTasks,
  modesWhere,
  modeTraits,
  needsGateway,
  TASK_MODES,
  type TaskMode,
} from './task-modes.js';
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
} from './results-to-legacy.js';
export { ERROR_CATALOG, GatewayErrorCode, type ErrorKind, type ErrorSpec, type InBandKind } from './error-catalog.js';
export { answerOf, catalogAnswer, catalogError, GatewayError, taskFailure, type CatalogAnswer, type GatewayErrorOptions } from './gateway-error.js';
export { jsonTooDeep } from './json-depth.js';
export { splicedResult } from './json-splice.js';
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
