/**
 * "Debug Training" through torchrun: turns a launch configuration with a `torchrun` block into the debugpy launch
 * of `python -m torch.distributed.run` that starts one worker per rank, each with the TensorSight agent, and
 * recognises the child sessions debugpy asks for, one per worker.
 *
 *   { "type": "tensorsight", "request": "launch", "program": "${file}", "args": ["--epochs", "1"],
 *     "torchrun": { "nprocPerNode": 2 }, "ranks": [1] }
 *
 * becomes `module: "torch.distributed.run"`, `args: ["--nproc-per-node", "2", "--rdzv-backend", "c10d",
 * "--rdzv-endpoint", "127.0.0.1:0", "--local-addr", "127.0.0.1", "${file}", "--epochs", "1"]`, `subProcess: true`
 * and `options.ranks: [1]` (the agent keeps breakpoints to those ranks). Rendezvous and the workers' store stay on
 * loopback; port 0 lets torchrun pick a free port. debugpy follows the workers (`subProcess`) and announces each one
 * with a `startDebugging` reverse request whose configuration is `request: "attach"`, `subProcessId` and `connect`
 * (the adapter's own client port on loopback): `workerAttachEndpoint` recognises it, so the adapter factory can
 * connect that child session to the running adapter instead of starting a new one.
 *
 * Pure functions; pinned by tests/extension/torchrun.test.ts and, against a real torchrun job under a real
 * debugpy adapter, by tests/agent/distributed/test_distributed.py.
 */
import type { TensorSightLaunchConfig } from './launchConfig';

export const TORCHRUN_MODULE = 'torch.distributed.run';
export const LOOPBACK = '127.0.0.1';

/** The `torchrun` block of a "Debug Training" configuration. */
export interface TorchrunSettings {
  /** Workers on this machine: a count, or torchrun's `auto`, `cpu`, `gpu`, `xpu`. */
  nprocPerNode?: number | string;
  /** Nodes in the job (default 1). More than one needs `rdzvEndpoint` on a host every node reaches. */
  nnodes?: number | string;
  /** Use torchrun's `--standalone` (single node, its own rendezvous on a free port) instead of the endpoint. */
  standalone?: boolean;
  /** Rendezvous backend (default `c10d`). */
  rdzvBackend?: string;
  /** Rendezvous `host:port` (default `127.0.0.1:<rdzvPort>`). */
  rdzvEndpoint?: string;
  /** Port of the default loopback endpoint (default 0: torchrun picks a free one). */
  rdzvPort?: number;
  /** Address workers use for their store and collectives (default 127.0.0.1 on a single node). */
  localAddr?: string;
  /** Worker-group restarts before torchrun gives up (torchrun's default when absent). */
  maxRestarts?: number;
  /** More torchrun flags, placed before the program (e.g. `["--log-dir", "logs"]`). */
  extraArgs?: string[];
}

/** A "Debug Training" configuration that may carry `torchrun` and `ranks`. */
export interface DistributedLaunchConfig extends TensorSightLaunchConfig {
  torchrun?: TorchrunSettings;
  /** Ranks whose breakpoints stop; the other ranks run through them (agent option `ranks`). */
  ranks?: number[];
}

/** Where a debugpy child session (one torchrun worker) connects: the running adapter's client port. */
export interface WorkerEndpoint {
  host: string;
  port: number;
  pid: number;
}

const PROC_KEYWORDS = new Set(['auto', 'cpu', 'gpu', 'xpu']);

/** What is wrong with the `torchrun`/`ranks` settings, in words for the user; undefined when they are usable. */
export function torchrunProblem(config: DistributedLaunchConfig): string | undefined {
  if (config.ranks !== undefined && !isRankList(config.ranks)) {
    return '"ranks" must be a list of rank numbers, e.g. [1].';
  }
  const settings = config.torchrun;
  if (settings === undefined) return undefined;
  if (!isPlainObject(settings)) return '"torchrun" must be an object, e.g. { "nprocPerNode": 2 }.';
  if (!config.program && !config.module) return '"torchrun" needs a "program" (or "module") for each worker to run.';
  const procs = settings.nprocPerNode;
  if (procs !== undefined && !isPositiveInteger(procs) && !(typeof procs === 'string' && validProcString(procs))) {
    return '"torchrun.nprocPerNode" must be a positive number or one of auto, cpu, gpu, xpu.';
  }
  const nodes = nodesText(settings.nnodes);
  if (!/^\d+(:\d+)?$/.test(nodes) || nodes.split(':').some((n) => Number(n) < 1)) {
    return '"torchrun.nnodes" must be a number of nodes, or a range such as "1:4".';
  }
  if (nodes !== '1' && settings.standalone === true) return '"torchrun.standalone" runs a single node only.';
  if (nodes !== '1' && !settings.rdzvEndpoint) {
    return 'A job on several nodes needs "torchrun.rdzvEndpoint" (host:port that every node reaches).';
  }
  if (settings.rdzvPort !== undefined && !isWholeNumber(settings.rdzvPort, 65535)) {
    return '"torchrun.rdzvPort" must be a port number (0 lets torchrun pick one).';
  }
  if (settings.maxRestarts !== undefined && !isWholeNumber(settings.maxRestarts)) {
    return '"torchrun.maxRestarts" must be a whole number.';
  }
  if (settings.extraArgs !== undefined && !isStringList(settings.extraArgs)) {
    return '"torchrun.extraArgs" must be a list of strings.';
  }
  return undefined;
}

