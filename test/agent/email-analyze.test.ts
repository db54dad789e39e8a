import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyIntent, effectiveRedaction, emailMetadata, noiseScore, redactPii, resolveRedactOptions } from '../../src/mail/analyze.ts';
import { createAgentServer, type AgentServer } from '../../src/agent/server.ts';
import { auth, testConfig } from './helpers.ts';

let app: AgentServer;
beforeAll(async () => {
  app = await createAgentServer(testConfig({ modules: { mail: { enabled: true } } }), { logger: false });
});
afterAll(() => app.close());

const post = (route: string, payload: unknown) => app.inject({ method: 'POST', url: `/v1/email/${route}`, headers: auth, payload: payload as object });

describe('POST /v1/email/classify-intent', () => {
  const cases: Array<[string, { subject: string; body: string; sender?: string }, string, number, Record<string, string>, string[]]> = [
    ['bill', { subject: 'Your Invoice #123', body: 'Amount due: $1,234.56 by Friday' }, 'bill', 0.8, { amount: '$1,234.56' }, []],
    ['statement', { subject: 'October statement', body: 'no amount here' }, 'bill', 0.8, {}, []],
    ['receipt', { subject: 'Receipt from Shop', body: 'Thanks. ORDER #AB-998 was paid' }, 'receipt', 0.85, { order_number: 'ORDER #AB-998' }, []],
    ['payment confirmation', { subject: 'Payment Confirmation', body: 'ok' }, 'receipt', 0.85, {}, []],
    ['order', { subject: 'Your order has shipped', body: 'tracking 1Z' }, 'orderConfirmation', 0.8, {}, []],
    ['order confirmed', { subject: 'Order confirmed', body: '' }, 'orderConfirmation', 0.8, {}, []],
    ['appointment', { subject: 'Dentist appointment', body: 'see you' }, 'appointment', 0.75, {}, ['actionRequired']],
    ['calendar invite', { subject: 'Hello', body: 'Please accept this Calendar Invite' }, 'appointment', 0.75, {}, ['actionRequired']],
    ['action required', { subject: 'Action required: verify account', body: 'x' }, 'actionRequired', 0.7, {}, []],
    ['urgent', { subject: 'URGENT reply', body: 'x' }, 'actionRequired', 0.7, {}, []],
    ['promotional', { subject: 'Black Friday SALE', body: '50% off' }, 'promotional', 0.8, {}, []],
    ['newsletter (subject)', { subject: 'Weekly Newsletter', body: 'news' }, 'newsletter', 0.85, {}, []],
    ['newsletter (sender)', { subject: 'This week', body: 'news', sender: 'newsletter@site.example' }, 'newsletter', 0.85, {}, []],
    ['unknown', { subject: 'Hi there', body: 'How are you?' }, 'unknown', 0.3, {}, []],
    // First match wins: a bill about a meeting is a bill.
    ['order of rules', { subject: 'Invoice for the meeting room', body: '$90' }, 'bill', 0.8, { amount: '$90' }, []],
  ];
  for (const [name, input, intent, confidence, entities, secondary] of cases) {
    it(`classifies ${name} as ${intent}`, async () => {
      const res = await post('classify-intent', input);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ primaryIntent: intent, confidence, secondaryIntents: secondary, extractedEntities: entities });
    });
  }

  it('requires subject and body (400), sender is optional', async () => {
    for (const body of [{}, { subject: 'x' }, { body: 'x' }, { subject: 1, body: 'x' }]) {
      const res = await post('classify-intent', body);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'Missing required fields: subject, body' });
    }
    expect(classifyIntent({ subject: 'receipt', body: 'order 5' }).extractedEntities).toEqual({ order_number: 'order 5' });
  });
});

