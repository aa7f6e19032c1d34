export { createApp } from './app';
export { buildDeps, type ApiDeps } from './deps';
