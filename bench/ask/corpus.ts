/**
 * The generated half of the ask benchmark: a person's bookings, tickets, invoices, appointments,
 * invitations (with replies quoting them), service receipts and chat notes, written the way such
 * mail is (greetings, key-value blocks, footers, signatures), and questions about them whose
 * answer is a string in one document: a code, a date or time, an amount, a person, a place, or a
 * plain fact. Some confirmations are also uploaded as files, twice (the same file in two folders);
 * some questions ask about things no document mentions (the answer must be "nothing found").
 *
 * Seeded and written by this project (same license as the repository). Every question kind has
 * several phrasings; the dev slice and the held-out slice use disjoint phrasings and different
 * documents, so tuning on dev cannot learn the held-out wording.
 */
import { rng } from '../lib/generate.ts';

export type Split = 'dev' | 'test';

/** A document to ingest: JSON through POST /v1/ingest:batch, or a text file through POST /v1/ingest/file. */
export type BenchDoc =
  | { key: string; via: 'json'; body: Record<string, unknown> }
  | { key: string; via: 'file'; path: string; filename: string; text: string };

export interface BenchQuestion {
  id: string;
  split: Split;
  question: string;
  /** What kind of question (template family), for the per-kind table. */
  kind: string;
  /** Answer strings, any of which counts (empty: unanswerable). */
  gold: string[];
  /** Keys of the documents that state the answer (copies of one file count alike; a reply quoting it does not). */
  goldDocs: string[];
}

const ME = { name: 'Alex Morgan', email: 'alex.morgan@example.org' };

