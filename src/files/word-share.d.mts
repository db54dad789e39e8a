/** Below this share of word-like text, a PDF's text layer is taken as unreadable. */
export declare const UNREADABLE_BELOW: number;
/** Share (0..1) of the non-space characters of `text` that belong to word-like tokens. */
export declare function wordShare(text: string): number;
