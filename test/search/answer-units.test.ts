/**
 * The pieces ask may quote (src/search/answer-units.ts) and the question analysis it scores them
 * with (src/search/answer-types.ts): plain functions, no database.
 */
import { describe, expect, it } from 'vitest';
import { hasAnswerOfType, questionFocus, questionTopics, questionType } from '../../src/search/answer-types.ts';
import { answerUnits } from '../../src/search/answer-units.ts';
import { rankUnits } from '../../src/search/extractive.ts';

const MAIL = `Filename: CasaDoRio-confirmation-CDR-48213.pdf
Source Path: email_local/abc/CasaDoRio.pdf
Modified: 2026-11-27T04:42:08Z

OCR:
Dear Mr. Silva,
Thank you for booking with Casa do Rio. We look forward to
welcoming you on the 12th of December. Breakfast is served from 8 a.m. until 10.
Confirmation number: CDR-48213
Check-in:   12 Dec 2026    Check-out:  15 Dec 2026

On Tue, 3 Mar 2026 at 09:12, Ana <ana@example.pt> wrote:
> The ferry leaves at 9:15 from Cais do Sodré. Bring the
> tickets, please.
"R" == Robert Harley <harley@example.ch> writes:
Kind regards,
-- 
Ana Silva
+351 912 345 678`;

describe('answerUnits', () => {
  const units = answerUnits(MAIL);
  const texts = units.map((u) => u.text);

  it('sentences of prose (wrapped lines joined, "Mr." and "a.m." not taken for ends), lines of key-value text', () => {
    expect(texts).toEqual([
      'Thank you for booking with Casa do Rio.',
      'We look forward to welcoming you on the 12th of December.',
      'Breakfast is served from 8 a.m. until 10.',
      'Confirmation number: CDR-48213',
      'Check-in: 12 Dec 2026 Check-out: 15 Dec 2026',
      'The ferry leaves at 9:15 from Cais do Sodré.',
      'Bring the tickets, please.',
      'Ana Silva',
      '+351 912 345 678',
    ]);
  });

  it('never a header, a greeting, a reply introduction, a closing or a signature delimiter', () => {
    expect(texts.join('\n')).not.toMatch(/Filename|Source Path|Modified|OCR|Dear|wrote|writes|Kind regards|^--$/m);
  });

  it('each span holds the unit in the passage; quoted lines are marked and lose their markers', () => {
    for (const u of units) expect(MAIL.slice(u.start, u.end).replace(/\s*\n[\s>]*/g, ' ').replace(/\s+/g, ' ')).toBe(u.text);
    expect(units.filter((u) => u.quoted).map((u) => u.text)).toEqual(['The ferry leaves at 9:15 from Cais do Sodré.', 'Bring the tickets, please.']);
    expect(MAIL.slice(units[6].start, units[6].end)).toBe('Bring the\n> tickets, please.');
  });
});

describe('what a question asks for', () => {
  it('the kind of answer', () => {
    expect(questionType('When do I check in at Casa do Rio?')).toBe('date');
    expect(questionType('How much is the Zenith Heating invoice?')).toBe('amount');
    expect(questionType('Who repaired the boiler?')).toBe('person');
    expect(questionType('Where is the hotel?')).toBe('place');
    expect(questionType('What is the Casa do Rio confirmation number?')).toBe('code');
    expect(questionType('How many nights did I book?')).toBe('number');
    // The thing asked for decides, not a code word after it (issue 46): the excess is an amount.
    expect(questionType('What is the excess on the insurance policy?')).toBe('amount');
    expect(questionType('What is the policy number?')).toBe('code');
    expect(questionType('Which seat do I have on the flight?')).toBe('code');
    expect(questionType('Booking reference?')).toBe('code');
    expect(questionType('What is the weather like at the airport gate?')).toBeNull();
    expect(questionType('Is the budget on track?')).toBeNull();
    expect(questionType('What should I bring to the party?')).toBeNull();
  });

  it('the focus of a what/which question and the names it is about', () => {
    expect(questionFocus('What reference do I need for my flight to Faro?')).toEqual(['reference']);
    expect(questionFocus('What is the Casa do Rio confirmation number?')).toEqual(['confirmation', 'number']);
    expect(questionFocus("What's the wifi password Ana sent?")).toEqual(['wifi', 'password']);
    expect(questionFocus('What did I pay Chen Auto Service?')).toEqual([]);
    expect(questionTopics('What is the Casa do Rio confirmation number?')).toEqual(['casa', 'rio']);
    expect(questionTopics('When is the next service due for the Mazda 3?')).toEqual(['mazda', '3']);
    expect(questionTopics('confirmation number casa do rio')).toEqual([]);
  });

  it('an answer of the kind, not one the question already names, and not the addressee', () => {
    const q = 'who confirmed my reservation at casa do rio?';
    expect(hasAnswerOfType('Marta Duarte', 'person', q)).toBe(true);
    expect(hasAnswerOfType('Reservations, Casa do Rio', 'person', q)).toBe(false);
    expect(hasAnswerOfType('We confirm your reservation in Porto.', 'person', q)).toBe(false);
    expect(hasAnswerOfType('Address: Rua das Flores 27, Porto', 'person', q)).toBe(false);
    expect(hasAnswerOfType('Guest: Alex Morgan', 'person', q, new Set(), new Set(['alex morgan']))).toBe(false);
    expect(hasAnswerOfType('Total due: €147.60', 'amount', 'how much is it?')).toBe(true);
    expect(hasAnswerOfType('Check-in: 12 December 2026', 'date', 'when do i check in?')).toBe(true);
    expect(hasAnswerOfType('the followup of Sept. 19th', 'code', 'what is my library card number?')).toBe(false);
    expect(hasAnswerOfType('Confirmation number: CDR-48213', 'code', 'what is the confirmation number?')).toBe(true);
  });
});

describe('rankUnits: the value asked for, in the sentence after the one naming the subject', () => {
  it('answers "What is the excess on the insurance policy?" with the excess, not the policy line', () => {
    const passage = {
      document_id: 'd1',
      chunk_id: 'c1',
      score: 1,
      rank: 0,
      title: 'Home insurance',
      text: 'Insurance policy HX-2231. The excess is 250 GBP per claim. Renewal is due in March.',
      people: [],
      addressees: [],
    };
    const terms = ['excess', 'insur', 'polici'].map((term) => ({ term, idf: 2 }));
    const ranked = rankUnits('What is the excess on the insurance policy?', terms, [passage]);
    expect(ranked.type).toBe('amount');
    expect(ranked.candidates[0].unit.text).toMatch(/The excess is 250 GBP per claim/);
  });
});
