/**
 * Machine-wide unique names for namespaces, links and wireguard-go interfaces. The UAPI socket
 * directory /var/run/wireguard and the host's link names are global, and several test processes
 * (other suites, other checkouts) may run at once, so every name carries this process's pid and a
 * per-process counter. Linux interface names are at most 15 characters.
 */
let counter = 0;

/** A fresh short name: `${prefix}${pid base36}-${n base36}`, at most 15 characters for prefix <= 4. */
export function uniqueIfname(prefix: string): string {
  if (!/^[a-z]{1,4}$/.test(prefix))
    throw new Error(`interface name prefix ${prefix} must be 1-4 lowercase letters`);
  counter++;
  const name = `${prefix}${process.pid.toString(36)}-${counter.toString(36)}`;
  if (name.length > 15) throw new Error(`interface name ${name} is over 15 characters`);
  return name;
}

/** A fresh namespace name: `${prefix}-${pid}-${n}`. */
export function uniqueNetnsName(prefix: string): string {
  if (!/^[a-z][a-z0-9-]{0,30}$/.test(prefix))
    throw new Error(`namespace prefix ${prefix} must match [a-z][a-z0-9-]*`);
  counter++;
  return `${prefix}-${process.pid}-${counter}`;
}
