// Minimal types for cli-progress 3 (the package ships none; @types/cli-progress is not installed).
declare module 'cli-progress' {
  interface BarOptions {
    format?: string;
    stream?: NodeJS.WritableStream;
    hideCursor?: boolean;
    [key: string]: unknown;
  }
  export class SingleBar {
    constructor(opts: BarOptions, preset?: object);
    start(total: number, start: number, payload?: Record<string, unknown>): void;
    update(value: number, payload?: Record<string, unknown>): void;
    stop(): void;
  }
  export const Presets: { shades_classic: object; legacy: object; rect: object };
  const cliProgress: { SingleBar: typeof SingleBar; Presets: typeof Presets };
  export default cliProgress;
}
