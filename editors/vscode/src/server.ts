/**
 * The server's lifecycle: find its command, start it as a language client, stop and restart it, and
 * turn what it reports (status notifications, loading progress, messages) into one ServerStatus. Also
 * the typed requests the rest of the extension sends, so that only this module knows the client, and
 * the settings the server sees, which depend on workspace trust (settings.ts, `forTrust`). Inline
 * completion is the client's built-in feature, with the middleware of inlineCompletion.ts.
 */

import * as os from 'node:os';
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  MessageType,
  ShowMessageNotification,
  State,
  TransportKind,
  type LanguageClientOptions,
  type ServerOptions,
  type ShowMessageParams,
} from 'vscode-languageclient/node';
import {
  COMMAND_CODE_ACTION,
  SECTION,
  chatDeltaProgress,
  chatRequest,
  confirmToolCallRequest,
  nextEditAcceptedNotification,
  nextEditRejectedNotification,
  nextEditRequest,
  nextEditShownNotification,
  searchCodebaseRequest,
  statsRequest,
  statusNotification,
  type ChatParams,
  type ChatResult,
  type CodeActionArgs,
  type CodeActionResult,
  type ConfirmToolCallParams,
  type ConfirmToolCallResult,
  type NextEdit,
  type NextEditParams,
  type ResolvedCodeActionData,
  type SearchCodebaseParams,
  type SearchCodebaseResult,
  type StatsResult,
  type Verification,
  type WorkspaceEdit,
} from './protocol';
import { repeatsStatusError } from './notifications';
import { locateServer, PYTHONS, type Located, type ServerCommand } from './serverCommand';
import { inlineCompletionMiddleware } from './inlineCompletion';
import { completionEnabled, configurationForServer, initializationOptions, readSettings } from './settings';
import { applyLoadProgress, applyStatusNotification, initialStatus, type ServerStatus } from './status';
import { isVerification } from './verification';

export const NOT_FOUND =
  'Could not find the llama-lsp server: install the llama-lsp Python package (in its checkout: make setup) or set llamaLsp.serverCommand.';
/** When the extension carries a wheel to install (serverInstall.ts). */
export const NOT_FOUND_INSTALLABLE =
  'Could not find the llama-lsp server: install it (Llama: Install Server), or set llamaLsp.serverCommand.';
const RESTRICTED = "(In Restricted Mode, the workspace's .venv and its llamaLsp.serverCommand are not used.)";

/** Where the server is looked for besides the settings, PATH and .venv directories. */
export interface ServerPlaces {
  extensionPath: string;
  /** Where the extension installs servers (serverInstall.ts): `<global storage>/server`. */
  installRoot: string;
  /** Pythons to run the bootstrap with when python3 and python cannot (the Python extension's). */
  laterPythons(): Promise<string[]>;
}

/** The documents the language client opens in the server: every file (it answers about any text). */
export const DOCUMENT_SELECTOR = [{ scheme: 'file' }];

/** The three notifications about a next-edit suggestion, by what happened to it. */
const NEXT_EDIT_FEEDBACK = {
  shown: nextEditShownNotification,
  accepted: nextEditAcceptedNotification,
  rejected: nextEditRejectedNotification,
} as const;

/** Asks the user whether a chat's call of an MCP tool may run (`assistant/confirmToolCall`). */
export type ToolConsent = (params: ConfirmToolCallParams, token: vscode.CancellationToken) => Promise<ConfirmToolCallResult>;

/** A lightbulb code action the client resolved, with how the server checked its edit. */
export interface ResolvedCheck {
  title: string;
  verification: Verification;
}

function sameCommand(a: ServerCommand | undefined, b: ServerCommand | undefined): boolean {
  return a?.command === b?.command && JSON.stringify(a?.args) === JSON.stringify(b?.args);
}

