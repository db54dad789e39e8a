/**
 * What the mail collectors and `memex import mail` redact in the copy they send to the gateway, which is
 * the copy the person's store keeps.
 *
 * The spec (host-agent §2.1) resolves `redact_pii` as: the source's setting, then the module's, then all
 * on. Its "all on" assumes the gateway is another machine. memex's gateway runs on this machine by
 * default, where redacting protects nothing and destroys what the person came to search (addresses,
 * numbers, and every hash or date the old patterns mistook for one). So when neither level is set, the
 * default follows the gateway: a loopback gateway stores the text as written (redaction happens where text
 * leaves the machine, src/privacy/egress.ts); any other gateway gets the spec's all on. Whatever is set
 * (a --redact / --no-redact option, a source, the module) resolves exactly as the spec says.
 */
import { isLoopbackHost } from '../../../config/server.ts';
import { ALL_REDACTIONS, NO_REDACTIONS, describeCategories, policyLabel, redactsAnything, resolveRedactOptions, type RedactOptions } from '../../../privacy/policy.ts';

export interface StoreRedaction {
  options: RedactOptions;
  /** policyLabel(options): `none`, `all` or the categories. */
  label: string;
  /** Where the decision came from, for the one line an import prints. */
  from: 'option' | 'source' | 'module' | 'loopback-gateway' | 'remote-gateway';
}

/** True when the URL's host is a loopback address or `localhost` (the text stays on this machine). */
export function isLoopbackUrl(url: string): boolean {
  try {
    return isLoopbackHost(new URL(url).hostname);
  } catch {
    return false;
  }
}

export function storeRedaction(input: {
  /** --redact[=…] / --no-redact of `memex import mail`. */
  option?: RedactOptions;
  source?: boolean | RedactOptions;
  module?: boolean | RedactOptions;
  gatewayUrl: string;
}): StoreRedaction {
  const make = (options: RedactOptions, from: StoreRedaction['from']): StoreRedaction => ({ options, label: policyLabel(options), from });
  if (input.option) return make({ ...input.option }, 'option');
  if (input.source !== undefined) return make(resolveRedactOptions(input.source), 'source');
  if (input.module !== undefined) return make(resolveRedactOptions(input.module), 'module');
  return isLoopbackUrl(input.gatewayUrl) ? make({ ...NO_REDACTIONS }, 'loopback-gateway') : make({ ...ALL_REDACTIONS }, 'remote-gateway');
}

/** The one line `memex import mail` prints: what the stored copy holds, why, and how to change it. */
export function describeStoreRedaction(p: StoreRedaction, gatewayUrl: string, configFile?: string): string {
  const what = redactsAnything(p.options)
    ? `replacing ${describeCategories(p.options)} by markers in the stored text`
    : 'storing the text as written (no redaction)';
  const where = configFile ? ` in ${configFile}` : '';
  const why = {
    option: 'as the command line asks',
    source: `as the source's redact_pii${where} says`,
    module: `as modules.mail.redact_pii${where} says`,
    'loopback-gateway': `the server ${gatewayUrl} is on this machine; text is redacted where it leaves it (remote LLM or embedding API)`,
    'remote-gateway': `the server ${gatewayUrl} is not on this machine`,
  }[p.from];
  const change = redactsAnything(p.options)
    ? '--no-redact (or modules.mail.redact_pii: false) keeps the text as written'
    : '--redact[=emails,phones,account_numbers,ssn] (or modules.mail.redact_pii) redacts the stored copy too';
  return `mail import: ${what}: ${why}. ${change}; see docs/email-collectors.md.`;
}
