import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { ROOT } from './processes';

/** The committed document, read and compiled once per process: its definitions checked by name. */
let documentCheck: ((def: string, value: unknown) => void) | null = null;
function protocolDocument(): (def: string, value: unknown) => void {
  if (documentCheck) return documentCheck;
  const doc = JSON.parse(readFileSync(path.join(ROOT, 'docs/agent-protocol.schema.json'), 'utf8')) as { $defs: Record<string, unknown> };
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  ajv.addSchema(doc, 'protocol');
  const compiled = new Map<string, ValidateFunction>();
  documentCheck = (def, value) => {
    if (!(def in doc.$defs)) throw new Error(`the protocol document describes no ${def}: ${JSON.stringify(value).slice(0, 300)}`);
    let validate = compiled.get(def);
    if (!validate) compiled.set(def, (validate = ajv.getSchema(`protocol#/$defs/${def}`)!));
    if (!validate(value)) throw new Error(`${def} does not match the protocol document (${ajv.errorsText(validate.errors)}): ${JSON.stringify(value).slice(0, 500)}`);
  };
  return documentCheck;
}

/**
 * Reads the machine protocol's messages the way a robot written from docs/agent-protocol.schema.json
 * would: every message checked against the committed document, each reply's result against the
 * result of the request it answers. A message the document does not describe fails the test.
 */
export function agentProtocolChecker() {
  const checked = new Set<string>();
  const check = (def: string, value: unknown) => {
    checked.add(def);
    protocolDocument()(def, value);
  };
  /** what the test sent, by id: each reply is read as the answer to that request */
  const sent = new Map<number, { type: string } & Record<string, unknown>>();
  return {
    /** a request the test sends (hostile ones too: only those the server accepts are checked) */
    request(message: { id: number; type: string } & Record<string, unknown>): void {
      sent.set(message.id, message);
    },
    /**
     * A message the server sent. A reply with a result is checked against the result of the
     * request it answers, and that request against the document: what the server accepts, the
     * document describes.
     */
    server(message: { type?: unknown; re?: unknown; error?: unknown; result?: unknown }): void {
      if (message.type !== 'reply') return check(`push.${String(message.type)}`, message);
      if (message.error !== undefined) return check('reply.error', message);
      check('reply.result', message);
      const request = typeof message.re === 'number' ? sent.get(message.re) : undefined;
      if (!request) return;
      check(`request.${request.type}`, request);
      check(`result.${request.type}`, message.result);
    },
    /** the document's definitions checked so far: a test shows what it covered */
    checked: () => [...checked].sort(),
  };
}
