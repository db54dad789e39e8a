/** Files core: object store, extraction, upload meta, and the file document builder (see docs/files.md). */
export * from './object-store.ts';
export * from './extract.ts';
export * from './meta.ts';
export * from './document.ts';
export { loadFilesConfig, createObjectStore, type FilesConfig, type S3Config } from './config.ts';