const FIRST = 'Ana Bruno Carla Diego Elena Filipe Greta Hamid Ines Jonas Kofi Lena Marta Nuno Olga Pedro Rita Sami Tomas Uma Vera Wen Xavier Yara Zoe Ivo Lucia Mateo Nadia Oscar Paula Rui Sofia Teo Amara Bianca Caio Dalia Emil'.split(' ');
const LAST = 'Silva Costa Ferreira Novak Rossi Weber Haddad Chen Berg Okafor Duarte Lindqvist Moreau Kowalski Horvat Jensen Alves Romano Schmidt Nakamura Petrov Quinn Ibarra Santos Almeida Varga Dubois Keller Marino Sousa'.split(' ');
const HOTEL_A = 'Casa Hotel Pousada Villa Residencia Quinta Inn Lodge Palacio Albergue Estalagem Maison'.split(' ');
const HOTEL_B = 'do Rio|Aurora|Bellavista|Miramar|Solar|Verde|Atlantico|Montanha|Oliveira|Estrela|Marisol|Azul|das Flores|Palmeira|Rosa|Sereno|Alecrim|Laranjal|Farol|Dunas|Cedro|Luar|Vento|Sol Nascente'.split('|');
const CITIES = 'Lisbon Porto Faro Madrid Seville Valencia Rome Florence Naples Paris Lyon Nice Berlin Munich Hamburg Vienna Prague Budapest Athens Dublin Edinburgh Amsterdam Copenhagen Oslo Stockholm Zurich Geneva Krakow Split Ljubljana Bologna Granada Bordeaux Salzburg Bruges Tallinn Riga Vilnius Palermo Marseille'.split(' ');
const OTHER_CITIES = 'Reykjavik Tromso Marrakesh Istanbul Sarajevo Belgrade Sofia Bucharest Kyiv Tbilisi Yerevan Baku Helsinki Gdansk Brno Graz Turin Malaga'.split(' ');
const ISLANDS = 'Berlenga Culatra Armona Ischia Capri Hydra Aegina Mljet Hvar Brac Elba Procida Gozo Comino Formentera Texel Ameland Sylt Bornholm Inishmore Vis Korcula Paros Naxos'.split(' ');
const PIERS = ['Cais do Sodre', 'Pier 3', 'the old harbour', 'Terminal Maritimo', 'Molo Beverello', 'Porto Antico', 'the ferry terminal', 'Quay 7', 'Marina Nord', 'the fishing port'];
const COMPANIES = 'Northwind Plumbing|Bluebird Electric|Greenleaf Gardens|Atlas Movers|Clearview Windows|Summit Accounting|Harbor Insurance|Oakridge Roofing|Pinecrest Vets|Riverside Physio|Silverline Internet|Sunrise Solar|Tidewater Boats|Urban Bikes|Violet Cleaning|Westend Tailors|Yellowstone Couriers|Zenith Heating|Keystone Locksmiths|Maple Carpentry|Nimbus IT|Orchard Florists|Quarry Stoneworks|Lighthouse Printing|Copperfield Painters|Driftwood Furniture'.split('|');
const SERVICES = ['boiler service', 'window cleaning', 'garden maintenance', 'annual tax return', 'roof repair', 'broadband, three months', 'carpet cleaning', 'lock replacement', 'kitchen shelves', 'laptop repair', 'wedding flowers', 'removal van, half day', 'physiotherapy, five sessions', 'bike repair', 'suit alterations'];
const CLINIC_A = 'Riverside|Harbour|Central|Oakwood|Saint Luke|Parkview|Lakeside|Hillcrest|Northgate|Southbank|Greenway|Westfield'.split('|');
const CLINIC_B = ['Clinic', 'Medical Centre', 'Dental Practice', 'Eye Clinic', 'Health Centre'];
const SPECIALTY = ['dentist', 'eye exam', 'dermatologist', 'physiotherapy', 'check-up', 'cardiologist', 'vaccination'];
const EVENTS = ['birthday party', 'housewarming', 'farewell dinner', 'book club', 'summer barbecue', 'game night', 'engagement party', 'wine tasting', 'graduation party', 'movie night', 'picnic', 'quiz night'];
const VENUES = ['the Blue Door bar', 'Parque da Cidade', 'the rooftop at Rua Nova 12', 'Cafe Lumiere', 'the community hall on Elm Street', 'Pizzeria Napoli', 'the boathouse by the lake', 'Jardim da Estrela', 'the Old Mill', 'Taberna Sol'];
const ITEMS = ['a bottle of wine', 'a salad', 'folding chairs', 'dessert', 'a board game', 'sparkling water', 'ice', 'a blanket', 'bread', 'your guitar'];
const CARS = ['Volvo V60', 'VW Golf', 'Toyota Corolla', 'Renault Clio', 'Honda Civic', 'Ford Fiesta', 'Skoda Octavia', 'Fiat Panda', 'Mazda 3', 'Peugeot 208', 'Kia Ceed', 'Opel Astra'];
const PARTS = ['timing belt', 'brake pads', 'clutch', 'alternator', 'water pump', 'front tyres', 'battery', 'windscreen wipers', 'exhaust', 'air filter'];
const ROOMS = ['Double room, garden view', 'Twin room', 'Junior suite', 'Superior double, sea view', 'Family room', 'Single room'];
const MONTHS = 'January February March April May June July August September October November December'.split(' ');
const WEEKDAYS = 'Sunday Monday Tuesday Wednesday Thursday Friday Saturday'.split(' ');

const FOOTERS = [
  'This email and any attachments are confidential and intended solely for the addressee. If you received it in error, please delete it.',
  'Follow us on Instagram and Facebook for news and special offers. To unsubscribe from marketing emails, update your preferences.',
  'Please consider the environment before printing this email.',
  'You are receiving this message because you made a booking with us. Our privacy policy explains how we use your data.',
];
const GREETINGS = ['Dear', 'Hello', 'Hi', 'Good afternoon'];

/** Dev phrasings at even places, held-out phrasings at odd places. */
function phrasing(r: () => number, list: string[], split: Split): string {
  const mine = list.filter((_, i) => (i % 2 === 0) === (split === 'dev'));
  return mine[Math.floor(r() * mine.length)];
}

