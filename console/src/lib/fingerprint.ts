/** A WireGuard public key's fingerprint as OpenSSH writes them: `SHA256:` + unpadded base64 of SHA-256 of the 32 bytes. */
export async function keyFingerprint(publicKeyBase64: string): Promise<string> {
  const bytes = Uint8Array.from(atob(publicKeyBase64), (ch) => ch.charCodeAt(0));
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return `SHA256:${btoa(String.fromCharCode(...digest)).replace(/=+$/, '')}`;
}