export class LlamaServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<void> | undefined;
  private requestCounter = 0;
  private current: ServerStatus = initialStatus;
  private beforeInstall: ServerStatus | undefined;
  private readonly statusChanged = new vscode.EventEmitter<ServerStatus>();
  readonly onDidChangeStatus = this.statusChanged.event;
  private readonly checkResolved = new vscode.EventEmitter<ResolvedCheck>();
  /** A lightbulb edit action was resolved: VS Code applies its edit next; this says how it was checked. */
  readonly onDidResolveCheck = this.checkResolved.event;
  private readonly chatEnded = new vscode.EventEmitter<void>();
  /**
   * A chat request ended (answered, failed or cancelled): a chat is what starts MCP servers, so this is
   * when one may have failed.
   */
  readonly onDidEndChat = this.chatEnded.event;
  /** The command the running server was started with. */
  command: ServerCommand | undefined;
  /** What the last start found: the command, or why none, and what an install would install. */
  located: Located | undefined;

  constructor(
    private readonly places: ServerPlaces,
    private readonly output: vscode.LogOutputChannel,
    private readonly traceOutput: vscode.LogOutputChannel,
    private readonly toolConsent: ToolConsent,
  ) {}

  get status(): ServerStatus {
    return this.current;
  }

  start(): Promise<void> {
    this.beforeInstall = undefined;
    this.starting ??= this.startClient().finally(() => (this.starting = undefined));
    return this.starting;
  }

  async stop(): Promise<void> {
    await this.starting?.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    if (client !== undefined) {
      try {
        await client.dispose(5000); // the server saves its slots' KV state on shutdown
      } catch (error) {
        this.output.warn(`stopping the server: ${String(error)}`);
      }
    }
    this.setStatus({ phase: 'stopped', ...this.carried() });
  }

  /**
   * While the extension installs a server (serverInstall.ts) in place of none, the status says so
   * instead of "error"; after a failed install the status before it comes back, already reported
   * (a start after a successful one replaces it).
   */
  noteInstalling(installing: boolean): void {
    if (installing) {
      this.beforeInstall = this.current;
      this.setStatus({ phase: 'starting', message: 'Installing the llama-lsp server', ...this.carried() });
    } else if (this.beforeInstall !== undefined) {
      this.setStatus({ ...this.beforeInstall, ...this.carried(), reported: true });
      this.beforeInstall = undefined;
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /**
   * The workspace became trusted. Its .venv or its serverCommand may now pick another server: then a
   * restart. Otherwise the running server gets the section again, now with what was withheld.
   */
  async trustGranted(): Promise<void> {
    await this.starting?.catch(() => undefined);
    const client = this.client;
    const sameServer = sameCommand((await this.locate()).located.command, this.command);
    if (client === undefined || client.state !== State.Running || !sameServer) {
      await this.restart();
      return;
    }
    await client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: this.settingsForServer([SECTION]),
    });
  }

  async chat(
    params: ChatParams,
    onDelta: (text: string) => void,
    token: vscode.CancellationToken,
  ): Promise<ChatResult> {
    const client = await this.running();
    const partialResultToken = `llama-lsp-chat-${++this.requestCounter}`;
    const progress = client.onProgress(chatDeltaProgress, partialResultToken, (value) => onDelta(value.delta));
    try {
      return this.noteStats(await client.sendRequest(chatRequest, { ...params, partialResultToken }, token));
    } finally {
      progress.dispose();
      this.chatEnded.fire();
    }
  }

  async stats(): Promise<StatsResult> {
    return (await this.running()).sendRequest(statsRequest, {});
  }

  async searchCodebase(params: SearchCodebaseParams, token?: vscode.CancellationToken): Promise<SearchCodebaseResult> {
    return (await this.running()).sendRequest(searchCodebaseRequest, params, token);
  }

  /** `assistant/nextEdit`: null when there is nothing to suggest, or the answer is stale or superseded. */
  async nextEdit(params: NextEditParams, token: vscode.CancellationToken): Promise<NextEdit | null> {
    return (await this.running()).sendRequest(nextEditRequest, params, token);
  }

  /** Tells the server what became of a suggestion; nothing when it is not running (its counts went with it). */
  nextEditFeedback(kind: keyof typeof NEXT_EDIT_FEEDBACK, id: string): void {
    const client = this.client;
    if (client === undefined || client.state !== State.Running) return;
    client.sendNotification(NEXT_EDIT_FEEDBACK[kind], { id }).catch((error: unknown) => {
      this.output.warn(`${NEXT_EDIT_FEEDBACK[kind].method}: ${String(error)}`);
    });
  }

  /** Whether the language client syncs this document with the server, so that the server can answer about it. */
  serves(document: vscode.TextDocument): boolean {
    return vscode.languages.match(DOCUMENT_SELECTOR, document) > 0;
  }

  /** Runs a code action to the end: the server applies its edit through workspace/applyEdit. */
  async runCodeAction(args: CodeActionArgs, token: vscode.CancellationToken): Promise<CodeActionResult> {
    const client = await this.running();
    const result: CodeActionResult = await client.sendRequest(
      ExecuteCommandRequest.type,
      { command: COMMAND_CODE_ACTION, arguments: [args] },
      token,
    );
    return this.noteStats(result);
  }

  async toCodeEdit(edit: WorkspaceEdit): Promise<vscode.WorkspaceEdit> {
    return (await this.running()).protocol2CodeConverter.asWorkspaceEdit(edit);
  }

  async toProtocolDiagnostics(diagnostics: vscode.Diagnostic[]): Promise<unknown[]> {
    return (await this.running()).code2ProtocolConverter.asDiagnostics(diagnostics);
  }

  dispose(): void {
    void this.stop();
    this.statusChanged.dispose();
    this.checkResolved.dispose();
    this.chatEnded.dispose();
  }

  private async running(): Promise<LanguageClient> {
    await this.starting;
    if (this.client === undefined || this.client.state !== State.Running) {
      throw new Error(
        this.current.phase === 'error' && this.current.message
          ? this.current.message
          : 'The llama-lsp server is not running.',
      );
    }
    return this.client;
  }

  /**
   * A response carries its own request's stats; the status bar takes them from here as well as from
   * the server's `ready` status, so that it shows this window's last request.
   */
  private noteStats<T extends { stats?: ChatResult['stats'] }>(result: T): T {
    if (result?.stats !== undefined) this.setStatus({ ...this.current, lastStats: result.stats });
    return result;
  }

  /** What a new state keeps of the current one: the last figures, which outlive a restart. */
  private carried(): Pick<ServerStatus, 'lastStats' | 'lastCompletion'> {
    return { lastStats: this.current.lastStats, lastCompletion: this.current.lastCompletion };
  }

  private setStatus(status: ServerStatus): void {
    this.current = status;
    this.statusChanged.fire(status);
  }

  /**
   * Settings for workspace/didChangeConfiguration, as the client's synchronize would send them (each
   * section's value under its name), through the trust rule.
   */
  private settingsForServer(sections: string[]): Record<string, unknown> {
    const trusted = vscode.workspace.isTrusted;
    const config = vscode.workspace.getConfiguration();
    const settings: Record<string, unknown> = {};
    for (const section of sections) {
      const value: unknown = config.get(section);
      // A plain copy: the configuration's objects are read-only proxies.
      const plain: unknown = value === undefined ? null : JSON.parse(JSON.stringify(value));
      settings[section] = configurationForServer(section, plain, trusted);
    }
    return settings;
  }

  private async locate(): Promise<{ located: Located; folders: string[] }> {
    const settings = readSettings(vscode.workspace.getConfiguration(SECTION));
    const folders = (vscode.workspace.workspaceFolders ?? [])
      .filter((f) => f.uri.scheme === 'file')
      .map((f) => f.uri.fsPath);
    const trusted = vscode.workspace.isTrusted;
    const located = await locateServer(settings.serverCommand, {
      extensionPath: this.places.extensionPath,
      installRoot: this.places.installRoot,
      trustedFolders: trusted ? folders : [],
      homeDir: os.homedir(),
      // In Restricted Mode the selected interpreter may be the workspace's own .venv: not run.
      bootstrap: { pythons: PYTHONS, laterPythons: trusted ? () => this.places.laterPythons() : undefined, env: process.env },
    });
    return { located, folders };
  }

  /** A resolved code action's `data.verification`, when the server sent one. */
  private noteResolved(action: vscode.CodeAction | null | undefined): void {
    const data: unknown = (action as { data?: unknown } | null | undefined)?.data;
    if (typeof data !== 'object' || data === null) return;
    const verification = (data as ResolvedCodeActionData).verification;
    if (action && isVerification(verification)) this.checkResolved.fire({ title: action.title, verification });
  }

  private async startClient(): Promise<void> {
    const { located, folders } = await this.locate();
    const command = located.command;
    this.located = located;
    this.command = command;
    if (command === undefined) {
      const installServer = located.installable !== undefined;
      const found =
        located.problem !== undefined
          ? `Could not find the llama-lsp server: ${located.problem}; or set llamaLsp.serverCommand.`
          : installServer
            ? NOT_FOUND_INSTALLABLE
            : NOT_FOUND;
      const message = vscode.workspace.isTrusted ? found : `${found} ${RESTRICTED}`;
      this.output.error(message);
      this.setStatus({ phase: 'error', message, installServer, ...this.carried() });
      return;
    }
    this.output.info(`starting ${[command.command, ...command.args].join(' ')} --stdio (from ${command.source}${command.version ? ` ${command.version}` : ''})`);
    this.setStatus({ phase: 'starting', ...this.carried() });

    // TransportKind.stdio makes the client append `--stdio`, which the server accepts.
    const serverOptions: ServerOptions = {
      command: command.command,
      args: command.args,
      transport: TransportKind.stdio,
      options: folders.length > 0 ? { cwd: folders[0] } : undefined,
    };
    const clientOptions: LanguageClientOptions = {
      // Every file: the server answers about any text, and a chat's document must be open in it.
      documentSelector: DOCUMENT_SELECTOR,
      initializationOptions: () =>
        initializationOptions(readSettings(vscode.workspace.getConfiguration(SECTION)), vscode.workspace.isTrusted),
      // Sends workspace/didChangeConfiguration with the section when a llamaLsp setting changes (the
      // middleware below decides what goes in it).
      synchronize: { configurationSection: SECTION },
      outputChannel: this.output,
      traceOutputChannel: this.traceOutput,
      middleware: {
        // The only work-done progress the server starts itself is the model's loading.
        handleWorkDoneProgress: (token, params, next) => {
          this.setStatus(applyLoadProgress(this.current, params));
          next(token, params);
        },
        // Every way the settings reach the server goes through the trust rule: the server's
        // workspace/configuration requests here, initializationOptions above, and the notifications.
        workspace: {
          configuration: async (params, token, next) => {
            const answer = await next(params, token);
            if (!Array.isArray(answer)) return answer; // an error: nothing to filter
            const trusted = vscode.workspace.isTrusted;
            return answer.map((value, i) => configurationForServer(params.items[i]?.section, value, trusted));
          },
          // The client's own notification would carry the section unfiltered, so it is sent from here.
          didChangeConfiguration: async (sections, next) => {
            if (sections === undefined) return next(sections); // `settings: null`: nothing to filter
            await client.sendNotification(DidChangeConfigurationNotification.type, {
              settings: this.settingsForServer(sections),
            });
          },
        },
        // Ghost text: nothing is sent while the setting is off; each answer's time goes to the status bar.
        ...inlineCompletionMiddleware({
          enabled: () => completionEnabled(vscode.workspace.getConfiguration(SECTION)),
          onTimed: (timing) => this.setStatus({ ...this.current, lastCompletion: timing }),
        }),
        resolveCodeAction: async (item, token, next) => {
          const resolved = await next(item, token);
          this.noteResolved(resolved);
          return resolved;
        },
      },
    };
    const client = new LanguageClient('llamaLsp', 'Llama LSP', serverOptions, clientOptions);
    client.onNotification(statusNotification, (params) =>
      this.setStatus(applyStatusNotification(this.current, params)),
    );
    // Replaces the client's own handler: a load error arrives both as a status and as a message, and
    // the status already gives the user a notification with actions.
    client.onNotification(ShowMessageNotification.type, (params) => this.showMessage(params));
    // A chat's call of an MCP tool that may change something waits for this answer (the server takes
    // an error, or no answer within its time, as "deny").
    client.onRequest(confirmToolCallRequest, (params, token) => this.toolConsent(params, token));
    client.onDidChangeState((event) => {
      if (event.newState === State.Stopped && this.client === client && this.current.phase !== 'error') {
        this.setStatus({ phase: 'stopped', ...this.carried() });
      }
    });
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      // The client has already shown its own notification and logged the cause.
      this.setStatus({
        phase: 'error',
        message: `The llama-lsp server did not start (${command.command}): ${error instanceof Error ? error.message : String(error)}`,
        ...this.carried(),
        reported: true,
      });
    }
  }

  private showMessage(params: ShowMessageParams): void {
    if (repeatsStatusError(params, this.current)) {
      this.output.error(params.message);
      return;
    }
    switch (params.type) {
      case MessageType.Error:
        void vscode.window.showErrorMessage(params.message);
        break;
      case MessageType.Warning:
        void vscode.window.showWarningMessage(params.message);
        break;
      default:
        void vscode.window.showInformationMessage(params.message);
    }
  }
}
