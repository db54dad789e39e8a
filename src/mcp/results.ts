/**
 * A tool's result: its structured content with a text rendering, and a body that never throws (a ToolError,
 * or anything else, becomes an isError result so the server keeps serving). Shared by every tool module.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ToolError } from './api.ts';

export function ok<T extends Record<string, unknown>>(structured: T, text: string): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: structured };
}

/** Runs a tool body; ToolErrors (and anything else) become isError results, so the server keeps serving. */
export async function guarded(fn: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await fn();
  } catch (err) {
    const message = err instanceof ToolError ? err.message : `internal error: ${(err as Error).message ?? String(err)}`;
    return { content: [{ type: 'text', text: message }], isError: true };
  }
}
