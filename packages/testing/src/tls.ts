import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * A self-signed certificate for 127.0.0.1 and localhost, made by `openssl` (Debian's package):
 * a platform behind a customer's own certificate authority, which a robot trusts with `ca`.
 */
export function selfSignedCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-tls-'));
  try {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'),
    ], { stdio: 'pipe' });
    return { key: readFileSync(path.join(dir, 'key.pem'), 'utf8'), cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8') };
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') throw new Error('openssl is needed to make a test certificate: apt-get install openssl');
    throw err;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
