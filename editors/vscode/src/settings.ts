/**
 * The extension's settings (`llamaLsp.*`) and what the server gets of them. Reads through a small
 * `get` interface so that tests can hand in plain objects instead of a WorkspaceConfiguration.
 */

import { SECTION, type Backend, type InitializationOptions } from './protocol';

export const DEFAULT_MODEL = 'qwen2.5-coder-1.5b';
export const DEFAULT_CONTEXT_SIZE = 8192;
export const DEFAULT_VERIFY_TIMEOUT = 60;
export const DEFAULT_MAX_VERIFY_ATTEMPTS = 3;
export const DEFAULT_WARM = true;
export const DEFAULT_BACKEND: Backend = 'local';
export const DEFAULT_COMPLETION = true;
export const DEFAULT_COMPLETION_TIME_BUDGET_MS = 1000;

export interface Settings {
  /** Empty: find the server automatically (see serverCommand.ts). */
  serverCommand: string | string[];
  model: string;
  contextSize: number;
  threads: number;
  /** Empty: edits are not checked. */
  verifyCommand: string;
  verifyTimeout: number;
  maxVerifyAttempts: number;
  /** Warm the cache in the background (open documents, answers for their follow-ups). */
  warm: boolean;
  /** 'local': the model runs in the server; else the OpenAI-compatible server that answers instead. */
  backend: Backend;
  /** Inline completion (ghost text) while typing. */
  completion: boolean;
  /** Once a completion has run this long, it ends at the end of the line it is writing. */
  completionTimeBudgetMs: number;
}

export interface ConfigReader {
  get<T>(key: string): T | undefined;
}

export function readSettings(config: ConfigReader): Settings {
  return {
    serverCommand: config.get<string | string[]>('serverCommand') ?? '',
    model: config.get<string>('model') ?? DEFAULT_MODEL,
    contextSize: config.get<number>('contextSize') ?? DEFAULT_CONTEXT_SIZE,
    threads: config.get<number>('threads') ?? 0,
    verifyCommand: config.get<string>('verifyCommand') ?? '',
    verifyTimeout: config.get<number>('verifyTimeout') ?? DEFAULT_VERIFY_TIMEOUT,
    maxVerifyAttempts: config.get<number>('maxVerifyAttempts') ?? DEFAULT_MAX_VERIFY_ATTEMPTS,
    warm: config.get<boolean>('warm') ?? DEFAULT_WARM,
    backend: config.get<Backend>('backend') ?? DEFAULT_BACKEND,
    completion: completionEnabled(config),
    completionTimeBudgetMs: config.get<number>('completionTimeBudgetMs') ?? DEFAULT_COMPLETION_TIME_BUDGET_MS,
  };
}

/** Read on every inline completion request (inlineCompletion.ts), so that turning it off takes effect at once. */
export function completionEnabled(config: ConfigReader): boolean {
  return config.get<boolean>('completion') ?? DEFAULT_COMPLETION;
}

/**
 * The values are passed on as the user typed them: the server checks them and answers a bad one with
 * a visible warning and its default, which says more than a silent fix here would.
 */
export function initializationOptions(settings: Settings, trusted: boolean): InitializationOptions {
  return forTrust(
    {
      model: settings.model,
      contextSize: settings.contextSize,
      threads: settings.threads,
      verifyCommand: settings.verifyCommand,
      verifyTimeout: settings.verifyTimeout,
      maxVerifyAttempts: settings.maxVerifyAttempts,
      warm: settings.warm,
      backend: settings.backend,
      completion: settings.completion,
      completionTimeBudgetMs: settings.completionTimeBudgetMs,
    },
    trusted,
  );
}

/**
 * Settings (keys of the `llamaLsp` section) that make the server run a command on the workspace's
 * code. Restricted Mode already ignores their workspace value (package.json restrictedConfigurations),
 * but a user-level value would still apply: a user's `pytest` run on an untrusted repository executes
 * that repository's conftest.py. So the server never gets them from an untrusted workspace.
 * `backend` is not one of them: Restricted Mode ignores a workspace's value (which could send the code
 * to an attacker's URL), but the user's own server is where the user chose to send code, trusted or not.
 */
export const TRUSTED_ONLY = ['verifyCommand'] as const;

/**
 * The one decision about workspace trust and the server's settings: trusted, the settings as they are;
 * untrusted, the same without the TRUSTED_ONLY keys (a copy; the argument is not changed).
 */
export function forTrust<T extends object>(settings: T, trusted: boolean): T {
  if (trusted) return settings;
  const copy = { ...settings } as Record<string, unknown>;
  for (const key of TRUSTED_ONLY) delete copy[key];
  return copy as T;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * An answer to one item of the server's workspace/configuration request, through `forTrust`: the item
 * may ask for the whole configuration (no section), the `llamaLsp` section, or a single setting.
 */
export function configurationForServer(
  section: string | null | undefined,
  value: unknown,
  trusted: boolean,
): unknown {
  if (trusted) return value;
  if (section === null || section === undefined || section === '') {
    if (!isObject(value) || !isObject(value[SECTION])) return value;
    return { ...value, [SECTION]: forTrust(value[SECTION], false) };
  }
  if (section === SECTION) return isObject(value) ? forTrust(value, false) : value;
  return (TRUSTED_ONLY as readonly string[]).some((key) => section === `${SECTION}.${key}`) ? null : value;
}