export function generateAskCorpus(seed = 32, perKind = 12): { docs: BenchDoc[]; questions: BenchQuestion[] } {
  const r = rng(seed);
  const pick = <T>(a: readonly T[]): T => a[Math.floor(r() * a.length)];
  const used = new Set<string>();
  /** A value not drawn before (names of hotels, cities, companies must identify one document). */
  const fresh = (make: () => string): string => {
    for (let i = 0; i < 500; i++) {
      const v = make();
      if (!used.has(v)) {
        used.add(v);
        return v;
      }
    }
    throw new Error('generator ran out of distinct values');
  };
  const person = () => fresh(() => `${pick(FIRST)} ${pick(LAST)}`);
  const digits = (n: number) => Array.from({ length: n }, () => Math.floor(r() * 10)).join('');
  const letters = (n: number) => Array.from({ length: n }, () => 'ABCDEFGHJKLMNPQRSTUVWXYZ'[Math.floor(r() * 24)]).join('');
  const when = () => new Date(Date.UTC(2026, Math.floor(r() * 12), 1 + Math.floor(r() * 28), 8 + Math.floor(r() * 11), pick([0, 15, 30, 45])));
  const dateText = (d: Date): string => {
    const day = d.getUTCDate();
    const m = MONTHS[d.getUTCMonth()];
    switch (Math.floor(r() * 4)) {
      case 0:
        return `${day} ${m} ${d.getUTCFullYear()}`;
      case 1:
        return `${m.slice(0, 3)} ${day}, ${d.getUTCFullYear()}`;
      case 2:
        return d.toISOString().slice(0, 10);
      default:
        return `${WEEKDAYS[d.getUTCDay()]} ${day} ${m}`;
    }
  };
  const timeText = (d: Date) => `${String(d.getUTCHours()).padStart(2, '0')}:${String(d.getUTCMinutes()).padStart(2, '0')}`;
  const money = (min: number, max: number): string => {
    const v = min + r() * (max - min);
    switch (Math.floor(r() * 4)) {
      case 0:
        return `€${v.toFixed(2)}`;
      case 1:
        return `${v.toFixed(2).replace('.', ',')} EUR`;
      case 2:
        return `$${v.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
      default:
        return `£${Math.round(v)}`;
    }
  };
  const sentAt = () => when().toISOString();

  const docs: BenchDoc[] = [];
  const questions: BenchQuestion[] = [];
  let qn = 0;
  const ask = (split: Split, kind: string, list: string[], vars: Record<string, string>, gold: string[], goldDocs: string[]) => {
    const q = phrasing(r, list, split).replace(/\{(\w+)\}/g, (_m, k: string) => {
      if (!(k in vars)) throw new Error(`no ${k} for ${kind}`);
      return vars[k];
    });
    questions.push({ id: `q${++qn}`, split, question: q, kind, gold, goldDocs });
  };
  const email = (key: string, from: { name: string; email: string }, subject: string, text: string, extra: Record<string, unknown> = {}): BenchDoc => ({
    key,
    via: 'json',
    body: {
      source_type: 'email',
      source_id: key,
      title: subject,
      content: { mime_type: 'text/plain', data: text },
      content_timestamp: sentAt(),
      people: [
        { identifier: from.email, identifier_type: 'email', role: 'sender', display_name: from.name },
        { identifier: ME.email, identifier_type: 'email', role: 'recipient', display_name: ME.name },
      ],
      ...extra,
    },
  });
  const addr = (name: string) => `${name.toLowerCase().replace(/[^a-z]+/g, '.').replace(/^\.|\.$/g, '')}@example.com`;

  for (let i = 0; i < perKind; i++) {
    const split: Split = i % 2 === 0 ? 'dev' : 'test';

    // 1. Hotel booking: prose greeting, a key-value block, footer; every third also uploaded twice as a file.
    {
      const hotel = fresh(() => `${pick(HOTEL_A)} ${pick(HOTEL_B)}`);
      const city = fresh(() => pick(CITIES));
      const code = `${hotel.replace(/[^A-Z]/g, '').slice(0, 3).padEnd(3, 'X')}-${digits(5)}`;
      const checkIn = dateText(when());
      const checkOut = dateText(when());
      const total = money(180, 1400);
      const agent = person();
      const street = `${pick(['Rua', 'Avenida', 'Calle', 'Via', 'Rue'])} ${pick(LAST)} ${1 + Math.floor(r() * 200)}`;
      const key = `hotel-${i}`;
      const text = [
        `${pick(GREETINGS)} ${ME.name},`,
        '',
        `Thank you for choosing ${hotel}. We are delighted to confirm your reservation in ${city} and look forward to welcoming you.`,
        '',
        `Confirmation number: ${code}`,
        `Guest: ${ME.name}`,
        `Check-in: ${checkIn} (from 15:00)`,
        `Check-out: ${checkOut} (until 11:00)`,
        `Room: ${pick(ROOMS)}`,
        `Total price: ${total}, taxes included`,
        `Address: ${street}, ${city}`,
        '',
        'Breakfast is served daily in the garden restaurant. Free cancellation is possible up to 48 hours before arrival.',
        '',
        'Kind regards,',
        agent,
        `Reservations, ${hotel}`,
        '',
        pick(FOOTERS),
      ].join('\n');
      docs.push(email(key, { name: `${hotel} Reservations`, email: addr(hotel) }, `Your reservation at ${hotel} is confirmed`, text));
      const goldDocs = [key];
      if (i % 3 === 0) {
        for (const folder of ['Downloads', 'Documents/Travel']) {
          const fk = `${key}-file-${folder}`;
          docs.push({ key: fk, via: 'file', path: `/home/alex/${folder}/${hotel.replace(/\W+/g, '')}-confirmation-${code}.txt`, filename: `${hotel.replace(/\W+/g, '')}-confirmation-${code}.txt`, text });
          goldDocs.push(fk);
        }
      }
      const v = { hotel, city };
      ask(split, 'booking code', ['What is the {hotel} confirmation number?', 'Which confirmation number did {hotel} give me?', 'confirmation number for my stay at {hotel}', 'What is my reservation number at {hotel} in {city}?', 'What booking code do I need for {hotel}?', 'What is the reference of my {hotel} booking?'], v, [code], goldDocs);
      ask(split, 'check-in date', ['When do I check in at {hotel}?', 'What day is check-in at {hotel}?', 'When is my check-in in {city}?', 'Which date do I arrive at {hotel}?', 'check-in date {hotel}', 'When does my stay at {hotel} start?'], v, [checkIn], goldDocs);
      ask(split, 'hotel price', ['How much does the stay at {hotel} cost?', 'What is the total price at {hotel}?', 'How much will I pay for {hotel}?', 'What does the {city} hotel cost in total?', 'total price {hotel} booking', 'How expensive is my {hotel} reservation?'], v, [total], goldDocs);
      ask(split, 'hotel address', ['Where is {hotel}?', 'What is the address of {hotel}?', 'Where is the hotel I booked in {city}?', 'On which street is {hotel}?', 'address of {hotel} in {city}', 'Where exactly is {hotel} located?'], v, [street], goldDocs);
      ask(split, 'hotel agent', ['Who confirmed my reservation at {hotel}?', 'Who signed the {hotel} confirmation?', 'Who handled my booking at {hotel}?', 'Which person at {hotel} wrote to me?', 'Who is my contact at {hotel}?', 'name of the person who confirmed {hotel}'], v, [agent], [key, ...goldDocs.slice(1)]);
    }

    // 2. Flight e-ticket: key-value lines.
    {
      const from = fresh(() => pick(CITIES));
      const to = fresh(() => pick(CITIES));
      const pnr = letters(6);
      const flight = `${pick(['TP', 'FR', 'LH', 'AF', 'IB', 'U2', 'KL', 'VY'])} ${digits(4)}`;
      const dep = when();
      const date = dateText(dep);
      const time = timeText(dep);
      const seat = `${1 + Math.floor(r() * 30)}${pick(['A', 'B', 'C', 'D', 'E', 'F'])}`;
      const fare = money(40, 600);
      const key = `flight-${i}`;
      const text = [
        `${pick(GREETINGS)} ${ME.name.split(' ')[0]},`,
        '',
        `Your e-ticket for your trip to ${to} is attached. Please check the details below and keep this email for your journey.`,
        '',
        `Booking reference: ${pnr}`,
        `Passenger: ${ME.name}`,
        `Flight: ${flight}, ${from} to ${to}`,
        `Departure: ${date}, ${time}`,
        `Seat: ${seat}`,
        `Fare paid: ${fare}`,
        '',
        'Online check-in opens 24 hours before departure. Hand luggage: one bag of up to 10 kg.',
        '',
        pick(FOOTERS),
      ].join('\n');
      docs.push(email(key, { name: 'Booking Team', email: `noreply@${pick(['flyaway', 'skyline', 'aerolink', 'jetgo'])}.example.com` }, `E-ticket: ${from} - ${to}`, text));
      const v = { to, from };
      ask(split, 'flight reference', ['What is my booking reference for the flight to {to}?', 'Which booking reference is the {to} flight?', 'booking reference flight {from} to {to}', 'What reference do I need for my flight to {to}?'], v, [pnr], [key]);
      ask(split, 'flight time', ['When does my flight to {to} leave?', 'What time is my flight to {to}?', 'When do I fly to {to}?', 'departure time of the flight to {to}'], v, [time, date], [key]);
      ask(split, 'flight seat', ['Which seat do I have on the flight to {to}?', 'What is my seat number to {to}?', 'seat on the {from} to {to} flight', 'What seat did I get on the flight to {to}?'], v, [seat], [key]);
      ask(split, 'flight fare', ['How much did the flight to {to} cost?', 'What fare did I pay for the {to} flight?', 'How much was my ticket to {to}?', 'price of the flight from {from} to {to}'], v, [fare], [key]);
    }

    // 3. Ferry: prose only, in a friend's message, with a quoted reply from me.
    {
      const island = fresh(() => pick(ISLANDS));
      const pier = pick(PIERS);
      const dep = when();
      const time = timeText(dep);
      const day = WEEKDAYS[dep.getUTCDay()];
      const friend = person();
      const friendMail = { name: friend, email: addr(friend) };
      const price = money(8, 60);
      const key = `ferry-${i}`;
      const original = [
        `Hi ${ME.name.split(' ')[0]}!`,
        '',
        `Good news, I got the tickets for ${island}. The ferry leaves from ${pier} on ${day} at ${time}, so let's meet there twenty minutes before.`,
        `The tickets were ${price} each, you can pay me back whenever. Bring sunscreen, there is almost no shade on the island.`,
        '',
        `Cheers,`,
        friend.split(' ')[0],
      ].join('\n');
      docs.push(email(key, friendMail, `Ferry to ${island}`, original, { thread: { external_id: `ferry-thread-${i}` } }));
      const reply = [
        `Perfect, thanks for organising! I will bring snacks as well.`,
        '',
        `On ${dateText(dep)}, ${friend} <${friendMail.email}> wrote:`,
        ...original.split('\n').map((l) => `> ${l}`),
      ].join('\n');
      docs.push(email(`${key}-reply`, { name: ME.name, email: ME.email }, `Re: Ferry to ${island}`, reply, { thread: { external_id: `ferry-thread-${i}` } }));
      const v = { island, friend: friend.split(' ')[0] };
      ask(split, 'ferry time', ['When does the ferry to {island} leave?', 'What time is the boat to {island}?', 'At what time do we take the ferry to {island}?', 'ferry departure time {island}'], v, [time], [key]);
      ask(split, 'ferry pier', ['Where does the ferry to {island} leave from?', 'From which pier does the {island} ferry depart?', 'Where do we meet for the boat to {island}?', 'departure point of the {island} ferry'], v, [pier], [key]);
      ask(split, 'ferry price', ['How much were the ferry tickets to {island}?', 'What did the {island} tickets cost?', 'How much do I owe {friend} for the ferry?', 'price of the boat tickets to {island}'], v, [price], [key]);
    }

    // 4. Invoice: a text file (uploaded through the file route), table rows and totals.
    {
      const company = fresh(() => pick(COMPANIES));
      const inv = `INV-2026-${digits(4)}`;
      const service = pick(SERVICES);
      const totalValue = 60 + r() * 900;
      const total = `€${totalValue.toFixed(2)}`;
      const due = dateText(when());
      const iban = `PT50 ${digits(4)} ${digits(4)} ${digits(4)} ${digits(4)} ${digits(4)} ${digits(1)}`;
      const key = `invoice-${i}`;
      const text = [
        `${company}`,
        `${pick(['Rua', 'Avenida'])} ${pick(LAST)} ${1 + Math.floor(r() * 300)}, ${pick(CITIES)}`,
        '',
        `INVOICE ${inv}`,
        `Date: ${dateText(when())}`,
        `Bill to: ${ME.name}`,
        '',
        `Description                          Qty     Amount`,
        `${service.padEnd(36)} 1       €${(totalValue / 1.23).toFixed(2)}`,
        `VAT 23%                                      €${(totalValue - totalValue / 1.23).toFixed(2)}`,
        '',
        `Total due: ${total}`,
        `Payment due by ${due}.`,
        `Please transfer to IBAN ${iban}, quoting the invoice number.`,
        '',
        'Thank you for your business.',
      ].join('\n');
      docs.push({ key, via: 'file', path: `/home/alex/Documents/Invoices/${company.replace(/\W+/g, '-')}-${inv}.txt`, filename: `${company.replace(/\W+/g, '-')}-${inv}.txt`, text });
      const v = { company, service };
      ask(split, 'invoice total', ['How much is the {company} invoice?', 'What is the total due on the {company} invoice?', 'How much do I owe {company}?', 'amount of the {company} invoice', 'What did {company} charge for the {service}?', 'How much was the {service} from {company}?'], v, [total], [key]);
      ask(split, 'invoice due', ['When is the {company} invoice due?', 'By when do I have to pay {company}?', 'What is the payment deadline for {company}?', 'due date {company} invoice'], v, [due], [key]);
      ask(split, 'invoice number', ['What is the invoice number from {company}?', 'Which invoice number did {company} send?', '{company} invoice number', 'What number is on the {company} invoice?'], v, [inv], [key]);
    }

    // 5. Appointment reminder: prose with a person, a place, a date and a time.
    {
      const doctor = `Dr. ${fresh(() => pick(LAST))}`;
      const clinic = fresh(() => `${pick(CLINIC_A)} ${pick(CLINIC_B)}`);
      const what = pick(SPECIALTY);
      const at = when();
      const date = dateText(at);
      const time = timeText(at);
      const phone = `+351 21 ${digits(3)} ${digits(4)}`;
      const key = `appointment-${i}`;
      const text = [
        `${pick(GREETINGS)} ${ME.name},`,
        '',
        `This is a reminder of your ${what} appointment with ${doctor} at ${clinic} on ${date} at ${time}.`,
        `Please arrive ten minutes early and bring your health card. If you cannot attend, call us at ${phone} at least 24 hours before.`,
        '',
        `${clinic}`,
        pick(FOOTERS),
      ].join('\n');
      docs.push(email(key, { name: clinic, email: addr(clinic) }, `Appointment reminder: ${what}`, text));
      const v = { clinic, doctor, what };
      ask(split, 'appointment who', ['Who is my appointment with at {clinic}?', 'Which doctor am I seeing at {clinic}?', 'Who will I see at {clinic}?', 'doctor for my appointment at {clinic}'], v, [doctor], [key]);
      ask(split, 'appointment when', ['When is my appointment at {clinic}?', 'What time is my appointment with {doctor}?', 'When do I see {doctor}?', 'date of my appointment at {clinic}'], v, [date, time], [key]);
      ask(split, 'appointment where', ['Where is my appointment with {doctor}?', 'Where do I have to go to see {doctor}?', 'At which clinic is my appointment with {doctor}?', 'place of the appointment with {doctor}'], v, [clinic], [key]);
      ask(split, 'clinic phone', ['What number do I call to cancel at {clinic}?', 'What is the phone number of {clinic}?', 'Which number should I call to reschedule with {doctor}?', '{clinic} phone number'], v, [phone], [key]);
    }

    // 6. Invitation with a reply quoting it and a forward.
    {
      const host = person();
      const event = `${pick(EVENTS)}`;
      const occasion = `${host.split(' ')[0]}'s ${event}`;
      const venue = pick(VENUES);
      const at = when();
      const date = dateText(at);
      const item = pick(ITEMS);
      const key = `invite-${i}`;
      const original = [
        `Hi everyone,`,
        '',
        `You are all invited to my ${event}! It will be at ${venue} on ${date}, starting at ${timeText(at)}.`,
        `Please bring ${item} if you can, I will take care of the rest. Let me know by Friday if you are coming.`,
        '',
        host,
      ].join('\n');
      const hostMail = { name: host, email: addr(host) };
      docs.push(email(key, hostMail, `Invitation: ${event}`, original, { thread: { external_id: `invite-thread-${i}` } }));
      docs.push(
        email(
          `${key}-reply`,
          { name: ME.name, email: ME.email },
          `Re: Invitation: ${event}`,
          [`Count me in! See you there.`, '', `On ${dateText(at)}, ${host} wrote:`, ...original.split('\n').map((l) => `> ${l}`)].join('\n'),
          { thread: { external_id: `invite-thread-${i}` } },
        ),
      );
      const v = { host: host.split(' ')[0], occasion, event };
      ask(split, 'party where', ["Where is {occasion}?", "Where is {host}'s {event} taking place?", "What is the venue of {occasion}?", 'location of {occasion}'], v, [venue], [key]);
      ask(split, 'party bring', ['What should I bring to {occasion}?', "What did {host} ask me to bring to the {event}?", 'What do I need to take to {occasion}?', 'what to bring {occasion}'], v, [item], [key]);
      ask(split, 'party when', ['When is {occasion}?', "What date is {host}'s {event}?", 'On which day is {occasion}?', 'date of {occasion}'], v, [date], [key]);
    }

    // 7. Car service receipt.
    {
      const car = fresh(() => pick(CARS));
      const garage = fresh(() => `${pick(LAST)} Auto Service`);
      const part = pick(PARTS);
      const next = `${pick(MONTHS)} ${2027 + Math.floor(r() * 2)}`;
      const cost = money(90, 900);
      const mechanic = person();
      const key = `car-${i}`;
      const text = [
        `${pick(GREETINGS)} ${ME.name},`,
        '',
        `Your ${car} is ready for collection. During the service we replaced the ${part} and checked the brakes, lights and fluid levels.`,
        `The next service is due in ${next}. The total for today's work is ${cost}, payable on collection by card or cash.`,
        '',
        `Best regards,`,
        `${mechanic}, ${garage}`,
      ].join('\n');
      docs.push(email(key, { name: garage, email: addr(garage) }, `Your ${car} is ready`, text));
      const v = { car, garage };
      ask(split, 'car part', ['What part was replaced on the {car}?', 'What did {garage} replace on my car?', 'Which part of the {car} was changed?', 'replaced part {car} service'], v, [part], [key]);
      ask(split, 'car next service', ['When is the next service due for the {car}?', 'When does the {car} need its next service?', 'When should the {car} go back to the garage?', 'next service date {car}'], v, [next], [key]);
      ask(split, 'car cost', ['How much did the {car} service cost?', 'What did I pay {garage}?', 'How much is the bill for the {car}?', 'cost of the {car} service'], v, [cost], [key]);
      ask(split, 'car mechanic', ['Who serviced the {car}?', 'Who at {garage} wrote about my car?', 'Which mechanic worked on the {car}?', 'name of the mechanic for the {car}'], v, [mechanic], [key]);
    }

    // 8. Chat note: a short message with a code.
    {
      const friend = person();
      const code = `${digits(4)}${pick(['#', '*', ''])}`;
      const wifi = `${pick(['casa', 'home', 'flat', 'blue'])}-${letters(2).toLowerCase()}${digits(3)}`;
      const street = `${pick(['Rua', 'Calle', 'Via'])} ${pick(LAST)}`;
      const key = `chat-${i}`;
      docs.push({
        key,
        via: 'json',
        body: {
          source_type: 'chatapp',
          source_id: key,
          title: friend,
          content: {
            mime_type: 'text/plain',
            data: `the door code for the building on ${street} is ${code}, and the wifi password is ${wifi}. Keys are with the neighbour on the 2nd floor if the code doesn't work`,
          },
          content_timestamp: sentAt(),
          people: [
            { identifier: `+3519${digits(8)}`, identifier_type: 'phone', role: 'sender', display_name: friend },
            { identifier: '+351910000000', identifier_type: 'phone', role: 'recipient', display_name: ME.name },
          ],
          thread: { external_id: `chat-${friend}`, title: friend },
        },
      });
      const v = { street, friend: friend.split(' ')[0] };
      ask(split, 'door code', ['What is the door code for the building on {street}?', 'Which code opens the door on {street}?', "What's the entry code at {street}?", 'door code {street}'], v, [code.replace(/[#*]$/, '')], [key]);
      ask(split, 'wifi password', ["What is the wifi password at {street}?", "What's the wifi password {friend} sent?", 'Which wifi password did {friend} give me?', 'wifi password {street}'], v, [wifi], [key]);
    }
  }

  // Questions nothing answers: names and places no document mentions, asked the same ways.
  const none = (split: Split, list: string[], v: Record<string, string>) => ask(split, 'unanswerable', list, v, [], []);
  for (let i = 0; i < perKind * 4; i++) {
    const split: Split = i % 2 === 0 ? 'dev' : 'test';
    const kinds: [string[], () => Record<string, string>][] = [
      [['What is the {hotel} confirmation number?', 'Which confirmation number did {hotel} give me?', 'confirmation number for my stay at {hotel}', 'What booking code do I need for {hotel}?'], () => ({ hotel: fresh(() => `${pick(HOTEL_A)} ${pick(HOTEL_B)}`) })],
      [['When does my flight to {city} leave?', 'What time is my flight to {city}?', 'When do I fly to {city}?', 'departure time of the flight to {city}'], () => ({ city: fresh(() => pick(OTHER_CITIES)) })],
      [['How much is the {company} invoice?', 'What is the total due on the {company} invoice?', 'How much do I owe {company}?', 'amount of the {company} invoice'], () => ({ company: fresh(() => `${pick(LAST)} ${pick(['Glass', 'Tiles', 'Pools', 'Pianos', 'Kayaks', 'Saddlery', 'Clocks'])}`) })],
      [['Where is my appointment with {doctor}?', 'When do I see {doctor}?', 'Where do I have to go to see {doctor}?', 'What time is my appointment with {doctor}?'], () => ({ doctor: `Dr. ${fresh(() => `${pick(LAST)}-${pick(LAST)}`)}` })],
      [['When does the ferry to {island} leave?', 'What time is the boat to {island}?', 'From which pier does the {island} ferry depart?', 'ferry departure time {island}'], () => ({ island: fresh(() => `${pick(['Isla', 'Ile', 'Isola'])} ${pick(LAST)}`) })],
      [['What is my passport number?', 'What is my tax identification number?', 'When does my passport expire?', 'What is my library card number?'], () => ({})],
    ];
    const [list, make] = kinds[i % kinds.length];
    none(split, list, make());
  }
  return { docs, questions };
}
