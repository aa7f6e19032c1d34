export { metricsRegistry, renderMetrics, counter, histogram, gauge } from './registry';
export { observeHttpRequest, rateLimitRejections, apiKeyCacheLookups, UNMATCHED_ROUTE } from './http';
export { registerPlatformGauges, OTHER_LABEL, type PlatformGaugeOptions } from './platform';
export { startMetricsServer, metricsAuthorized, type MetricsServer } from './server';
export { dispatcherPassSeconds, dispatcherPassesStarted, countWebhookOutcome } from './domain';
export { countAgentCut, trackAgentHub, type AgentCutReason } from './agents';
