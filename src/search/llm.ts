/**
 * The language model ask may use (LLM_PROVIDER=ollama|openai). `chat` is the one place where
 * document text is sent to a model: the egress policy (src/privacy/egress.ts) is applied there.
 */
import { prepareEgress } from '../privacy/egress.ts';

export interface LlmOptions {
  provider: 'ollama' | 'openai';
  baseUrl: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** Why the model gave no answer: it did not answer in time, could not be reached, refused the request or said nothing. */
export type LlmFailure = 'timeout' | 'unreachable' | 'http_error' | 'empty';

export class LlmError extends Error {
  constructor(
    readonly reason: LlmFailure,
    message: string,
  ) {
    super(message);
  }
}

export const DEFAULT_LLM_TIMEOUT_MS = 30_000;

export function loadLlmOptions(env: NodeJS.ProcessEnv = process.env): LlmOptions | null {
  const p = (env.LLM_PROVIDER ?? '').trim().toLowerCase();
  if (p === '' || p === 'none') return null;
  if (p !== 'ollama' && p !== 'openai') throw new Error(`LLM_PROVIDER must be ollama or openai, got "${env.LLM_PROVIDER}"`);
  const baseUrl =
    p === 'ollama'
      ? (env.OLLAMA_BASE_URL ?? 'http://127.0.0.1:11434').replace(/\/+$/, '')
      : (env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1').replace(/\/+$/, '');
  return {
    provider: p,
    baseUrl,
    apiKey: env.OPENAI_API_KEY,
    model: env.LLM_MODEL ?? (p === 'ollama' ? 'llama3.2' : 'gpt-4o-mini'),
    timeoutMs: Number(env.LLM_TIMEOUT_MS ?? DEFAULT_LLM_TIMEOUT_MS) || DEFAULT_LLM_TIMEOUT_MS,
  };
}

/** One chat completion (temperature 0); the reply's text, or an LlmError saying why there is none. */
export async function chat(opts: LlmOptions, messages: ChatMessage[]): Promise<string> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  let url: string;
  let body: unknown;
  if (opts.provider === 'ollama') {
    url = `${opts.baseUrl}/api/chat`;
    body = { model: opts.model, messages, stream: false, options: { temperature: 0 } };
  } else {
    url = `${opts.baseUrl}/chat/completions`;
    body = { model: opts.model, messages, temperature: 0 };
    if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
  }
  const signal = AbortSignal.timeout(opts.timeoutMs);
  let json: any;
  try {
    // A remote model gets the copy the egress policy allows (src/privacy/egress.ts); a local one the original.
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(prepareEgress(url, 'ask', body)), signal });
    if (!res.ok) throw new LlmError('http_error', `the model's server answered HTTP ${res.status}`);
    json = await res.json();
  } catch (err) {
    if (err instanceof LlmError) throw err;
    if (signal.aborted) throw new LlmError('timeout', `no answer from the model within ${opts.timeoutMs} ms`);
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    throw new LlmError('unreachable', `the model's server could not be reached${cause ? ` (${cause})` : ''}`);
  }
  const content = opts.provider === 'ollama' ? json?.message?.content : json?.choices?.[0]?.message?.content;
  if (typeof content !== 'string' || content.trim() === '') throw new LlmError('empty', 'the model returned no answer text');
  return content;
}
