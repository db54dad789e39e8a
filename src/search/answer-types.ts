/**
 * What kind of answer a question asks for (when → a date or time, how much → an amount, who → a
 * person, where → a place, which number/code → a code, how many → a number) and whether a piece of
 * text holds one that the question itself does not already say. Surface patterns only, in English;
 * a question of no recognised kind is answered by word overlap alone.
 */

export type AnswerType = 'date' | 'amount' | 'number' | 'person' | 'place' | 'code';

const CODE_WORDS =
  'number|no\\.?|code|reference|ref|id|pnr|confirmation|booking|reservation|order|tracking|invoice|ticket|seat|gate|platform|flight|account|policy|claim|pin|iban|serial|licen[cs]e|plate|passport|membership|voucher|receipt';

const QUESTION_TYPES: [AnswerType, RegExp][] = [
  ['date', /\b(when|what time|(what|which) (day|date|year|month|time|weekday)|until when|since when|how soon|due date|deadline|expir\w*)\b/i],
  ['person', /\b(who|whom|whose|which (person|doctor|agent|contact|host|driver|guide|teacher|lawyer|plumber|technician)|name of the (person|doctor|contact|host|agent))\b/i],
  ['place', /\b(where|which (city|town|place|address|hotel|station|airport|terminal|restaurant|country|street|venue|port|pier)|what (city|town|place|address|hotel|station|airport|terminal|restaurant|country|street|venue|port|pier)|address|venue|location)\b/i],
  ['amount', /\b(how much|cost|costs|price|priced|fee|fees|paid|pay|total|amount|charge|charged|refund|rent|salary|balance|owe|deposit|budget|spent|spend|excess|deductible|premium|fare)\b/i],
  ['number', /\b(how many|how old|how long|how far|how tall|how big|how large|what (percentage|percent|share|size|age))\b/i],
];

const CODE_WORD = new RegExp(`^(${CODE_WORDS})$`, 'i');
const WH = /\b(which|what)\b/i;
/** Words that end the noun phrase a what-question asks for: "the excess *on* the insurance policy". */
const ASKED_FOR_END = /^(on|of|for|in|at|from|to|with|by|about|under|per|and|or|that|which|is|are|was|were)$/i;

/**
 * A question asking for a code: what or which, then the thing asked for naming one ("What is the Casa do Rio
 * confirmation number?"), or no question word and a code word before the question mark ("Booking reference?").
 * A code word after the thing asked for only says where it is: "What is the excess on the insurance *policy*?"
 * asks for an amount, and the policy's number is not its answer.
 */
