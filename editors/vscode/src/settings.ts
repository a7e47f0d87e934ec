/**
 * The extension's settings (`llamaLsp.*`) and what the server gets of them. Reads through a small
 * `get` interface so that tests can hand in plain objects instead of a WorkspaceConfiguration.
 */

import type { InitializationOptions } from './protocol';

export const DEFAULT_MODEL = 'qwen2.5-coder-1.5b';
export const DEFAULT_CONTEXT_SIZE = 8192;

export interface Settings {
  /** Empty: find the server automatically (see serverCommand.ts). */
  serverCommand: string | string[];
  model: string;
  contextSize: number;
  threads: number;
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
  };
}

/**
 * The values are passed on as the user typed them: the server checks them and answers a bad one with
 * a visible warning and its default, which says more than a silent fix here would.
 */
export function initializationOptions(settings: Settings): InitializationOptions {
  return { model: settings.model, contextSize: settings.contextSize, threads: settings.threads };
}
