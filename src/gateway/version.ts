/** The gateway API's version (GET /v1/healthz, OpenAPI). Its own module so the CLI can read it without loading the gateway. */
export const API_VERSION = '0.2.0';