function asksForCode(question: string): boolean {
  const wh = WH.exec(question);
  if (!wh) return new RegExp(`\\b(${CODE_WORDS})\\b.*\\?\\s*$`, 'i').test(question);
  const words = question.slice(wh.index + wh[0].length).split(/[^\p{L}\p{N}.'-]+/u).filter(Boolean);
  let k = 0;
  // "what is the", "which is my": the verb and the article before the thing asked for.
  while (k < words.length && /^(is|are|was|were|'s|the|my|our|your|his|her|their|a|an)$/i.test(words[k])) k++;
  for (; k < words.length && !ASKED_FOR_END.test(words[k]); k++) if (CODE_WORD.test(words[k].replace(/\.$/, ''))) return true;
  return false;
}

/** A question that asks yes or no ("Is the budget on track?") asks for no particular kind of answer. */
const YES_NO = /^\s*(is|are|was|were|am|do|does|did|can|could|will|would|has|have|had|should|shall|may|might|must|isn't|aren't|didn't|doesn't)\b/i;

export function questionType(question: string): AnswerType | null {
  if (YES_NO.test(question)) return null;
  for (const [type, re] of QUESTION_TYPES) if (re.test(question)) return type;
  return asksForCode(question) ? 'code' : null;
}

const MONTH =
  'jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?';
const WEEKDAY = 'mon(?:day)?|tue(?:s(?:day)?)?|wed(?:nesday)?|thu(?:rs(?:day)?)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?';
const DATE_PATTERNS = [
  new RegExp(`\\b(${MONTH})\\.?\\s+\\d{1,2}(st|nd|rd|th)?\\b`, 'gi'),
  new RegExp(`\\b\\d{1,2}(st|nd|rd|th)?\\s+(of\\s+)?(${MONTH})\\b\\.?(\\s+\\d{4})?`, 'gi'),
  new RegExp(`\\b(${MONTH})\\s+\\d{4}\\b`, 'gi'),
  new RegExp(`\\b(${WEEKDAY})\\b`, 'gi'),
  /\b\d{4}-\d{2}-\d{2}\b/g,
  /\b\d{1,2}[./]\d{1,2}[./]\d{2,4}\b/g,
  /\b\d{1,2}:\d{2}\s*(am|pm|a\.m\.|p\.m\.|h)?/gi,
  /\b\d{1,2}\s*(am|pm|a\.m\.|p\.m\.)(?=\W|$)/gi,
  /\b(today|tomorrow|tonight|yesterday|noon|midnight|next (week|month|year)|last (week|month|year))\b/gi,
  /\b(1[0-9]{3}|20[0-9]{2})s?\b/g,
  /\b\d{1,2}(st|nd|rd|th) century\b/gi,
];

const CURRENCY = '[€$£¥₹₩₽]|R\\$|\\b(?:eur|usd|gbp|chf|brl|cad|aud|jpy|sek|nok|dkk|pln|czk)\\b';
const AMOUNT_PATTERNS = [
  new RegExp(`(${CURRENCY})\\s?\\d[\\d.,]*`, 'gi'),
  new RegExp(`\\d[\\d.,]*\\s?(${CURRENCY}|euros?\\b|dollars?\\b|pounds?\\b|cents?\\b|reais\\b|francs?\\b)`, 'gi'),
  /\b\d{1,3}(?:[.,]\d{3})*[.,]\d{2}\b/g,
];

const NUMBER_WORDS =
  'one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|twenty|thirty|forty|fifty|hundred|thousand|million|billion|dozen|half|several|dozens';
const NUMBER_PATTERNS = [/\d+(?:[.,]\d+)?%?/g, new RegExp(`\\b(${NUMBER_WORDS})\\b`, 'gi')];

const CODE_PATTERNS = [
  // Letters and digits in one token (CDR-48213, TP1234, 4B; not an ordinal like 19th), or a long digit run, or #123.
  /\b(?!\d+(?:st|nd|rd|th)\b)(?=[\p{L}\d/-]*\d)(?=[\p{L}\d/-]*\p{L})[\p{L}\d][\p{L}\d/-]*[\p{L}\d]\b/gu,
  /\b\d{4,}\b/g,
  /#\s?\d+/g,
  /\+?\d[\d ()-]{6,}\d/g,
  /\b[\w.+-]+@[\w-]+\.[\w.-]+\b/g,
];

const PLACE_PATTERNS = [
  /\b(in|at|from|to|near|via|on)\s+(the\s+)?\p{Lu}[\p{L}'’-]+/gu,
  /\b(rua|avenida|av\.|calle|via|platz|straße|strasse|street|st\.|road|rd\.|avenue|ave\.|lane|boulevard|square|terminal|airport|station|pier|port|harbou?r|quay|gate|hotel|hostel|restaurant|museum|church|park|bridge|building|floor|room|office|clinic|hospital)\b/giu,
];

/** Capitalised words that are not names. */
const NOT_NAMES = new Set(
  (
    'I The A An This That These Those It We You He She They My Our Your His Her Their Its Hi Hello Dear Thanks Thank Best Regards Kind ' +
    'Please Yes No Ok OK Re Fwd Fw Subject From To Cc Date Sent Total Monday Tuesday Wednesday Thursday Friday Saturday Sunday ' +
    'January February March April May June July August September October November December Mr Mrs Ms Dr Prof Sir Madam ' +
    'If When Where What Which Who Why How And But Or So For In On At By With As Of Also Then There Here Note Confirmation Booking'
  ).split(' '),
);
/** Words that make a capitalised phrase a place or an organisation rather than a person. */
const PLACE_WORDS = new Set(
  (
    'rua avenida av calle via rue strasse straße street st road rd avenue ave lane square place plaza praça largo travessa ' +
    'hotel casa pousada villa quinta inn lodge hostel residencia palacio albergue estalagem maison resort apartments ' +
    'clinic centre center medical health hospital dental practice pharmacy bank airport station terminal port pier harbour ' +
    'restaurant cafe café bar pizzeria taberna park hall museum church school university college library market mall ' +
    'service services auto garage ltd inc co company group plumbing electric gardens heating insurance'
  ).split(' '),
);
const NAME = /\b\p{Lu}[\p{Ll}'’-]+(?:\s+(?:(?:de|da|do|dos|das|van|von|der|den|la|le|di|du|del|bin|al)\s+)?\p{Lu}[\p{Ll}'’-]+)*/gu;
const TITLED = /\b(Mr|Mrs|Ms|Dr|Prof)\.?\s+\p{Lu}/gu;

function anyOutside(text: string, patterns: RegExp[], question: string): boolean {
  for (const re of patterns) {
    re.lastIndex = 0;
    for (const m of text.matchAll(re)) {
      const v = m[0].trim().toLowerCase();
      if (v && !question.includes(v)) return true;
    }
  }
  return false;
}

function hasName(text: string, question: string, names: ReadonlySet<string>, addressees: ReadonlySet<string>): boolean {
  const lower = text.toLowerCase();
  for (const n of names) if (n.length > 2 && lower.includes(n) && !question.includes(n)) return true;
  TITLED.lastIndex = 0;
  if (TITLED.test(text)) return true;
  for (const m of text.matchAll(NAME)) {
    const words = m[0].split(/\s+/).filter((w) => !NOT_NAMES.has(w));
    if (words.length === 0) continue;
    const name = words.join(' ').toLowerCase();
    // The person the message was written to ("Guest: Alex Morgan") is rarely who a question asks about.
    if (question.includes(name) || addressees.has(name)) continue;
    // A person has a first and a last name; one capitalised word is as likely a city or a sentence start,
    // and "Rua das Flores" or "Casa do Rio" are places.
    if (words.length < 2 || words.some((w) => PLACE_WORDS.has(w.toLowerCase()))) continue;
    return true;
  }
  return false;
}

/**
 * Whether `text` holds an answer of the type that the question (lower-cased) does not already name.
 * `names`: lower-cased names of people known to the documents (a who-question's strongest cue);
 * `addressees`: those the document was written to, whose names answer no who-question.
 */
export function hasAnswerOfType(
  text: string,
  type: AnswerType,
  questionLower: string,
  names: ReadonlySet<string> = new Set(),
  addressees: ReadonlySet<string> = new Set(),
): boolean {
  switch (type) {
    case 'date':
      return anyOutside(text, DATE_PATTERNS, questionLower);
    case 'amount':
      return anyOutside(text, AMOUNT_PATTERNS, questionLower);
    case 'number':
      return anyOutside(text, NUMBER_PATTERNS, questionLower);
    case 'code':
      return anyOutside(text, CODE_PATTERNS, questionLower);
    case 'place':
      return anyOutside(text, PLACE_PATTERNS, questionLower);
    case 'person':
      return hasName(text, questionLower, names, addressees);
  }
}

/** Between a question word and the thing asked for: the copula, articles, possessives. */
const FILLER = new Set("is are was were 's the a an my our your his her their this that these those".split(' '));
const AUXILIARY = new Set('do does did should shall can could will would must may might'.split(' '));
/** Prepositions and verbs end the noun phrase naming what is asked for ("…reference do I need", "…part was replaced"). */
const PHRASE_END = new Set('for to at in on from with by about of into during do does did is are was were will would can could should have has had need get got'.split(' '));

/**
 * The words naming what a what/which question asks for, at most the last two of its noun phrase
 * (the head): "What reference do I need for my flight" → reference; "What is the Casa do Rio
 * confirmation number?" → confirmation, number; "What's the wifi password Ana sent?" → wifi,
 * password. Empty when the question names nothing ("What did I pay?", "What should I bring?").
 */
export function questionFocus(question: string): string[] {
  const words = question.replace(/['’]s\b/g, " 's").match(/[\p{L}\p{N}'-]+/gu) ?? [];
  const at = words.findIndex((w) => /^(what|which)$/i.test(w));
  if (at < 0 || AUXILIARY.has(words[at + 1]?.toLowerCase())) return [];
  let i = at + 1;
  while (i < words.length && FILLER.has(words[i].toLowerCase())) i++;
  const phrase: string[] = [];
  const capital = (w: string | undefined) => w !== undefined && /^\p{Lu}/u.test(w);
  let inName = false;
  for (; i < words.length; i++) {
    const w = words[i];
    // A name after the phrase began starts a clause ("password Ana sent"); inside one it is part of it ("Casa do Rio").
    if (phrase.length > 0 && capital(w) && !inName) break;
    const connector: boolean = inName && !capital(w) && capital(words[i + 1]);
    if (phrase.length > 0 && PHRASE_END.has(w.toLowerCase()) && !connector) break;
    inName = capital(w) || connector;
    phrase.push(w.toLowerCase());
  }
  return phrase.slice(-2);
}

/** Question words that are capitalised without being names. */
const NOT_TOPIC = new Set(
  'what when where who whom whose which why how is are was were do does did can could should will would shall may might must the a an my our i we please tell show find give list any'.split(' '),
);

/**
 * The names (and numbers) a question is about — capitalised words and words with digits: "the Casa do Rio
 * confirmation number" → casa, rio; "the flight to Faro" → faro; "the Mazda 3" → mazda, 3. A passage that
 * lacks one of them is about something else. Lower-cased; empty for a question typed in lower case.
 */
export function questionTopics(question: string): string[] {
  const out: string[] = [];
  for (const m of question.matchAll(/[\p{L}\p{N}]+/gu)) {
    const w = m[0];
    const lower = w.toLowerCase();
    if (NOT_TOPIC.has(lower)) continue;
    if (/\p{N}/u.test(w) || /^\p{Lu}/u.test(w)) out.push(lower);
  }
  return out;
}
