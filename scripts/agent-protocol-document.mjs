// The machine protocol as a JSON Schema 2020-12 document (docs/agent-protocol.schema.json), built
// from the definitions the platform validates and types its messages with (packages/core's
// machines/protocol.ts: requests, their results, the server's pushes, the limits) and from the
// robot's timing rules as @svc/agent ships them. Together with docs/agent-protocol.md it is all a
// robot in another language needs.
//   node scripts/agent-protocol-document.mjs           write it
//   node scripts/agent-protocol-document.mjs --check   exit 1 when the committed one differs
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, 'docs', 'agent-protocol.schema.json');

export function agentProtocolDocument() {
  const require = createRequire(import.meta.url);
  const core = require('@svc/core/machine-protocol');
  const agent = require('@svc/agent');
  // TypeBox's schemas are JSON Schema; its own markers are symbols, which JSON drops
  const plain = (schema) => JSON.parse(JSON.stringify(schema));
  const defs = {};
  for (const [type, schema] of Object.entries(core.AGENT_REQUESTS)) defs[`request.${type}`] = plain(schema);
  for (const [type, schema] of Object.entries(core.AGENT_RESULTS)) defs[`result.${type}`] = plain(schema);
  for (const [type, schema] of Object.entries(core.AGENT_PUSHES)) defs[`push.${type}`] = plain(schema);
  defs['reply.result'] = plain(core.AgentReplyResult);
  defs['reply.error'] = plain(core.AgentReplyError);
  const refs = (prefix) => Object.keys(defs).filter((k) => k.startsWith(prefix)).map((k) => ({ $ref: `#/$defs/${k}` }));
  defs.RobotMessage = {
    description: 'A request a robot sends: one JSON text frame. Its `id` is repeated as `re` in the reply.',
    oneOf: refs('request.'),
  };
  defs.ServerMessage = {
    description: 'What the server sends: `welcome` first, then pushes and replies. A reply\'s `result` has the shape of `result.<type>` of the request it answers (`re`).',
    oneOf: [...refs('push.'), ...refs('reply.')],
  };
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'The machine protocol',
    description: 'Messages between a robot and the platform over `GET /api/v1/agent/connect` (a WebSocket, `Authorization: Bearer <machine key>`). The rules that are not shapes (ownership, leases, repeats, reconnecting) are in docs/agent-protocol.md.',
    'x-connect': { path: '/api/v1/agent/connect', authorization: 'Bearer <machine key, svc_mk_…>' },
    'x-limits': {
      maxMessageBytes: core.AGENT_MAX_MESSAGE_BYTES,
      fieldMaxBytes: core.AGENT_FIELD_MAX_BYTES,
      ...core.AGENT_CONNECTION_LIMITS,
    },
    'x-close-codes': core.AGENT_CLOSE,
    'x-robot-timing': agent.TIMING,
    oneOf: [{ $ref: '#/$defs/RobotMessage' }, { $ref: '#/$defs/ServerMessage' }],
    $defs: defs,
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const text = JSON.stringify(agentProtocolDocument(), null, 2) + '\n';
  if (process.argv.includes('--check')) {
    if (!existsSync(OUT) || readFileSync(OUT, 'utf8') !== text) {
      console.error('docs/agent-protocol.schema.json differs from the protocol\'s definitions: run `node scripts/agent-protocol-document.mjs`.');
      process.exit(1);
    }
    console.log('docs/agent-protocol.schema.json matches the protocol\'s definitions.');
  } else {
    writeFileSync(OUT, text);
    console.log('Wrote docs/agent-protocol.schema.json');
  }
}
