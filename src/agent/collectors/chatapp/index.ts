/** Messages (chat.db) collector core: decoding, reading, document building, cursor and run loop. */
export * from './bplist.ts';
export * from './typedstream.ts';
export * from './chatdb.ts';
export * from './document.ts';
export * from './cursor.ts';
