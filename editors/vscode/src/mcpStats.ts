/**
 * The MCP servers as `assistant/stats` reports them (`mcp`), in words: a short part of the "Show Cache
 * Stats" message, one line per server for the output channel, which failures the output channel has
 * not named yet, and whether asking for them is worth a request. Pure: extension.ts shows and logs the
 * result.
 */

import type { McpServerStats, McpStats } from './protocol';
import type { ConfigReader } from './settings';

/** The project files the server reads MCP servers from (with `mcpWorkspaceServers`), in a workspace folder. */
export const PROJECT_MCP_FILES = ['.vscode/mcp.json', '.mcp.json'];

/**
 * Whether the server may run MCP servers: it starts none in an untrusted workspace, nor without
 * `mcpServers` or a project file. `hasProjectFile` is only asked when it matters.
 */
export function mayRunMcpServers(config: ConfigReader, trusted: boolean, hasProjectFile: () => boolean): boolean {
  if (!trusted) return false;
  const servers = config.get<Record<string, unknown>>('mcpServers');
  if (servers !== undefined && servers !== null && Object.keys(servers).length > 0) return true;
  return config.get<boolean>('mcpWorkspaceServers') !== false && hasProjectFile();
}

/** The message of "Show Cache Stats" is one notification: a failed server's reason is cut there (the log has all). */
export const MAX_SUMMARY_ERROR_CHARS = 100;

const tools = (n: number): string => `${n} tool${n === 1 ? '' : 's'}`;

/** The first line of a failure's reason (the server adds its stderr's last lines after it). */
function firstLine(error: string | null): string {
  return (error ?? '').split('\n').find((line) => line.trim() !== '')?.trim() ?? '';
}

/** "tracker: running, 2 tools"; "notes: failed (cannot open the database)". */
function serverPart(server: McpServerStats): string {
  if (server.state === 'failed') {
    const why = firstLine(server.error);
    const shown = why.length > MAX_SUMMARY_ERROR_CHARS ? `${why.slice(0, MAX_SUMMARY_ERROR_CHARS).trimEnd()}…` : why;
    return `${server.name}: failed${shown ? ` (${shown})` : ''}`;
  }
  // A stopped server's count is its last list: still worth saying, as what a chat would start.
  return `${server.name}: ${server.state}, ${tools(server.tools)}`;
}

/**
 * "MCP: tracker: running, 2 tools; notes: failed (…)" for the stats message; undefined when no MCP server
 * is configured (or the server is older than MCP).
 */
export function mcpSummary(mcp: McpStats | undefined): string | undefined {
  if (mcp === undefined || mcp.servers.length === 0) return undefined;
  return `MCP: ${mcp.servers.map(serverPart).join('; ')}`;
}

/**
 * The servers for the output channel, one line each with the whole reason of a failure, and the tools
 * the latest conversation was not offered, which the model did not see.
 */
export function mcpLogLines(mcp: McpStats | undefined): string[] {
  if (mcp === undefined) return [];
  const lines = mcp.servers.map((server) => {
    const where = `MCP server ${server.name} (${server.source})`;
    const started = `${server.starts} start${server.starts === 1 ? '' : 's'}`;
    if (server.state === 'failed') return `${where}: failed after ${started}: ${server.error ?? 'no reason given'}`;
    return `${where}: ${server.state}, ${tools(server.tools)}, ${started}`;
  });
  if (mcp.leftOut.length > 0) {
    lines.push(`MCP tools the latest conversation was not offered (not relevant to it, or past the limit): ${mcp.leftOut.join(', ')}`);
  }
  return lines;
}

/**
 * Names each failed MCP server (it could not start, or it died) in the output channel once: a server is
 * named again only after it ran (or stopped) in between, or when it fails for another reason.
 */
export class McpFailureLog {
  /** Failed servers already named, by name: the reason named. */
  private readonly named = new Map<string, string>();

  /** The lines to log for these stats: the failures not named yet. */
  newFailures(mcp: McpStats | undefined): string[] {
    if (mcp === undefined) return [];
    const lines: string[] = [];
    const configured = new Set(mcp.servers.map((server) => server.name));
    for (const name of [...this.named.keys()]) if (!configured.has(name)) this.named.delete(name);
    for (const server of mcp.servers) {
      if (server.state !== 'failed') {
        // "starting" is the restart after a failure, which may fail the same way: not a recovery yet.
        if (server.state !== 'starting') this.named.delete(server.name);
        continue;
      }
      const reason = server.error ?? 'no reason given';
      if (this.named.get(server.name) === reason) continue;
      this.named.set(server.name, reason);
      lines.push(`MCP server ${server.name} (${server.source}) failed: ${reason}`);
    }
    return lines;
  }
}
