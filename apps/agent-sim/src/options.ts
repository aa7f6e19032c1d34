import { readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { urlRefusal } from '@svc/agent';
import { DEFAULT_BEHAVIOUR, mergeBehaviour, type Behaviour } from './behaviour';

/**
 * Command line of the simulator (docs/agent-sim.md):
 *
 *   SVC_URL=http://… node apps/agent-sim/dist/main.js --machine-key svc_mk_… [--machine-key svc_mk_…]
 *        [--config agent.json] [--duration 1s | 200-800ms] [--item-duration 10-50ms]
 *        [--failure-rate 0.1] [--business-failure-rate 0.05] [--review-rate 0.05] [--progress-steps 4] [--log-lines 3]
 *        [--input-rate 0.2] [--prefetch auto|N] [--crash none|job-start|mid-job|mid-item] [--crash-after-items N]
 *        [--seed N] [--heartbeat-ms N] [--journal file.jsonl] [--machine-key-file FILE]
 *        [--ca-file FILE] [--allow-insecure]
 *
 * Keys also come from AGENT_MACHINE_KEYS (comma-separated), a file (one key a line; also
 * AGENT_MACHINE_KEYS_FILE) and the config file, all better than the command line, which every
 * user of the host can read; the config file path also from AGENT_CONFIG. Layers: built-in defaults ← file `defaults` ←
 * AGENT_BUSINESS_FAILURE_RATE ← flags ← file `processes[<process name or id>]`.
 */
export interface AgentOptions {
  /** the platform's base URL, or several separated by commas (tried in turn) */
  url: string;
  machineKeys: string[];
  defaults: Behaviour;
  /** per process name or id: partial behaviour on top of `defaults` */
  processes: Record<string, Record<string, unknown>>;
  seed?: number;
  heartbeatMs?: number;
  journal?: string;
  /** a plain http:// URL to another host is refused unless this is set */
  allowInsecure: boolean;
  /** the PEM of the certificate authority that signed the platform's certificate */
  ca?: string;
  /** some key came on the command line (the robot warns: other users of the host can read it) */
  keysOnCommandLine: boolean;
}

export class UsageError extends Error {}

/** The flags that set a behaviour setting (the config file's name for it). */
const FLAG_TO_SETTING: Record<string, string> = {
  duration: 'duration',
  'item-duration': 'item_duration',
  'failure-rate': 'failure_rate',
  'business-failure-rate': 'business_failure_rate',
  'review-rate': 'review_rate',
  'progress-steps': 'progress_steps',
  'log-lines': 'log_lines',
  prefetch: 'prefetch',
  crash: 'crash',
  'crash-after-items': 'crash_after_items',
  'failure-message': 'failure_message',
  'input-rate': 'input_rate',
};

/** The command line for util.parseArgs; every flag but the two switches takes a value. */
const OPTIONS = {
  'machine-key': { type: 'string', multiple: true },
  'machine-key-file': { type: 'string' },
  'ca-file': { type: 'string' },
  'allow-insecure': { type: 'boolean' },
  url: { type: 'string' },
  config: { type: 'string' },
  seed: { type: 'string' },
  'heartbeat-ms': { type: 'string' },
  journal: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  ...Object.fromEntries(Object.keys(FLAG_TO_SETTING).map((name) => [name, { type: 'string' as const }])),
} satisfies ParseArgsConfig['options'];

interface ConfigFile {
  machine_keys?: string[];
  defaults?: Record<string, unknown>;
  processes?: Record<string, Record<string, unknown>>;
}

export function parseOptions(argv: string[], env: Record<string, string | undefined>): AgentOptions {
  // Not strict: strict parseArgs refuses a value that starts with a dash (`--review-rate -0.1` must
  // reach the rate's own refusal, as in the Python twin) and a value given to a switch
  // (`--allow-insecure=1`, always accepted), and words its refusals its own way. So the tokens are
  // checked here, in the command line's order, with the simulator's sentences.
  const { values, tokens } = parseArgs({ args: argv, options: OPTIONS, strict: false, allowPositionals: true, tokens: true });
  for (const token of tokens) {
    // the argument as typed, up to an `=`: parseArgs reads `-hx` as `-h -x`, always one unknown option
    const flag = argv[token.index]!.split('=')[0]!;
    if (token.kind !== 'option' || token.rawName !== flag || !Object.hasOwn(OPTIONS, token.name)) throw new UsageError(`unknown option ${flag}\n\n${HELP}`);
    if (token.name === 'help') throw new UsageError(HELP);
    if (token.value === undefined && OPTIONS[token.name as keyof typeof OPTIONS].type === 'string') throw new UsageError(`${flag} needs a value`);
  }
  // every option left is a known one with its value: a string, the switch's (ignored) aside
  const value = (name: keyof typeof OPTIONS): string | undefined => values[name] as string | undefined;
  const keys = [...((values['machine-key'] as string[] | undefined) ?? [])];
  const keysOnCommandLine = keys.length > 0;
  // the environment's settings go under the flags' (a flag overrides its variable); an empty
  // variable is an unset one (how a compose file leaves it out)
  const flagSettings: Record<string, unknown> = env.AGENT_BUSINESS_FAILURE_RATE ? { business_failure_rate: env.AGENT_BUSINESS_FAILURE_RATE } : {};
  // in the order the flags first came (a flag given twice takes its last value), which decides the first refusal
  for (const [name, v] of Object.entries(values)) if (Object.hasOwn(FLAG_TO_SETTING, name)) flagSettings[FLAG_TO_SETTING[name]!] = v;
  const configPath = value('config') ?? env.AGENT_CONFIG;
  const seed = value('seed') === undefined ? undefined : Number(value('seed'));
  const heartbeatMs = value('heartbeat-ms') === undefined ? undefined : Number(value('heartbeat-ms'));
  const journal = value('journal') ?? env.AGENT_JOURNAL;
  const url = value('url') ?? env.SVC_URL;
  const keysFile = value('machine-key-file') ?? env.AGENT_MACHINE_KEYS_FILE;
  const caFile = value('ca-file') ?? env.AGENT_CA_FILE;
  const allowInsecure = values['allow-insecure'] !== undefined || env.AGENT_ALLOW_INSECURE === '1' || env.AGENT_ALLOW_INSECURE === 'true';
  let file: ConfigFile = {};
  if (configPath) {
    try {
      file = JSON.parse(readFileSync(configPath, 'utf8')) as ConfigFile;
    } catch (err) {
      throw new UsageError(`cannot read the config file ${configPath}: ${(err as Error).message}`);
    }
    if (!file || typeof file !== 'object' || Array.isArray(file)) throw new UsageError(`cannot read the config file ${configPath}: it must hold a JSON object`);
  }
  keys.push(...(env.AGENT_MACHINE_KEYS ?? '').split(',').map((k) => k.trim()).filter(Boolean));
  if (keysFile) keys.push(...readText(keysFile, 'the machine key file').split(/\r?\n/).map((k) => k.trim()).filter((k) => k && !k.startsWith('#')));
  const ca = caFile ? readText(caFile, 'the CA file') : undefined;
  if (file.machine_keys !== undefined && file.machine_keys !== null && (!Array.isArray(file.machine_keys) || !file.machine_keys.every((k) => typeof k === 'string'))) {
    throw new UsageError('machine_keys in the config file must be a list of strings');
  }
  keys.push(...(file.machine_keys ?? []));
  const machineKeys = [...new Set(keys)];
  if (machineKeys.length === 0) throw new UsageError(`no machine key: pass --machine-key svc_mk_… (or AGENT_MACHINE_KEYS)\n\n${HELP}`);
  const urls = (url ?? '').split(',').map((u) => u.trim()).filter(Boolean);
  if (urls.length === 0) throw new UsageError(`no platform URL: set SVC_URL (e.g. http://127.0.0.1:3000) or pass --url\n\n${HELP}`);
  for (const u of urls) {
    const refusal = urlRefusal(u, { allowInsecure });
    // the simulator's way to allow it, instead of the SDK's option
    if (refusal) throw new UsageError(`SVC_URL: ${refusal.replace(/ \(allowInsecure\)$/, ' (--allow-insecure, AGENT_ALLOW_INSECURE=1)')}`);
  }
  if (file.processes !== undefined && file.processes !== null && (typeof file.processes !== 'object' || Array.isArray(file.processes))) {
    throw new UsageError('processes in the config file must be an object');
  }
  let defaults: Behaviour;
  try {
    defaults = mergeBehaviour(mergeBehaviour(DEFAULT_BEHAVIOUR, file.defaults), flagSettings);
    for (const patch of Object.values(file.processes ?? {})) mergeBehaviour(defaults, patch);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (seed !== undefined && !Number.isInteger(seed)) throw new UsageError('--seed must be an integer');
  if (heartbeatMs !== undefined && !(heartbeatMs >= 50)) throw new UsageError('--heartbeat-ms must be at least 50');
  return { url: urls.join(','), machineKeys, defaults, processes: file.processes ?? {}, seed, heartbeatMs, journal, allowInsecure, ca, keysOnCommandLine };
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${what} ${path}: ${(err as Error).message}`);
  }
}

/** The behaviour for a process: its entry (by id, else by name) over the defaults. */
export function behaviourFor(opts: AgentOptions, process: { id: string; name: string }): Behaviour {
  return mergeBehaviour(opts.defaults, opts.processes[process.id] ?? opts.processes[process.name]);
}

export const HELP = `Usage: agent-sim --machine-key svc_mk_… [--machine-key …] [options]

Runs one simulated robot per machine key: heartbeats, runs jobs, consumes queues, reaching the
platform only through its HTTP API (the machine protocol) with each machine's key.
Environment: SVC_URL (the platform's base URL; several separated by commas are tried in turn),
             AGENT_MACHINE_KEYS (comma-separated), AGENT_MACHINE_KEYS_FILE, AGENT_CONFIG (config file path),
             AGENT_CA_FILE, AGENT_ALLOW_INSECURE=1, AGENT_BUSINESS_FAILURE_RATE (as the flag),
             HTTPS_PROXY / NO_PROXY, LOG_LEVEL, METRICS_PORT.
Machine keys belong in AGENT_MACHINE_KEYS or a file: a key on the command line is readable by every
user of the host (ps), and the robot warns about it.

Options (defaults for every process; the config file can set them per process):
  --url URL[,URL…]         the platform's base URL (instead of SVC_URL); https:// outside this host
  --machine-key-file FILE  machine keys, one a line
  --ca-file FILE           the certificate authority (PEM) of the platform's certificate
  --allow-insecure         allow a plain http:// URL to another host (a key in clear on the network)
  --config FILE            JSON: {"machine_keys": [], "defaults": {}, "processes": {"<name or id>": {}}}
  --duration D             job duration: 250ms, 2s, 100-500ms (uniform)      [500ms-2s]
  --item-duration D        duration of one queue item                        [5-30ms]
  --failure-rate P         probability a job or item fails with an application
                           exception, retried as usual (0..1)                [0]
  --business-failure-rate P  probability a job or item fails with a business
                           exception, never retried (0..1; drawn right after
                           --failure-rate, on the same draw)                  [0]
  --review-rate P          probability an item asks for human review (0..1)   [0]
  --input-rate P           probability a job asks a person for input halfway and waits
                           for the answer (0..1; output_data.input_value)     [0]
  --progress-steps N       progress updates per job                          [4]
  --log-lines N            log lines per job                                 [3]
  --prefetch auto|N        items a consumer holds at once: 1..100, or auto (one
                           at a time for items of 10 ms or more, up to 4 for faster ones) [auto]
  --crash MODE             none | job-start | mid-job | mid-item (SIGKILL itself) [none]
  --crash-after-items N    with --crash mid-item: crash during item N+1       [0]
  --failure-message TEXT   error_message of a simulated application failure
  --seed N                 repeatable random choices
  --heartbeat-ms N         heartbeat more often than the platform asks [the platform's period]
  --journal FILE           append one JSON line per job/item start and end (for tests)`;
