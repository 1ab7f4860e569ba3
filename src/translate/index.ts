/** Pure protocol knowledge: era detection, validation and mapping functions. No I/O, clock or randomness. */
export {
  ErrorCode,
  GATEWAY_OWN_PATHS,
  LEGACY_VERSION,
  LEGACY_VERSIONS,
  LOG_LEVELS,
  META,
  MODERN_VERSION,
  OAUTH_WELL_KNOWN,
  SUPPORTED_MODERN_VERSIONS,
  TASKS_EXTENSION,
} from './constants.js';
export {
  errorResponse,
  isErrorResponse,
  isNotification,
  isObject,
  isRequest,
  isResponse,
  paramsOf,
  requestIdOf,
  resultResponse,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcErrorResponse,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type JsonRpcResultResponse,
  type RequestId,
} from './jsonrpc.js';
export { methodPolicy, UNKNOWN_METHOD_POLICY, type MethodKind, type MethodPolicy } from './methods.js';
export { decodeHeaderValue, encodeHeaderValue, singleHeader, type DecodedHeader } from './headers.js';
export { classifyEra, metaProtocolVersion, type Era, type EraSignals } from './era.js';
export {
  REQUEST_FAILURE_KIND,
  REQUEST_FAILURE_STATUS,
  validateModernRequest,
  type ModernHeaders,
  type ModernRequest,
  type RequestEnvelope,
  type RequestFailure,
  type RequestFailureReason,
} from './modern-request.js';
export {
  asErrorObject,
  discoverResult,
  identityFromInitialize,
  modernCapabilities,
  modernError,
  modernResult,
  saysResourceNotFound,
  type CacheHints,
  type UpstreamIdentity,
} from './results.js';
export {
  sessionInputCapabilities,
  canonicalJson,
  hintedInputKey,
  INPUT_KEY_HINT,
  INPUT_METHODS,
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
export { checkInputAnswers, inputAnswerProblem, type AskedInput } from './input-answers.js';
export { errorSummary, logFailure, NO_LOG, type LayerLogger, type LogMethod } from './layer-logger.js';
export {
  decodeRequestState,
  encodeRequestState,
  type RequestStateClaims,
  type RequestStateFailure,
} from './request-state.js';
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
export {
  inlineResult,
  isTerminal,
  legacyStatus,
  outcomeFromPayload,
  pollIntervalMsFromLegacy,
  pollIntervalMsFromWire,
  TERMINAL_STATUSES,
  ttlMsFromLegacy,
  ttlMsFromWire,
  withoutRelatedTask,
  type TaskId,
  type TaskKind,
  type TaskRecord,
  type TaskSnapshot,
  type TaskStatus,
} from './tasks.js';
export {
  createTaskResultV1,
  isCreateTaskResultV1,
  legacySupportsToolTasks,
  legacyTasksCapability,
  readCreateTaskResultV1,
  readTaskMetadataV1,
  readTaskV1,
  relatedTaskMeta,
  relatedTaskOf,
  taskInputParamsV1,
  taskPayloadV1,
  taskSnapshotFromV1,
  taskStatusNotificationV1,
  taskV1,
  toolTaskSupport,
  withTaskSupportV1,
  type CreateTaskResultV1,
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
  taskStatusNotificationV2,
  type CreateTaskResultV2,
  type DetailedTaskV2,
} from './tasks-v2.js';
export {
  headerParamsOf,
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
  X_MCP_HEADER,
  type HeaderParam,
  type InputRequired,
  type ModernEnvelope,
  type ScreenedToolsList,
} from './modern-upstream.js';
export { legacyParams, logLevelPasses, progressTokenOf, relayedOnRequestStream } from './forwarding.js';
export {
  isLegacyLogLevel,
  legacyInitializeResult,
  legacyServerCapabilities,
  modernClientCapabilities,
  negotiateLegacyVersion,
  readInitializeParams,
  type LegacyInitializeParams,
} from './legacy-handshake.js';
export {
  legacyError,
  legacyInputParams,
  legacyResult,
  modernParamsFromLegacy,
  offersSubscriptions,
  sessionListenFilter,
  undeclaredInputError,
  type LegacyResultFailure,
} from './legacy-results.js';
export {
  answerOf,
  catalogAnswer,
  ERROR_CATALOG,
  formatMessage,
  GatewayError,
  type CatalogAnswer,
  type ErrorKind,
  type ErrorSpec,
  type InBandKind,
  type GatewayErrorOptions,
} from './error-catalog.js';
export { jsonTooDeep } from './json-depth.js';
export { Tally } from './tally.js';
export {
  extractTrace,
  formatTraceparent,
  MAX_TRACESTATE_LENGTH,
  parseTraceparent,
  readTracestate,
  setTraceHeaders,
  TRACEPARENT,
  TRACESTATE,
  withTraceMeta,
  type IncomingTrace,
  type TraceCarrier,
  type TraceParent,
  type TraceSource,
} from './trace-context.js';
