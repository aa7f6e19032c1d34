export { connect } from './robot';
export type { ConnectOptions, JobContext, JobHandler, JobInfo, Robot } from './robot';
export { PlatformError } from './connection';