/** torchrun's own flags, before the program. */
export function torchrunArgs(settings: TorchrunSettings): string[] {
  const args = ['--nproc-per-node', String(settings.nprocPerNode ?? 2)];
  const nodes = nodesText(settings.nnodes);
  if (nodes !== '1') args.push('--nnodes', nodes);
  if (settings.standalone === true) {
    args.push('--standalone');
  } else {
    const endpoint = settings.rdzvEndpoint ?? `${LOOPBACK}:${settings.rdzvPort ?? 0}`;
    args.push('--rdzv-backend', settings.rdzvBackend ?? 'c10d', '--rdzv-endpoint', endpoint);
  }
  const localAddr = settings.localAddr ?? (nodes === '1' ? LOOPBACK : undefined);
  if (localAddr) args.push('--local-addr', localAddr);
  if (settings.maxRestarts !== undefined) args.push('--max-restarts', String(settings.maxRestarts));
  args.push(...(settings.extraArgs ?? []));
  return args;
}

/**
 * The configuration to hand on to `toDebugpyLaunch`: with `torchrun`, debugpy launches `torch.distributed.run`
 * (the user's program, or `-m` and their module, then their args) and follows its workers; `ranks` becomes the
 * agent option `options.ranks`. `torchrun` and `ranks` themselves are removed (debugpy does not know them).
 * A configuration without either comes back unchanged (as a copy).
 */
export function toTorchrunLaunch(config: DistributedLaunchConfig): TensorSightLaunchConfig {
  const { torchrun, ranks, ...rest } = config;
  const launch: TensorSightLaunchConfig = { ...rest };
  if (ranks !== undefined) {
    launch.options = { ...(isPlainObject(config.options) ? config.options : {}), ranks: [...ranks] };
  }
  if (torchrun === undefined) return launch;
  const target = config.module ? ['-m', config.module] : [String(config.program)];
  launch.module = TORCHRUN_MODULE;
  delete launch.program;
  launch.args = [...torchrunArgs(torchrun), ...target, ...userArgs(config.args)];
  launch.subProcess = true;
  return launch;
}

/**
 * The endpoint of a debugpy child session: a configuration debugpy sent (by `startDebugging`) for a process it
 * follows, `request: "attach"` with `subProcessId` and `connect: {host, port}`. undefined for anything else.
 */
export function workerAttachEndpoint(config: Record<string, unknown>): WorkerEndpoint | undefined {
  if (config.request !== 'attach' || typeof config.subProcessId !== 'number') return undefined;
  const connect = config.connect;
  if (!isPlainObject(connect) || typeof connect.port !== 'number') return undefined;
  const host = typeof connect.host === 'string' && connect.host ? connect.host : LOOPBACK;
  return { host, port: connect.port, pid: config.subProcessId };
}

/** Whether a debugpy endpoint is on this machine's loopback (what debugpy itself announces for a child session). */
export function isLoopbackHost(host: string): boolean {
  const name = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '');
  return name === 'localhost' || name === '::1' || /^127(?:\.\d{1,3}){3}$/.test(name);
}

function nodesText(nodes: unknown): string {
  return typeof nodes === 'number' || typeof nodes === 'string' ? String(nodes) : nodes === undefined ? '1' : '?';
}

function userArgs(args: string[] | string | undefined): string[] {
  if (args === undefined) return [];
  // A string is debugpy's "pass through the shell" form; torchrun needs separate words, so split on blanks.
  return typeof args === 'string' ? args.split(/\s+/).filter((word) => word.length > 0) : [...args];
}

function validProcString(value: string): boolean {
  return PROC_KEYWORDS.has(value) || /^[1-9]\d*$/.test(value);
}

function isPositiveInteger(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

function isWholeNumber(value: unknown, max = Number.MAX_SAFE_INTEGER): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max;
}

function isRankList(value: unknown): value is number[] {
  return Array.isArray(value) && value.every((rank) => isWholeNumber(rank));
}

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
