/**
 * What the status bar says, derived from the server's `assistant/status` notifications, the model's
 * work-done progress while it loads, and the client's own state. Pure: statusBar.ts shows the result.
 */

import type { CompletionTiming } from './inlineCompletion';
import { mcpSummary } from './mcpStats';
import type { CompletionStats, StatsResult, StatusParams, TurnStats } from './protocol';

export type Phase = 'starting' | 'loading' | 'ready' | 'busy' | 'error' | 'stopped';

export interface ServerStatus {
  phase: Phase;
  message?: string;
  /** Loading progress, 0-100, when the server reports one. */
  percent?: number;
  queue?: number;
  lastStats?: TurnStats;
  /** The last inline completion request the client saw answered (inlineCompletion.ts). */
  lastCompletion?: CompletionTiming;
  installModel?: string;
  /** No server was found, and the extension carries one to install (serverInstall.ts). */
  installServer?: boolean;
  /**
   * The open documents (URIs as the client sent them) whose prompt the server has in its cache now;
   * undefined until the model is ready (the server sends the list with every status from then on).
   */
  warm?: string[];
  /** The language client has already told the user (its own notification): do not repeat it. */
  reported?: boolean;
}

export const initialStatus: ServerStatus = { phase: 'starting' };

/**
 * The server's notification replaces the state, except the last request's and the last completion's
 * figures, which outlive a restart.
 */
export function applyStatusNotification(previous: ServerStatus, params: StatusParams): ServerStatus {
  return {
    phase: params.state,
    message: params.message,
    queue: params.queue,
    lastStats: params.lastStats ?? previous.lastStats,
    lastCompletion: previous.lastCompletion,
    installModel: params.installModel,
    warm: Array.isArray(params.warm) ? params.warm : undefined,
    percent: params.state === 'loading' ? previous.percent : undefined,
  };
}

/** Work-done progress values ({kind: begin|report|end, percentage?, message?}) while loading. */
export function applyLoadProgress(
  previous: ServerStatus,
  value: { kind: string; percentage?: number; message?: string; title?: string },
): ServerStatus {
  if (previous.phase !== 'loading' && previous.phase !== 'starting') return previous;
  if (value.kind === 'end') return { ...previous, percent: undefined };
  const percent = typeof value.percentage === 'number' ? Math.round(value.percentage) : previous.percent;
  return { ...previous, phase: 'loading', percent, message: value.message ?? value.title ?? previous.message };
}

/**
 * Share of the prompt served from the KV cache, as a whole percentage; undefined without a prompt, or
 * when a remote backend did not report it.
 */
export function reusePercent(stats: Pick<TurnStats, 'nPrompt' | 'nReused'> | undefined): number | undefined {
  if (stats === undefined || !(stats.nPrompt > 0) || stats.nReused === null) return undefined;
  return Math.round((100 * stats.nReused) / stats.nPrompt);
}

const count = (n: number): string => n.toLocaleString('en-US');

/**
 * " · 412 of 450 drafted accepted" when speculative decoding drafted tokens, else "" (drafting off, a
 * backend that does not draft, or an older server without the fields).
 */
function drafted(stats: { nDrafted?: number; nAccepted?: number }): string {
  const nDrafted = stats.nDrafted ?? 0;
  if (!(nDrafted > 0)) return '';
  return ` · ${count(stats.nAccepted ?? 0)} of ${count(nDrafted)} drafted accepted`;
}

/**
 * "1,728 of 1,800 prompt tokens cached (96%) · 40 tokens", and with speculative decoding
 * "1,728 of 1,800 prompt tokens cached (96%) · 450 tokens · 412 of 450 drafted accepted".
 */
export function formatStats(stats: TurnStats): string {
  const tokens = ` · ${count(stats.nGenerated)} tokens${drafted(stats)}`;
  if (stats.nReused === null) return `${count(stats.nPrompt)} prompt tokens${tokens}`;
  const percent = reusePercent(stats) ?? 0;
  return `${count(stats.nReused)} of ${count(stats.nPrompt)} prompt tokens cached (${percent}%)${tokens}`;
}

