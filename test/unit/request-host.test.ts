/** The Host and Origin rule of src/util/request-host.ts, case by case (the HTTP tests: test/gateway/host-origin.test.ts). */
import { describe, expect, it } from 'vitest';
import { hostAllowed, hostPolicy, judgeRequest, originAllowed, parseAllowedHosts } from '../../src/util/request-host.ts';

const none = hostPolicy({ allowedHosts: [], setting: 'ALLOWED_HOSTS' });
const proxy = hostPolicy({ allowedHosts: ['memex.example.com', 'box.lan:8443', '*.tail.example', '[fd00::1]'], setting: 'ALLOWED_HOSTS' });

describe('Host', () => {
  it('answers loopback names and addresses whatever the port, and nothing that merely contains them', () => {
    for (const h of ['localhost', 'localhost:8085', 'LocalHost.', 'a.b.localhost:1', '127.0.0.1:8085', '127.1.2.3', '[::1]:8085', '[::ffff:127.0.0.1]', '192.168.1.5', undefined]) {
      expect(hostAllowed(none, h), String(h)).toBe(true);
    }
    for (const h of ['evil.example', 'localhost.evil.example', 'evillocalhost', '127.0.0.1.evil.example', 'evil.example@localhost', 'localhost/x', 'localhost:80:80', '[::1', '[zz::1]', '', ' ']) {
      expect(hostAllowed(none, h), h).toBe(false);
    }
  });

  it('answers listed names: exact, with their port only, and *.domain for names under it', () => {
    expect(hostAllowed(proxy, 'memex.example.com:9999')).toBe(true);
    expect(hostAllowed(proxy, 'box.lan:8443')).toBe(true);
    expect(hostAllowed(proxy, 'box.lan:8444')).toBe(false);
    expect(hostAllowed(proxy, 'box.lan')).toBe(false);
    expect(hostAllowed(proxy, 'a.b.tail.example')).toBe(true);
    expect(hostAllowed(proxy, 'tail.example')).toBe(false);
    expect(hostAllowed(proxy, 'nottail.example')).toBe(false);
  });

  it('answers the bound address when it is a name', () => {
    const bound = hostPolicy({ allowedHosts: [], boundHost: 'myhost.lan', setting: 'ALLOWED_HOSTS' });
    expect(hostAllowed(bound, 'myhost.lan:8085')).toBe(true);
    expect(hostAllowed(hostPolicy({ allowedHosts: [], boundHost: '0.0.0.0', setting: 'X' }), 'evil.example')).toBe(false);
  });

  it('refuses setting entries that are not names', () => {
    for (const bad of ['https://a.example', 'a.example/x', 'a b', '*', '*.', 'a.example:99999', 'user@a.example']) {
      expect(() => parseAllowedHosts([bad], 'ALLOWED_HOSTS'), bad).toThrow(/ALLOWED_HOSTS: .* is not a host name/);
    }
    expect(parseAllowedHosts(['Memex.Example.com.', '*.x.example:443'], 'S')).toEqual([
      { hostname: 'memex.example.com', port: undefined, subdomains: false },
      { hostname: 'x.example', port: '443', subdomains: true },
    ]);
  });
});

describe('Origin', () => {
  it('answers its own origin (scheme http or https, default ports as written or not) and no Origin', () => {
    expect(originAllowed(none, undefined, 'localhost:8085')).toBe(true);
    expect(originAllowed(none, 'http://localhost:8085', 'localhost:8085')).toBe(true);
    expect(originAllowed(none, 'http://localhost', 'localhost:80')).toBe(true);
    expect(originAllowed(none, 'https://memex.example.com', 'memex.example.com')).toBe(true);
    expect(originAllowed(none, 'http://[::1]:8085', '[::1]:8085')).toBe(true);
  });

  it('refuses every other origin: other ports, other names, null, other schemes', () => {
    for (const o of ['http://localhost:8086', 'http://127.0.0.1:8085', 'http://evil.example', 'null', 'file://', 'chrome-extension://abc', 'not a url']) {
      expect(originAllowed(none, o, 'localhost:8085'), o).toBe(false);
    }
  });

  it('answers listed names with their port, default ports by scheme', () => {
    expect(originAllowed(proxy, 'https://memex.example.com', '127.0.0.1:8085')).toBe(true);
    expect(originAllowed(proxy, 'https://box.lan:8443', '127.0.0.1:8085')).toBe(true);
    expect(originAllowed(proxy, 'https://box.lan', '127.0.0.1:8085')).toBe(false);
    expect(originAllowed(proxy, 'https://x.tail.example', '127.0.0.1:8085')).toBe(true);
  });

  it('judges Host before Origin: 421 for a name, 403 for a page', () => {
    expect(judgeRequest(none, { host: 'evil.example', origin: 'http://evil.example' })?.status).toBe(421);
    expect(judgeRequest(none, { host: 'localhost:8085', origin: 'http://evil.example' })).toMatchObject({ status: 403, code: 'REQUEST.ORIGIN_NOT_ALLOWED' });
    expect(judgeRequest(none, { host: 'localhost:8085', origin: 'http://localhost:8085' })).toBeNull();
    // A refusal shows what was sent, short and printable.
    expect(judgeRequest(none, { host: `${'a'.repeat(300)}.example` })?.message.length).toBeLessThan(400);
  });
});
