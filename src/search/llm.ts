/**
 * The language model ask may use (LLM_PROVIDER=ollama|openai). `chat` is the one place where
 * document text is sent to a model: the egress policy (src/privacy/egress.ts) is applied there.
 */
import { defineSettings, int, oneOf, read, string } from '../config/env.ts';
import { EMBEDDING_SETTINGS } from '../embedding/config.ts';
import { prepareEgress } from '../privacy/egress.ts';
import { codedError } from '../util/errors.ts';

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

export class LlmError extends codedError('LLM.FAILED') {
  constructor(
    readonly reason: LlmFailure,
    message: string,
  ) {
    super(message);
  }
}

export const DEFAULT_LLM_TIMEOUT_MS = 30_000;

export const LLM_SETTINGS = defineSettings('ask', 'Ask', {
  LLM_PROVIDER: oneOf(['none', 'ollama', 'openai'] as const, {
    default: 'none',
    description: 'model for generated answers (`OLLAMA_BASE_URL` or `OPENAI_BASE_URL` and `OPENAI_API_KEY`); `none`: ask answers extractively (quoted sentences)',
  }),
  LLM_MODEL: string({ defaultText: '`llama3.2` (ollama), `gpt-4o-mini` (openai)', description: 'model name sent to the provider' }),
  LLM_TIMEOUT_MS: int({
    default: DEFAULT_LLM_TIMEOUT_MS,
    min: 1,
    max: 3_600_000,
    description: 'how long ask waits for the model before answering extractively',
  }),
});

/** Read at every ask (not once at start), so a test or an operator can switch the model without a restart. */
export function loadLlmOptions(env: NodeJS.ProcessEnv = process.env): LlmOptions | null {
  const p = read(env, LLM_SETTINGS.LLM_PROVIDER);
  if (p === 'none') return null;
  return {
    provider: p,
    baseUrl: read(env, p === 'ollama' ? EMBEDDING_SETTINGS.OLLAMA_BASE_URL : EMBEDDING_SETTINGS.OPENAI_BASE_URL),
    apiKey: read(env, EMBEDDING_SETTINGS.OPENAI_API_KEY),
    model: read(env, LLM_SETTINGS.LLM_MODEL) ?? (p === 'ollama' ? 'llama3.2' : 'gpt-4o-mini'),
    timeoutMs: read(env, LLM_SETTINGS.LLM_TIMEOUT_MS),
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
