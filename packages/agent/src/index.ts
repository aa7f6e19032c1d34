export { connect } from './robot';
export type { ConnectOptions, JobHandler, Robot } from './robot';
export { BusinessError, endJob, isBusinessError, JobEnd, logChunks } from './run';
export type { AbortReason, AssetValue, ExceptionKind, ItemOutcome, JobContext, JobEndFields, JobInfo, QueueItem } from './run';
export { review, ItemReview } from './consumer';
export type { ItemHandler } from './consumer';
export { PlatformError, TIMING } from './connection';
export { isLoopbackHost, urlRefusal } from './transport';
export type { TransportOptions } from './transport';