describe('POST /v1/email/is-noise (score boundaries)', () => {
  it('scores List-Unsubscribe +3, promotional subject +2, bulk sender +2, noise at >= 2', async () => {
    expect(noiseScore({ subject: 'Lunch', from: ['friend@example.org'], listUnsubscribe: null })).toBe(0);
    expect(noiseScore({ subject: 'Lunch', from: ['friend@example.org'], listUnsubscribe: '<mailto:u@x>' })).toBe(3);
    expect(noiseScore({ subject: 'Great DEAL today', from: ['friend@example.org'] })).toBe(2);
    // Words, not substrings: "ideal" is not a deal, "wholesaler" not a sale; plurals count.
    expect(noiseScore({ subject: 'An ideal plan for Tuesday', from: ['friend@example.org'] })).toBe(0);
    expect(noiseScore({ subject: 'Wholesaler meeting, resubscribed', from: ['friend@example.org'] })).toBe(0);
    expect(noiseScore({ subject: 'Deals of the week', from: ['friend@example.org'] })).toBe(2);
    expect(noiseScore({ subject: 'sale offer discount', from: ['a@b'] })).toBe(2); // promo counted once
    expect(noiseScore({ subject: 'Hi', from: ['no-reply@service.example'] })).toBe(2);
    expect(noiseScore({ subject: 'Newsletter', from: ['newsletter@x.example'], listUnsubscribe: '' })).toBe(7);
    // Only the first sender counts.
    expect(noiseScore({ subject: 'Hi', from: ['friend@example.org', 'noreply@x.example'] })).toBe(0);

    const cases: Array<[object, boolean]> = [
      [{ subject: 'Lunch', from: ['friend@example.org'], to: ['me@example.org'], listUnsubscribe: null, hasAttachments: false, attachmentCount: 0 }, false],
      [{ subject: 'Lunch', from: ['friend@example.org'], listUnsubscribe: '<mailto:u@x>' }, true],
      [{ subject: 'Promo codes inside', from: ['friend@example.org'] }, true],
      [{ subject: 'Your receipt', from: ['donotreply@shop.example'] }, true],
      [{ subject: 'Your receipt', from: ['orders@shop.example'] }, false],
      [{}, false],
    ];
    for (const [payload, expected] of cases) {
      const res = await post('is-noise', payload);
      expect(res.statusCode).toBe(200);
      expect(res.json(), JSON.stringify(payload)).toEqual({ is_noise: expected });
    }
    expect((await post('is-noise', { from: 'not-a-list' })).statusCode).toBe(400);
  });
});

