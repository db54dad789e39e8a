/**
 * sharp (libvips, a native addon) loads at its first use: it was ~0.4 s of every start's module
 * loading (issue 34), for images that arrive later if at all.
 */
import type SharpModule from 'sharp';

let loading: Promise<typeof SharpModule> | undefined;

export function loadSharp(): Promise<typeof SharpModule> {
  loading ??= import('sharp').then((m) => m.default);
  return loading;
}
