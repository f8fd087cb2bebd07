// SPDX-License-Identifier: MIT
// The bridge's failure kinds. The daemon reads the bridge's stderr and exit
// status: Unavailable (exit 69) is "the Sandbox cannot be had" and becomes
// sandbox_unavailable with the message; Usage (exit 64) is a bug in the
// caller's argv.

export const EXIT_USAGE = 64;
export const EXIT_UNAVAILABLE = 69;
export const EXIT_SOFTWARE = 70;

export class Unavailable extends Error {
  constructor(message) {
    super(message);
    this.name = "Unavailable";
  }
}

export class UsageError extends Error {
  constructor(message) {
    super(message);
    this.name = "UsageError";
  }
}

// Every SDK call is bounded: without network the gRPC layer may retry or
// wait on a connect for much longer than a caller should hang.
export function bounded(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new Unavailable(`${what}: no answer from Modal within ${Math.round(ms / 1000)} s (is api.modal.com reachable from this host?)`)),
      ms,
    );
  });
  return Promise.race([Promise.resolve(promise), timeout]).finally(() => clearTimeout(timer));
}
