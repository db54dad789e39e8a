/** Files core: object store, extraction, upload meta, and the file document builder (see docs/files.md). */
export * from './object-store.ts';
export * from './extract.ts';
export * from './detect.ts';
export { decodeText } from './decode.ts';
export { OCR_IMAGE_TYPES } from './image.ts';
export { renderPdfFirstPage } from './pdf.ts';
export * from './meta.ts';
export * from './document.ts';
export { loadFilesConfig, createObjectStore, createConfiguredOcrEngine, type FilesConfig, type S3Config, type OcrConfig } from './config.ts';
