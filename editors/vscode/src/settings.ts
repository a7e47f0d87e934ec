/**
 * The extension's settings (`llamaLsp.*`) and what the server gets of them. Reads through a small
 * `get` interface so that tests can hand in plain objects instead of a WorkspaceConfiguration.
 */

import { SECTION, type InitializationOptions } from './protocol';
import { SERVER_DEFAULTS, TRUSTED_ONLY, UNTRUSTED_VALUES } from './serverSettings';

/** The server's settings, each with a value, and the extension's own. */
export type Settings = Required<InitializationOptions> & {
  /** Empty: find the server automatically (see serverCommand.ts). */
  serverCommand: string | string[];
};

/** The server's settings by name (serverSettings.ts is generated from the server's declarations). */
const SERVER_KEYS = Object.keys(SERVER_DEFAULTS) as (keyof InitializationOptions)[];

export interface ConfigReader {
  get<T>(key: string): T | undefined;
}

/** The settings as set, and the server's defaults for those that are not (VS Code fills in package.json's). */
export function readSettings(config: ConfigReader): Settings {
  const server = Object.fromEntries(SERVER_KEYS.map((key) => [key, config.get(key) ?? SERVER_DEFAULTS[key]]));
  return {
    serverCommand: config.get<string | string[]>('serverCommand') ?? '',
    ...(server as Required<InitializationOptions>),
  };
}

/** Read on every inline completion request (inlineCompletion.ts), so that turning it off takes effect at once. */
export function completionEnabled(config: ConfigReader): boolean {
  return config.get<boolean>('completion') ?? SERVER_DEFAULTS.completion;
}

/** Read whenever next-edit suggestions would be asked for (nextEdit.ts), so that a change takes effect at once. */
export function nextEditSettings(config: ConfigReader): { enabled: boolean; delayMs: number } {
  const delay = config.get<number>('nextEditDelayMs');
  return {
    enabled: config.get<boolean>('nextEdit') ?? SERVER_DEFAULTS.nextEdit,
    // The server checks the value it gets; here a bad one only decides how long to wait.
    delayMs: typeof delay === 'number' && Number.isFinite(delay) && delay >= 0 ? delay : SERVER_DEFAULTS.nextEditDelayMs,
  };
}

/**
 * The values are passed on as the user typed them: the server checks them and answers a bad one with
 * a visible warning and its default, which says more than a silent fix here would.
 */
export function initializationOptions(settings: Settings, trusted: boolean): InitializationOptions {
  const options = Object.fromEntries(SERVER_KEYS.map((key) => [key, settings[key]]));
  return forTrust(options as Required<InitializationOptions>, trusted);
}

/**
 * Settings (keys of the `llamaLsp` section) that make the server run a command on the workspace's
 * code. Restricted Mode already ignores their workspace value (package.json restrictedConfigurations),
 * but a user-level value would still apply: a user's `pytest` run on an untrusted repository executes
 * that repository's conftest.py. So the server never gets them from an untrusted workspace.
 * `backend` is not one of them: Restricted Mode ignores a workspace's value (which could send the code
 * to an attacker's URL), but the user's own server is where the user chose to send code, trusted or not.
 * Declared with the setting (`trusted_only` in lsp_server/lsp/settings.py), generated into serverSettings.ts.
 */
export { TRUSTED_ONLY };

/**
 * The one decision about workspace trust and the server's settings: trusted, the settings as they are;
 * untrusted, the same without the TRUSTED_ONLY keys, except those whose default would run something
 * (verifyCommand "auto"), which get their UNTRUSTED_VALUES (a copy; the argument is not changed).
 */
export function forTrust<T extends object>(settings: T, trusted: boolean): T {
  if (trusted) return settings;
  const copy = { ...settings } as Record<string, unknown>;
  for (const key of TRUSTED_ONLY) delete copy[key];
  return { ...copy, ...UNTRUSTED_VALUES } as T;
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
  const key = TRUSTED_ONLY.find((name) => section === `${SECTION}.${name}`);
  if (key === undefined) return value;
  return key in UNTRUSTED_VALUES ? UNTRUSTED_VALUES[key] : null;
}
