import { describe, expect, it } from 'vitest';
import { ConfigError, loadServerConfig } from '../src/config/server.ts';

describe('server configuration', () => {
  it('has working defaults', () => {
    const c = loadServerConfig({});
    expect(c).toMatchObject({ port: 8085, host: '127.0.0.1', logLevel: 'info', defaultPhoneRegion: 'US' });
    expect(c.databaseUrl).toBeUndefined();
    expect(c.bodyLimitBytes).toBe(10 * 1024 * 1024);
  });

  it.each([
    [{ PORT: 'eighty' }, /PORT must be an integer/],
    [{ PORT: '70000' }, /PORT must be between/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL must be one of/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL must start with postgres/],
    [{ BODY_LIMIT: 'big' }, /BODY_LIMIT must be a size/],
    [{ DEFAULT_PHONE_REGION: 'USA' }, /two-letter/],
    [{ HOST: '0.0.0.0' }, /refusing to listen on non-loopback HOST=0.0.0.0 without AUTH_TOKEN/],
    [{ HOST: '0.0.0.0', AUTH_TOKEN: 'changeme' }, /AUTH_TOKEN is a placeholder \("changeme"\)/],
    [{ AUTH_TOKEN: 'changeme' }, /AUTH_TOKEN is a placeholder \("changeme"\)/],
    [{ ALLOWED_HOSTS: 'memex.example.com/x' }, /ALLOWED_HOSTS: "memex.example.com\/x" is not a host name/],
  ])('rejects %o with a one-line reason', (env, re) => {
    expect(() => loadServerConfig(env)).toThrowError(ConfigError);
    try {
      loadServerConfig(env);
    } catch (e) {
      expect((e as Error).message).toMatch(re);
      expect((e as Error).message).not.toContain('\n');
    }
  });

  it('allows a non-loopback host with a real token', () => {
    expect(loadServerConfig({ HOST: '0.0.0.0', AUTH_TOKEN: 's3cret-token' }).host).toBe('0.0.0.0');
  });
});
