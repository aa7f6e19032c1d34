/**
 * `@svc/core/machine-protocol`: the messages between a robot and the platform over the agent
 * WebSocket (docs/agent-protocol.md): their schemas, limits and close codes, what the API's agent
 * session validates and what docs/agent-protocol.schema.json is generated from.
 */
export {
  REQUESTS as AGENT_REQUESTS, RESULTS as AGENT_RESULTS, PUSHES as AGENT_PUSHES, ReplyResult as AgentReplyResult, ReplyError as AgentReplyError,
  CLOSE as AGENT_CLOSE, MAX_MESSAGE_BYTES as AGENT_MAX_MESSAGE_BYTES, FIELD_MAX_BYTES as AGENT_FIELD_MAX_BYTES,
  CONNECTION_LIMITS as AGENT_CONNECTION_LIMITS, oversizedField as agentOversizedField, misplacedException as agentMisplacedException,
} from './machines/protocol';
export type {
  RequestType as AgentRequestType, RequestOf as AgentRequestOf, ResultOf as AgentResultOf, PushType as AgentPushType, PushOf as AgentPushOf,
  ServerMessage as AgentServerMessage,
} from './machines/protocol';
export { MAX_TAKE } from './queue-items/take';
export type { AgentMachine, HeartbeatReport, HeartbeatResult } from './machines/heartbeat';