/** "240 ms", "1,240 ms"; "240 ms, nothing to suggest" when the answer had no suggestion. */
export function formatCompletionTiming(timing: CompletionTiming): string {
  return `${count(Math.round(timing.ms))} ms${timing.suggested ? '' : ', nothing to suggest'}`;
}

/**
 * The server's figures for its last completion: "812 ms, 3 tokens", "812 ms, 12 tokens · 9 of 10
 * drafted accepted" (speculative decoding) or "repeated (0 ms)".
 */
export function formatCompletionStats(stats: CompletionStats): string {
  const ms = `${count(Math.round(stats.tMs))} ms`;
  if (stats.cached) return `repeated (${ms})`;
  return (stats.nGenerated === undefined ? ms : `${ms}, ${count(stats.nGenerated)} tokens`) + drafted(stats);
}

export interface StatusView {
  text: string;
  tooltip: string;
  isError: boolean;
}

/** The icon after the status text when the active file is warm. */
export const WARM_ICON = '$(flame)';
export const WARM_LINE = 'This file is warm: a first question about it evaluates only the question';
export const COLD_LINE = 'This file is not cached: a first question about it evaluates the whole file';

/**
 * Whether the server has `uri`'s prompt in its cache: undefined when that is not known (no file, or the
 * model not ready).
 */
export function isWarm(status: ServerStatus, uri: string | undefined): boolean | undefined {
  if (uri === undefined || status.warm === undefined) return undefined;
  if (status.phase !== 'ready' && status.phase !== 'busy') return undefined;
  return status.warm.includes(uri);
}

/**
 * `activeDocument`: the URI (as the client opened it, `uri.toString()`) of the file a question would be
 * about, whose warmth the view shows.
 */
export function statusView(status: ServerStatus, activeDocument?: string): StatusView {
  const details: string[] = [];
  if (status.message) details.push(status.message);
  const warm = isWarm(status, activeDocument);
  let text: string;
  switch (status.phase) {
    case 'starting':
      text = '$(loading~spin) Llama: starting';
      break;
    case 'loading':
      text = `$(loading~spin) Llama: loading${status.percent !== undefined ? ` ${status.percent}%` : ''}`;
      break;
    case 'busy':
      text = '$(sync~spin) Llama: busy';
      if (status.queue) details.push(`${status.queue} waiting`);
      if (warm) text += ` ${WARM_ICON}`;
      break;
    case 'ready': {
      const percent = reusePercent(status.lastStats);
      text = percent === undefined ? '$(check) Llama: ready' : `$(check) Llama: ${percent}% cached`;
      if (warm) text += ` ${WARM_ICON}`;
      break;
    }
    case 'error':
      text = '$(error) Llama: error';
      break;
    case 'stopped':
      text = '$(circle-slash) Llama: stopped';
      break;
  }
  if (warm !== undefined) details.push(warm ? WARM_LINE : COLD_LINE);
  if (status.lastStats) details.push(`Last request: ${formatStats(status.lastStats)}`);
  if (status.lastCompletion) details.push(`Last completion: ${formatCompletionTiming(status.lastCompletion)}`);
  details.push('Click for cache stats');
  return { text, tooltip: details.join('\n'), isError: status.phase === 'error' };
}

/** One line for "Show cache stats". */
export function statsSummary(stats: StatsResult): string {
  const t = stats.totals;
  const parts = [`${stats.model}: ${stats.state}`];
  const requests = `${count(t.requests)} request${t.requests === 1 ? '' : 's'}`;
  if (t.nPrompt > 0 && t.nReused !== null && t.cacheHitRate !== null) {
    parts.push(
      `${requests}, ${count(t.nReused)} of ${count(t.nPrompt)} prompt tokens cached (${Math.round(100 * t.cacheHitRate)}%)`,
    );
  } else {
    parts.push(requests);
  }
  if (stats.lastStats) parts.push(`last: ${formatStats(stats.lastStats)}`);
  if (stats.lastCompletion) parts.push(`last completion: ${formatCompletionStats(stats.lastCompletion)}`);
  const mcp = mcpSummary(stats.mcp);
  if (mcp !== undefined) parts.push(mcp);
  if (stats.error) parts.push(stats.error);
  if (stats.version) parts.push(`llama-lsp ${stats.version.server}`);
  return parts.join(' · ');
}