describe('POST /v1/email/redact-pii', () => {
  const TEXT = 'Mail jane.doe@example.org, call 617-555-0123 or (212) 736-5000 or +14155552671, account 12345678901234, SSN 123-45-6789.';

  it('redacts every type by default, in the spec order', async () => {
    const res = await post('redact-pii', { text: TEXT });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      redacted_text:
        'Mail [EMAIL_REDACTED], call [PHONE_REDACTED] or [PHONE_REDACTED] or [PHONE_REDACTED], account [ACCOUNT_REDACTED], SSN [SSN_REDACTED].',
    });
    // Ten digits in a row that make a valid number are a phone number before they are an account number.
    expect(redactPii('call 4155552671')).toBe('call [PHONE_REDACTED]');
    expect(redactPii('account 87654321')).toBe('account [ACCOUNT_REDACTED]');
    // A number the line calls something else (an order, a reference) is neither.
    expect(redactPii('order 5551234567, ref 87654321')).toBe('order 5551234567, ref 87654321');
    expect(redactPii('1234567')).toBe('1234567');
  });

  it('finds phone numbers in any common formatting and region, and account numbers written in groups', () => {
    for (const phone of ['415 222 3333', '+1 415 555 2671', '+44 20 7946 0958', '+33 6 12 34 56 78', '+49 30 1234567',
      '020 7946 0958', '06 12 34 56 78', '(508) 410 9572', '508.410.9572', '+1 (508) 410-9572']) {
      expect(redactPii(`Call me on ${phone} tonight.`), phone).toBe('Call me on [PHONE_REDACTED] tonight.');
    }
    for (const account of ['4111 1111 1111 1111', '4111-1111-1111-1111', 'DE89 3704 0044 0532 0130 00', 'GB33BUKB20201555555555', '1234 567890 1234']) {
      expect(redactPii(`Pay into ${account} today.`), account).toBe('Pay into [ACCOUNT_REDACTED] today.');
    }
    // Dates, times, amounts, postcodes, versions and SSNs are not phones or accounts.
    const plain = 'On 2024-01-15 (15/01/2024, 12.05.2024) at 10:30 pay $1,234.56 in 02139, v1.2.3, since 1999.';
    expect(redactPii(plain)).toBe(plain);
    expect(redactPii('SSN 123-45-6789')).toBe('SSN [SSN_REDACTED]');
    // What the spec's patterns took (issue 30): hashes, diff index lines, date-times, ids with letters,
    // message ids and URLs. Numbers libphonenumber does not validate (the fictional 555 area code) are not phones.
    for (const text of [
      'commit 3f9a1c2e8b7d6054a1b2c3d4e5f60718293a4b5c', 'index 83920174..19283746 100644', 'Sent: 17.04.2019 08:22',
      'claim CLM-2026-04417', 'Message-ID: <20190417082200.12345-1-jdoe@example.com>',
      'https://lore.kernel.org/r/20190417082200.12345-1-jdoe@example.com', 'call 555-123-4567',
    ]) {
      expect(redactPii(text), text).toBe(text);
    }
  });

  it('honours options: false turns everything off, an object turns single types off', async () => {
    expect((await post('redact-pii', { text: TEXT, options: false })).json().redacted_text).toBe(TEXT);
    expect((await post('redact-pii', { text: TEXT, options: true })).json().redacted_text).not.toContain('jane.doe');
    const only = async (options: object) => (await post('redact-pii', { text: TEXT, options })).json().redacted_text as string;
    const noEmails = await only({ emails: false });
    expect(noEmails).toContain('jane.doe@example.org');
    expect(noEmails).toContain('[PHONE_REDACTED]');
    const noPhones = await only({ phones: false });
    expect(noPhones).toContain('617-555-0123');
    expect(noPhones).toContain('(212) 736-5000');
    expect(noPhones).toContain('[EMAIL_REDACTED]');
    const noAccounts = await only({ account_numbers: false });
    expect(noAccounts).toContain('12345678901234');
    expect(noAccounts).toContain('[SSN_REDACTED]');
    const noSsn = await only({ ssn: false });
    expect(noSsn).toContain('123-45-6789');
    expect(noSsn).toContain('[ACCOUNT_REDACTED]');
    expect(await only({})).toBe((await post('redact-pii', { text: TEXT })).json().redacted_text);
  });

  it('rejects bad input with 400', async () => {
    expect((await post('redact-pii', {})).json()).toEqual({ error: 'Missing required field: text' });
    expect((await post('redact-pii', { text: 'x', options: 'yes' })).statusCode).toBe(400);
    expect((await post('redact-pii', { text: 'x', options: { phone: false } })).json().error).toMatch(/options\.phone is not a redaction type/);
    expect((await post('redact-pii', { text: 'x', options: { emails: 'no' } })).statusCode).toBe(400);
  });

  it('resolves per-source redaction: source override, then module default, then all on', () => {
    expect(effectiveRedaction(false, true)).toEqual({ emails: false, phones: false, account_numbers: false, ssn: false });
    expect(effectiveRedaction(undefined, { emails: false, phones: true, account_numbers: true, ssn: true }).emails).toBe(false);
    expect(effectiveRedaction(undefined, undefined)).toEqual(resolveRedactOptions(true));
  });
});

describe('POST /v1/email/metadata', () => {
  it('derives preview, attachment counts, noise and intent from parsed fields', async () => {
    const parsed = {
      messageId: '<m1@shop.example>',
      subject: 'Your receipt',
      from: ['noreply@shop.example'],
      to: ['me@example.org'],
      cc: [],
      date: '2023-11-17T12:00:00Z',
      references: [],
      listUnsubscribe: null,
      bodyPlainText: null,
      bodyHTML: `<p>Thanks for order #A-1001.</p><p>${'x'.repeat(300)}</p>`,
      attachments: [{ filename: 'r.pdf', mimeType: 'application/pdf', contentId: null, size: 10, partIndex: 0 }],
    };
    const res = await post('metadata', parsed);
    expect(res.statusCode).toBe(200);
    const m = res.json();
    expect(m.bodyPreview.startsWith('Thanks for order #A-1001.x')).toBe(true);
    expect(m.bodyPreview).toHaveLength(200);
    expect(m).toMatchObject({ hasAttachments: true, attachmentCount: 1, isNoiseEmail: true, messageId: '<m1@shop.example>' });
    expect(m.intentClassification).toEqual({ primaryIntent: 'receipt', confidence: 0.85, secondaryIntents: [], extractedEntities: { order_number: 'order #A-1001' } });
    expect(emailMetadata({ subject: 'Hi', bodyPlainText: 'short' })).toMatchObject({ bodyPreview: 'short', hasAttachments: false, attachmentCount: 0, isNoiseEmail: false });
    expect((await post('metadata', { from: 'x' })).statusCode).toBe(400);
    expect((await post('metadata', [1, 2])).statusCode).toBe(400);
  });
});
