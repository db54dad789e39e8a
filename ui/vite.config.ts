/**
 * Build of the web UI (`npm run build:ui`): Preact through Vite's own esbuild JSX transform, written to
 * dist/ui and served by the gateway (src/gateway/ui.ts). No CDN, no inline script: the page's CSP allows
 * only same-origin scripts and styles.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/',
  logLevel: 'warn',
  publicDir: false,
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // The polyfill would be an inline-free module anyway, but every browser we target has modulepreload.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
});
